// The tools worker: network-bound tool activities (search, access, web fetch…), scaled apart.
import { workerActivities } from '../composition/queue-activities.js';
import { config } from '../infra/config.js';
import { runWorker, start } from './run-worker.js';

start(() => runWorker({ role: 'tools', workflows: false, activities: (blobs) => workerActivities('tools', config(), blobs) }), 'tools');
