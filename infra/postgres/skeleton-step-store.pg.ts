import type pg from 'pg';
import { z } from 'zod';
import type { SkeletonStepStore } from '../../activities/ports/skeleton-step-store.port.js';

const rowSchema = z.object({ workflow_id: z.string(), step: z.number().int(), blob_key: z.string(), attempt: z.number().int() });

export function createPgSkeletonStepStore(pool: pg.Pool): SkeletonStepStore {
  return {
    async record(row) {
      const result = await pool.query(
        'INSERT INTO skeleton_steps (workflow_id, step, blob_key, attempt) VALUES ($1, $2, $3, $4) ON CONFLICT (workflow_id, step) DO NOTHING',
        [row.workflowId, row.step, row.blobKey, row.attempt],
      );
      return { inserted: result.rowCount === 1 };
    },
    async list(workflowId) {
      const result = await pool.query(
        'SELECT workflow_id, step, blob_key, attempt FROM skeleton_steps WHERE workflow_id = $1 ORDER BY step',
        [workflowId],
      );
      return result.rows.map((raw) => {
        const row = rowSchema.parse(raw);
        return { workflowId: row.workflow_id, step: row.step, blobKey: row.blob_key, attempt: row.attempt };
      });
    },
  };
}
