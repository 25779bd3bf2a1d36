/**
 * The chaos suite's non-idempotent tool: every call applies a side effect to an external "ledger"
 * (a Postgres table standing for a payment, an e-mail, a ticket) and records each attempt. It declares
 * itself non-idempotent, so it must not apply an effect twice when a retry runs it again: it hands
 * the ledger the call's idempotency key, `<turn key>/<call index>` (runTurnTools gives every attempt
 * of a turn the same key), and the ledger applies a key once. Between the effect and the
 * completion it waits `effectDelayMs`, the window the suite aims kills at.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { withTransaction } from '../../infra/postgres/database.js';
import type { ToolActivities, ToolResult } from '../../workflows/contracts/tools.contract.js';

/** How long a call waits between its side effect and its completion. */
export const ledgerEffectDelayMs = 400;

/** The ledger's tables: attempts (one row per execution) and effects (one row per effect applied; no unique key, so duplicates show). */
export const ledgerSchema = `
CREATE TABLE IF NOT EXISTS chaos_tool_attempts (
  id          bigserial   PRIMARY KEY,
  effect_key  text        NOT NULL,
  pid         integer     NOT NULL,
  effect_done boolean     NOT NULL DEFAULT false,
  completed   boolean     NOT NULL DEFAULT false,
  started_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS chaos_side_effects (
  id         bigserial   PRIMARY KEY,
  effect_key text        NOT NULL,
  pid        integer     NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);`;

export function createLedgerTool(pool: pg.Pool, effectDelayMs: number): Pick<ToolActivities, 'runTools'> {
  return {
    async runTools({ key, calls }) {
      const results: ToolResult[] = [];
      for (const [index, call] of calls.entries()) {
        const effectKey = `${key}/${index}`;
        const attempt = await pool.query<{ id: string }>('INSERT INTO chaos_tool_attempts (effect_key, pid) VALUES ($1, $2) RETURNING id', [
          effectKey,
          process.pid,
        ]);
        const attemptId = attempt.rows[0]!.id;
        // The ledger applies an idempotency key once (a lock per key, then check and insert in one transaction).
        await withTransaction(pool, async (client) => {
          await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [effectKey]);
          await client.query(
            'INSERT INTO chaos_side_effects (effect_key, pid) SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM chaos_side_effects WHERE effect_key = $1)',
            [effectKey, process.pid],
          );
        });
        await pool.query('UPDATE chaos_tool_attempts SET effect_done = true WHERE id = $1', [attemptId]);
        await sleep(effectDelayMs);
        await pool.query('UPDATE chaos_tool_attempts SET completed = true WHERE id = $1', [attemptId]);
        const query = (call.input as { query?: string }).query ?? '';
        results.push({
          tool: call.tool,
          ok: true,
          invalid: false,
          observation: `ledger entry ${effectKey} for ${query}`,
          truncated: false,
          latencyMs: effectDelayMs,
          cacheHit: false,
          documentIds: [],
        });
      }
      return results;
    },
  };
}
