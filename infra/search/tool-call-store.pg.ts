/** Postgres adapter of ToolCallStore: tool_calls rows, tool_cache with expiry, per-tool percentiles. */
import type pg from 'pg';
import { z } from 'zod';
import type { ToolCallStore, ToolStats } from '../../activities/ports/tool-call-store.port.js';

const cachedSchema = z.object({ ok: z.boolean(), observation: z.string(), documentIds: z.array(z.string()) });
const statsSchema = z.object({
  tool: z.string(),
  calls: z.number().int(),
  success_rate: z.number(),
  invalid_rate: z.number(),
  cache_hit_rate: z.number(),
  p50_ms: z.number(),
  p95_ms: z.number(),
});

const STATS_SQL = `
SELECT tool, count(*)::int AS calls,
  avg(ok::int)::float8 AS success_rate, avg(invalid::int)::float8 AS invalid_rate, avg(cache_hit::int)::float8 AS cache_hit_rate,
  percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms)::float8 AS p50_ms,
  percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms)::float8 AS p95_ms
FROM tool_calls WHERE called_at >= $1 GROUP BY tool ORDER BY tool`;

/** Expired cache rows are deleted every this many writes. */
const SWEEP_EVERY = 500;

export function createPgToolCallStore(pool: pg.Pool): ToolCallStore {
  let writes = 0;
  return {
    async record(rows) {
      if (rows.length === 0) return;
      await pool.query(
        `INSERT INTO tool_calls (tool, turn_key, call_index, ok, invalid, cache_hit, latency_ms)
         SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::bool[], $5::bool[], $6::bool[], $7::float8[])
         ON CONFLICT (turn_key, call_index) DO NOTHING`,
        [
          rows.map((r) => r.tool),
          rows.map((r) => r.turnKey),
          rows.map((r) => r.callIndex),
          rows.map((r) => r.ok),
          rows.map((r) => r.invalid),
          rows.map((r) => r.cacheHit),
          rows.map((r) => r.latencyMs),
        ],
      );
    },
    async cacheGet(tool, inputKey) {
      const result = await pool.query('SELECT result FROM tool_cache WHERE tool = $1 AND input_key = $2 AND expires_at > now()', [
        tool,
        inputKey,
      ]);
      if (result.rows.length === 0) return null;
      const parsed = cachedSchema.safeParse((result.rows[0] as { result: unknown }).result);
      return parsed.success ? parsed.data : null;
    },
    async cachePut(tool, inputKey, value, ttlMs) {
      await pool.query(
        `INSERT INTO tool_cache (tool, input_key, result, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))
         ON CONFLICT (tool, input_key) DO UPDATE SET result = EXCLUDED.result, expires_at = EXCLUDED.expires_at`,
        [tool, inputKey, JSON.stringify(value), ttlMs / 1000],
      );
      writes += 1;
      if (writes % SWEEP_EVERY === 0) await pool.query('DELETE FROM tool_cache WHERE expires_at < now()');
    },
    async stats(since) {
      const result = await pool.query(STATS_SQL, [since ?? new Date(0)]);
      return result.rows.map((raw): ToolStats => {
        const row = statsSchema.parse(raw);
        return {
          tool: row.tool,
          calls: row.calls,
          successRate: row.success_rate,
          invalidRate: row.invalid_rate,
          cacheHitRate: row.cache_hit_rate,
          p50Ms: row.p50_ms,
          p95Ms: row.p95_ms,
        };
      });
    },
  };
}
