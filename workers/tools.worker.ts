// The tools worker: network-bound tool activities (search, access, web fetch…), scaled apart.
import { createHealthActivities } from '../activities/health.activities.js';
import { runWorker, start } from './run-worker.js';

start(() => runWorker({
  role: 'tools',
  workflows: false,
  activities: async () => ({ activities: createHealthActivities('tools') }),
}), 'tools');
