// The gpu-train worker: drives the PyTorch engine in gpu/engine, one training job at a time.
import { createHealthActivities } from '../activities/health.activities.js';
import { createEngineActivities } from '../gpu/train/engine.activities.js';
import { config } from '../infra/config.js';
import { enginePython } from '../infra/services/binaries.js';
import { runWorker, start } from './run-worker.js';

start(() => runWorker({
  role: 'gpu-train',
  workflows: false,
  activities: async () => ({
    activities: { ...createHealthActivities('gpu-train'), ...createEngineActivities({ python: enginePython(config().toolsDir) }) },
  }),
  options: { maxConcurrentActivityTaskExecutions: 1 },
}), 'gpu-train');
