// The agent worker: workflows (trajectory, learner, warm start, skeleton…) and their storage activities
// (composition/queue-activities.ts).
import { workerActivities } from '../composition/queue-activities.js';
import { config } from '../infra/config.js';
import { runWorker, start } from './run-worker.js';

start(() => runWorker({ role: 'agent', workflows: true, activities: (blobs) => workerActivities('agent', config(), blobs) }), 'agent');
