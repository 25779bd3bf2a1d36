// The gpu-train worker: drives the PyTorch engine in gpu/engine, one training job at a time.
import { createHealthActivities } from '../activities/health.activities.js';
import { createEngineActivities } from '../gpu/train/engine.activities.js';
import { createTrainActivities } from '../gpu/train/train-step.activities.js';
import { config } from '../infra/config.js';
import { createPool } from '../infra/postgres/database.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { enginePython } from '../infra/services/binaries.js';
import { runWorker, start } from './run-worker.js';

start(() => runWorker({
  role: 'gpu-train',
  workflows: false,
  async activities(blobs) {
    const settings = config();
    const python = enginePython(settings.toolsDir);
    const pool = createPool(settings.postgres.url, 4);
    return {
      activities: {
        ...createHealthActivities('gpu-train'),
        ...createEngineActivities({ python }),
        ...createTrainActivities({ blobs, versions: createPgPolicyVersionStore(pool), trajectories: createPgTrajectoryStore(pool), python, home: settings.home }),
      },
      close: () => pool.end(),
    };
  },
  options: { maxConcurrentActivityTaskExecutions: 1 },
}), 'gpu-train');
