/**
 * ReadOnlySql over Postgres. What a query may do is decided by the database: the pool must connect
 * as a role without write rights (migration 0085 creates `longhaul_sql_reader`, which can SELECT
 * from schema `sql_tool` only), and the adapter refuses, before the first query, a role that is a
 * superuser or may create objects in the database. Each query also runs in a READ ONLY transaction
 * with a statement timeout and a row limit; no query text is inspected.
 */
import type pg from 'pg';
import type { ReadOnlySql } from '../../activities/ports/search.port.js';
import { withTransaction } from '../postgres/database.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

export function createPgReadOnlySql(pool: pg.Pool, options: { maxRows?: number; timeoutMs?: number } = {}): ReadOnlySql {
  const maxRows = options.maxRows ?? 50;
  const timeoutMs = options.timeoutMs ?? 5000;
  let checked: Promise<void> | null = null;
  return {
    async query(sql) {
      checked ??= checkRole(pool).catch((error: unknown) => {
        checked = null;
        throw error;
      });
      await checked;
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

/** Refuses a connection whose role could write: the read-only promise rests on the role. */
async function checkRole(pool: pg.Pool): Promise<void> {
  const { rows } = await pool.query<{ role: string; superuser: boolean; can_create: boolean }>(
    `SELECT current_user AS role, r.rolsuper AS superuser, has_database_privilege(current_user, current_database(), 'CREATE') AS can_create
       FROM pg_roles r WHERE r.rolname = current_user`,
  );
  const row = rows[0];
  if (!row || row.superuser || row.can_create)
    throw new LonghaulError(
      errorTypes.invalidInput,
      `LONGHAUL_SQL_TOOL_URL connects as role "${row?.role ?? '?'}", which ${row?.superuser ? 'is a superuser' : 'may create objects'}; the sql tool needs a read-only role. Use postgres://longhaul_sql_reader@…/longhaul (created by migration 0085, SELECT on schema sql_tool only), see docs/DEPLOY.md.`,
    );
}
