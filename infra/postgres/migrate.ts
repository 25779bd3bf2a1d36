/**
 * Versioned migrations: infra/postgres/migrations/NNNN_name.sql, applied in order, each in its own
 * transaction, under an advisory lock so concurrent `up`s never race.
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { repoRoot } from '../paths.js';
import { withTransaction } from './database.js';

const MIGRATIONS_DIR = path.join(repoRoot, 'infra', 'postgres', 'migrations');
const LOCK_KEY = 7_233_001;

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({ version: Number(file.slice(0, 4)), name: file.slice(5, -4), sql: fs.readFileSync(path.join(dir, file), 'utf8') }));
}

/** Apply pending migrations; returns the versions applied now. */
export async function migrate(databaseUrl: string, dir = MIGRATIONS_DIR): Promise<number[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((row) => row.version));
    for (const migration of listMigrations(dir)) {
      if (done.has(migration.version)) continue;
      await withTransaction(client, async () => {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      }).catch((error: unknown) => {
        throw new Error(`migration ${migration.version}_${migration.name} failed: ${(error as Error).message}`);
      });
      applied.push(migration.version);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
  return applied;
}
