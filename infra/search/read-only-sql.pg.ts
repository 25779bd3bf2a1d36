/** ReadOnlySql over Postgres: each query runs in a READ ONLY transaction with a statement timeout and a row limit. */
import type pg from 'pg';
import type { ReadOnlySql } from '../../activities/ports/search.port.js';
import { withTransaction } from '../postgres/database.js';

export function createPgReadOnlySql(pool: pg.Pool, options: { maxRows?: number; timeoutMs?: number } = {}): ReadOnlySql {
  const maxRows = options.maxRows ?? 50;
  const timeoutMs = options.timeoutMs ?? 5000;
  return {
    async query(sql) {
      const result = await withTransaction(
        pool,
        async (client) => {
          await client.query(`SET LOCAL statement_timeout = ${Math.floor(timeoutMs)}`);
          return client.query({ text: sql, rowMode: 'array' });
        },
        { readOnly: true },
      );
      const rows = result.rows as unknown[][];
      return { columns: result.fields.map((field) => field.name), rows: rows.slice(0, maxRows), cut: rows.length > maxRows };
    },
  };
}
