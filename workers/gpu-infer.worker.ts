// The gpu-infer worker: policy inference (the local ONNX policy, or an OpenAI-compatible server per
// LONGHAUL_POLICY_BACKEND); one process holds the model, opened on the first generation.
import { createHealthActivities } from '../activities/health.activities.js';
import { createPolicyActivities } from '../activities/policy.activities.js';
import { createGenerateTurnActivities } from '../activities/agent/agent-turn.activities.js';
import { config } from '../infra/config.js';
import { createPool } from '../infra/postgres/database.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { createConfiguredBackend, lazyBackend } from '../gpu/infer/policy-backend.js';
import { runWorker, start } from './run-worker.js';

start(() => runWorker({
  role: 'gpu-infer',
  workflows: false,
  activities: async (blobs) => {
    const settings = config();
    const pool = createPool(settings.postgres.url, 2);
    const versions = createPgPolicyVersionStore(pool);
    const backend = lazyBackend(() => createConfiguredBackend(settings, { blobs, versions }), settings.policy.backend);
    return {
      activities: {
        ...createHealthActivities('gpu-infer'),
        ...createPolicyActivities({ backend, blobs }),
        ...createGenerateTurnActivities({ backend, blobs }),
      },
      close: async () => {
        await backend.close();
        await pool.end();
      },
    };
  },
}), 'gpu-infer');
