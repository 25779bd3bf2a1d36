import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';
import { createPgSkeletonStepStore } from '../infra/postgres/skeleton-step-store.pg.js';
import { listMigrations, migrate } from '../infra/postgres/migrate.js';
import { openContext, uniquePrefix } from './helpers/stack.js';

test('the S3 blob store writes, lists, reads and deletes real objects', async () => {
  const prefix = uniquePrefix('blobs');
  const context = await openContext(prefix);
  try {
    await context.blobs.put(`${prefix}/b`, 'two');
    await context.blobs.put(`${prefix}/a`, new Uint8Array([1, 2, 3]));
    assert.deepEqual(await context.blobs.list(`${prefix}/`), [`${prefix}/a`, `${prefix}/b`]);
    assert.deepEqual([...(await context.blobs.get(`${prefix}/a`))], [1, 2, 3]);
    assert.equal((await context.blobs.get(`${prefix}/b`)).toString(), 'two');
    assert.equal(await context.blobs.exists(`${prefix}/missing`), false);
    await assert.rejects(
      context.blobs.get(`${prefix}/missing`),
      (error: unknown) =>
        error instanceof LonghaulError && error.code === errorTypes.notFound && error.message === `blob not found: ${prefix}/missing`,
    );
    await context.blobs.delete(`${prefix}/a`);
    assert.equal(await context.blobs.exists(`${prefix}/a`), false);
  } finally {
    await context.close();
  }
});

test('migrations are versioned and applying them again changes nothing', async () => {
  const context = await openContext(uniquePrefix('migrate'));
  try {
    assert.deepEqual(await migrate(context.config.postgres.url), []);
    const { rows } = await context.pool.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    assert.deepEqual(
      rows.map((row) => row.version),
      listMigrations().map((migration) => migration.version),
    );
  } finally {
    await context.close();
  }
});

test('a step row is written once per (workflow, step), however often it is retried', async () => {
  const prefix = uniquePrefix('rows');
  const context = await openContext(prefix);
  try {
    const store = createPgSkeletonStepStore(context.pool);
    assert.deepEqual(await store.record({ workflowId: prefix, step: 0, blobKey: 'k', attempt: 1 }), { inserted: true });
    assert.deepEqual(await store.record({ workflowId: prefix, step: 0, blobKey: 'k', attempt: 2 }), { inserted: false });
    const rows = await store.list(prefix);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.attempt, 1);
  } finally {
    await context.close();
  }
});
