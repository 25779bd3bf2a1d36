// The tools worker: network-bound tool activities (search, access, web fetch…), scaled apart.
import { createHealthActivities } from '../activities/health.activities.js';
import { createToolActivities } from '../activities/tools/run-tools.activities.js';
import { createTurnToolActivities } from '../activities/agent/agent-turn.activities.js';
import { config } from '../infra/config.js';
import { openSearchDatabase } from '../infra/search/open.js';
import { createPgToolCallStore } from '../infra/search/tool-call-store.pg.js';
import { buildToolRegistry } from '../composition/tool-registry.js';
import { runWorker, start } from './run-worker.js';

start(() => runWorker({
  role: 'tools',
  workflows: false,
  async activities(blobs) {
    const settings = config();
    const pool = await openSearchDatabase(settings, 8);
    const tools = buildToolRegistry(settings, pool);
    const toolActivities = createToolActivities({ registry: tools.registry, store: createPgToolCallStore(pool), cacheTtlMs: settings.tools.cacheTtlSeconds * 1000 });
    return {
      activities: { ...createHealthActivities('tools'), ...toolActivities, ...createTurnToolActivities({ blobs, tools: toolActivities }) },
      close: async () => { await tools.close(); await pool.end(); },
    };
  },
}), 'tools');
