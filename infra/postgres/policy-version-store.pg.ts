import type pg from 'pg';
import { z } from 'zod';
import type { PolicyVersionRow, PolicyVersionStore } from '../../activities/ports/policy-version-store.port.js';

const rowSchema = z.object({
  version: z.number().int(),
  name: z.string(),
  blob_prefix: z.string(),
  files: z.array(z.object({ name: z.string(), bytes: z.number().int(), sha256: z.string() })),
  manifest: z.record(z.string(), z.unknown()),
  parent_version: z.number().int().nullable(),
  created_at: z.date(),
  pruned_at: z.date().nullable(),
});

function toRow(raw: unknown): PolicyVersionRow {
  const row = rowSchema.parse(raw);
  return {
    version: row.version,
    name: row.name,
    blobPrefix: row.blob_prefix,
    files: row.files,
    manifest: row.manifest,
    parentVersion: row.parent_version,
    createdAt: row.created_at,
    prunedAt: row.pruned_at,
  };
}

const columns = 'version, name, blob_prefix, files, manifest, parent_version, created_at, pruned_at';

export function createPgPolicyVersionStore(pool: pg.Pool): PolicyVersionStore {
  return {
    async register(row) {
      const result = await pool.query(
        'INSERT INTO policy_versions (version, name, blob_prefix, files, manifest, parent_version) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (version) DO NOTHING',
        [row.version, row.name, row.blobPrefix, JSON.stringify(row.files), JSON.stringify(row.manifest), row.parentVersion],
      );
      return { inserted: result.rowCount === 1 };
    },
    async get(version) {
      const result = await pool.query(`SELECT ${columns} FROM policy_versions WHERE version = $1`, [version]);
      return result.rows[0] === undefined ? undefined : toRow(result.rows[0]);
    },
    async latest() {
      const result = await pool.query(`SELECT ${columns} FROM policy_versions ORDER BY version DESC LIMIT 1`);
      return result.rows[0] === undefined ? undefined : toRow(result.rows[0]);
    },
    async list(range = {}) {
      const result = await pool.query(`SELECT ${columns} FROM policy_versions WHERE version BETWEEN $1 AND $2 ORDER BY version`, [
        range.from ?? 0,
        range.to ?? 2 ** 31 - 1,
      ]);
      return result.rows.map(toRow);
    },
    async markPruned(version) {
      await pool.query('UPDATE policy_versions SET pruned_at = now() WHERE version = $1 AND pruned_at IS NULL', [version]);
    },
  };
}
