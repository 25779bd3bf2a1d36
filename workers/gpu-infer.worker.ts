// The gpu-infer worker: policy inference (the local ONNX policy); one process holds the model.
import { createHealthActivities } from '../activities/health.activities.js';
import { runWorker, start } from './run-worker.js';

start(() => runWorker({
  role: 'gpu-infer',
  workflows: false,
  activities: async () => ({ activities: createHealthActivities('gpu-infer') }),
}), 'gpu-infer');
