// The gpu-infer worker: policy inference (the local ONNX policy, or an OpenAI-compatible server per
// LONGHAUL_POLICY_BACKEND); one process holds the model, opened on the first generation, and
// switches to each version the learner trains through the LONGHAUL_WEIGHT_SYNC adapter.
import { workerActivities } from '../composition/queue-activities.js';
import { config } from '../infra/config.js';
import { runWorker, start } from './run-worker.js';

start(
  () => runWorker({ role: 'gpu-infer', workflows: false, activities: (blobs) => workerActivities('gpu-infer', config(), blobs) }),
  'gpu-infer',
);
