/** Postgres adapter of FrozenObservationStore: evaluation_observations, written once per key. */
import type pg from 'pg';
import type { FrozenObservationKey, FrozenObservationStore } from '../../activities/ports/frozen-observation-store.port.js';
import type { ToolResult } from '../../workflows/contracts/tools.contract.js';

const keyColumns = 'scope = $1 AND tool = $2 AND input_key = $3 AND corpus_version = $4';
const keyValues = (key: FrozenObservationKey) => [key.scope, key.tool, key.inputKey, key.corpusVersion];

export function createPgFrozenObservationStore(pool: pg.Pool): FrozenObservationStore {
  async function get(key: FrozenObservationKey): Promise<ToolResult | null> {
    const result = await pool.query<{ result: ToolResult }>(
      `SELECT result FROM evaluation_observations WHERE ${keyColumns}`,
      keyValues(key),
    );
    return result.rows[0]?.result ?? null;
  }
  return {
    get,
    async putIfAbsent(key, value) {
      await pool.query(
        `INSERT INTO evaluation_observations (scope, tool, input_key, corpus_version, result) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT DO NOTHING`,
        [...keyValues(key), JSON.stringify(value)],
      );
      const stored = await get(key);
      if (!stored)
        throw new Error(`evaluation_observations: the row of ${key.tool} ${key.inputKey.slice(0, 80)} vanished after its insert`);
      return stored;
    },
    async count(scope) {
      const result = await pool.query<{ count: number }>('SELECT count(*)::int AS count FROM evaluation_observations WHERE scope = $1', [
        scope,
      ]);
      return result.rows[0]?.count ?? 0;
    },
  };
}
