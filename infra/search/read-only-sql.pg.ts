/** ReadOnlySql over Postgres: each query runs in a READ ONLY transaction with a statement timeout and a row limit. */
import type pg from 'pg';
import type { ReadOnlySql } from '../../activities/ports/search.port.js';

export function createPgReadOnlySql(pool: pg.Pool, options: { maxRows?: number; timeoutMs?: number } = {}): ReadOnlySql {
  const maxRows = options.maxRows ?? 50;
  const timeoutMs = options.timeoutMs ?? 5000;
  return {
    async query(sql) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN TRANSACTION READ ONLY');
        await client.query(`SET LOCAL statement_timeout = ${Math.floor(timeoutMs)}`);
        const result = await client.query({ text: sql, rowMode: 'array' });
        await client.query('ROLLBACK');
        const rows = (result.rows as unknown[][]);
        return { columns: result.fields.map((field) => field.name), rows: rows.slice(0, maxRows), cut: rows.length > maxRows };
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
  };
}
