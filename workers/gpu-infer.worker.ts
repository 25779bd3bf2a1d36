// The gpu-infer worker: policy inference (the local ONNX policy, or an OpenAI-compatible server per
// LONGHAUL_POLICY_BACKEND); one process holds the model, opened on the first generation, and
// switches to each version the learner trains through the LONGHAUL_WEIGHT_SYNC adapter.
import { createHealthActivities } from '../activities/health.activities.js';
import { createPolicyActivities } from '../activities/policy.activities.js';
import { createGenerateTurnActivities } from '../activities/agent/agent-turn.activities.js';
import { createWeightSyncActivities } from '../activities/weight-sync.activities.js';
import { config } from '../infra/config.js';
import { createWeightSync } from '../infra/inference/weight-sync.js';
import { createPool } from '../infra/postgres/database.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { createConfiguredBackend, lazyBackend, versionCacheDir } from '../composition/policy-backend.js';
import { materializePolicyVersion } from '../gpu/infer/policy-store.js';
import { runWorker, start } from './run-worker.js';

start(() => runWorker({
  role: 'gpu-infer',
  workflows: false,
  activities: async (blobs) => {
    const settings = config();
    const pool = createPool(settings.postgres.url, 2);
    const versions = createPgPolicyVersionStore(pool);
    const backend = lazyBackend((version) => createConfiguredBackend(settings, { blobs, versions }, version), settings.policy.backend);
    const weightSync = createWeightSync(settings.weightSync, {
      local: backend, backend: settings.policy.backend, apiKey: settings.policy.openai.apiKey,
      folderOf: async (version) => (await materializePolicyVersion({ blobs, versions, cacheDir: versionCacheDir(settings), version })).dir,
    });
    return {
      activities: {
        ...createHealthActivities('gpu-infer'),
        ...createPolicyActivities({ backend, blobs }),
        ...createGenerateTurnActivities({ backend, blobs }),
        ...createWeightSyncActivities({ weightSync }),
      },
      close: async () => {
        await backend.close();
        await pool.end();
      },
    };
  },
}), 'gpu-infer');
