// The agent worker: workflows (trajectory, synthesis, learner, benchmark) and their storage activities.
import { createSkeletonActivities } from '../activities/skeleton.activities.js';
import { createHealthActivities } from '../activities/health.activities.js';
import { config } from '../infra/config.js';
import { createPool } from '../infra/postgres/database.js';
import { createPgSkeletonStepStore } from '../infra/postgres/skeleton-step-store.pg.js';
import { runWorker, start } from './run-worker.js';

start(() => runWorker({
  role: 'agent',
  workflows: true,
  async activities(blobs) {
    const pool = createPool(config().postgres.url);
    return {
      activities: { ...createHealthActivities('agent'), ...createSkeletonActivities({ blobs, steps: createPgSkeletonStepStore(pool) }) },
      close: () => pool.end(),
    };
  },
}), 'agent');
