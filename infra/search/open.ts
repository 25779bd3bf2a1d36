/** Opens the database the search commands use: applies pending migrations first, so a fresh database works. */
import pg from 'pg';
import type { Config } from '../config.js';
import { createPool } from '../postgres/database.js';
import { migrate } from '../postgres/migrate.js';

export async function openSearchDatabase(settings: Config, connections = 4): Promise<pg.Pool> {
  await migrate(settings.postgres.url);
  return createPool(settings.postgres.url, connections);
}

/**
 * A pool whose tables live in their own Postgres schema (created and migrated on first use): for
 * benchmarks and tests that must neither see nor touch the user's corpus.
 */
export async function openSchemaPool(databaseUrl: string, schema: string, connections = 10): Promise<pg.Pool> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`schema name "${schema}" must be lowercase letters, digits and underscores`);
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`).finally(() => admin.end());
  const url = new URL(databaseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  await migrate(url.toString());
  return createPool(url.toString(), connections);
}

/** Drops a schema made by openSchemaPool. */
export async function dropSchema(databaseUrl: string, schema: string): Promise<void> {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).finally(() => admin.end());
}
