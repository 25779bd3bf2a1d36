import type pg from 'pg';
import { z } from 'zod';
import type { TrajectoryStore } from '../../activities/ports/trajectory-store.port.js';

const rowSchema = z.object({
  trajectory_id: z.string(),
  run_id: z.string(),
  dataset: z.string(),
  question_id: z.string(),
  question: z.string(),
  answer: z.string().nullable(),
  gold: z.array(z.string()),
  reward: z.number(),
  reward_parts: z.record(z.string(), z.number()),
  stop_reason: z.string(),
  turns: z.number().int(),
  invalid_steps: z.number().int(),
  generated_tokens: z.number().int(),
  versions: z.array(z.number().int()),
  record_key: z.string(),
});

export function createPgTrajectoryStore(pool: pg.Pool): TrajectoryStore {
  return {
    async insert(row) {
      const result = await pool.query(
        `INSERT INTO trajectories (trajectory_id, run_id, dataset, question_id, question, answer, gold, reward, reward_parts, stop_reason,
           turns, invalid_steps, generated_tokens, versions, record_key)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15) ON CONFLICT (trajectory_id) DO NOTHING`,
        [
          row.trajectoryId,
          row.runId,
          row.dataset,
          row.questionId,
          row.question,
          row.answer,
          JSON.stringify(row.gold),
          row.reward,
          JSON.stringify(row.rewardParts),
          row.stopReason,
          row.turns,
          row.invalidSteps,
          row.generatedTokens,
          row.versions,
          row.recordKey,
        ],
      );
      return result.rowCount === 1;
    },
    async get(trajectoryId) {
      const result = await pool.query('SELECT * FROM trajectories WHERE trajectory_id = $1', [trajectoryId]);
      if (result.rowCount === 0) return undefined;
      const row = rowSchema.parse(result.rows[0]);
      return {
        trajectoryId: row.trajectory_id,
        runId: row.run_id,
        dataset: row.dataset,
        questionId: row.question_id,
        question: row.question,
        answer: row.answer,
        gold: row.gold,
        reward: row.reward,
        rewardParts: row.reward_parts,
        stopReason: row.stop_reason,
        turns: row.turns,
        invalidSteps: row.invalid_steps,
        generatedTokens: row.generated_tokens,
        versions: row.versions,
        recordKey: row.record_key,
      };
    },
  };
}

/** The question ids the trajectories of these runs were asked (as stored: a curriculum group's carry `/g<n>`). */
export async function questionIdsOfRuns(pool: pg.Pool, runIds: readonly string[]): Promise<string[]> {
  if (runIds.length === 0) return [];
  const result = await pool.query<{ question_id: string }>(
    'SELECT DISTINCT question_id FROM trajectories WHERE run_id = ANY($1) ORDER BY question_id',
    [runIds],
  );
  return result.rows.map((row) => row.question_id);
}
