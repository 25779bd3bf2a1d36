// The agent worker: workflows (trajectory, learner, skeleton…) and their storage activities.
import { createSkeletonActivities } from '../activities/skeleton.activities.js';
import { createHealthActivities } from '../activities/health.activities.js';
import { createFinishActivities } from '../activities/agent/finish.activities.js';
import { createBufferActivities } from '../activities/buffer.activities.js';
import { createLearnerActivities } from '../activities/learner.activities.js';
import { createPgTrajectoryBuffer } from '../infra/postgres/buffer.pg.js';
import { config } from '../infra/config.js';
import { configuredJudge } from '../infra/inference/openai.backend.js';
import { createPool } from '../infra/postgres/database.js';
import { createPgSkeletonStepStore } from '../infra/postgres/skeleton-step-store.pg.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { runWorker, start } from './run-worker.js';

start(() => runWorker({
  role: 'agent',
  workflows: true,
  async activities(blobs) {
    const pool = createPool(config().postgres.url);
    return {
      activities: {
        ...createHealthActivities('agent'),
        ...createSkeletonActivities({ blobs, steps: createPgSkeletonStepStore(pool) }),
        ...createFinishActivities({ blobs, trajectories: createPgTrajectoryStore(pool), judge: configuredJudge(config().judge) }),
        ...createLearnerActivities({ blobs }),
        ...createBufferActivities({ buffer: createPgTrajectoryBuffer(pool) }),
      },
      close: () => pool.end(),
    };
  },
}), 'agent');
