// The gpu-train worker: drives the PyTorch engine in gpu/engine, one training job at a time.
import { workerActivities } from '../composition/queue-activities.js';
import { config } from '../infra/config.js';
import { runWorker, start } from './run-worker.js';

start(
  () =>
    runWorker({
      role: 'gpu-train',
      workflows: false,
      activities: (blobs) => workerActivities('gpu-train', config(), blobs),
      options: { maxConcurrentActivityTaskExecutions: 1 },
    }),
  'gpu-train',
);
