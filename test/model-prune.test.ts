/**
 * `longhaul model prune` against the real registry and S3: a dry run lists and deletes nothing; with
 * --yes the files of intermediate trained versions are deleted (a prefix a kept fork reads stays),
 * the rows stay marked pruned, loading one is refused by name, and a second prune finds nothing.
 * Versions are global to the test database: the command is narrowed to this file's range.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import type { PolicyVersionRow } from '../activities/ports/policy-version-store.port.js';
import { materializePolicyVersion } from '../gpu/infer/policy-store.js';
import { repoRoot } from '../infra/paths.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';

const run = promisify(execFile);
const cli = path.join(repoRoot, 'dist', 'cli', 'main.js');
let context: TestContext;
const base = 4_000_000 + 10 * Math.floor(Math.random() * 100_000);
const runId = `prune-${base}`;
const bulkBytes = 48 * 2 ** 20; // large beside what a concurrently running test file writes meanwhile

before(async () => {
  context = await openContext(uniquePrefix('prune'));
  const versions = createPgPolicyVersionStore(context.pool);
  const register = async (version: number, training: boolean, prefix = `policies/${runId}/v${version}/`) => {
    // Real bulk for the first pruned version, so that the blob store's compaction has bytes to return.
    const weights = version === base + 1 ? Buffer.alloc(bulkBytes, 7) : Buffer.from(`weights of v${version}`);
    await context.blobs.put(`${prefix}model.safetensors`, weights);
    const row: PolicyVersionRow = {
      version,
      name: 'm',
      blobPrefix: prefix,
      files: [{ name: 'model.safetensors', bytes: weights.length, sha256: 'x' }],
      manifest: training ? { training: { runId, step: version - base, kind: 'rl', baseVersion: version - 1, metrics: {} } } : {},
      parentVersion: version === base ? null : version - 1,
    };
    assert.equal((await versions.register(row)).inserted, true);
  };
  await register(base, false, `policies/${runId}/base/`);
  for (const version of [base + 1, base + 2, base + 3, base + 4]) await register(version, true);
  // An evaluation measured base + 3; its summary is of no schema prune knows (a row of an older build).
  await context.pool.query(
    `INSERT INTO evaluation_results (result_id, dataset, dataset_version, policy_version, k, questions, summary, result_key)
     VALUES ($1, 'd', 'v', $2, 1, 1, '{}', 'k')`,
    [`${runId}-eval`, base + 3],
  );
  // A fork of base + 2: untrained, reads base + 2's files.
  await context.blobs.put(`policies/${runId}/v${base + 2}/model.safetensors`, `weights of v${base + 2}`);
  assert.equal(
    (
      await versions.register({
        version: base + 5,
        name: 'm',
        blobPrefix: `policies/${runId}/v${base + 2}/`,
        files: [{ name: 'model.safetensors', bytes: `weights of v${base + 2}`.length, sha256: 'x' }],
        manifest: { forkedFrom: base + 2 },
        parentVersion: base + 2,
      })
    ).inserted,
    true,
  );
});
after(() => context.close());

async function prune(
  ...args: string[]
): Promise<{ dryRun: boolean; pruned: number[]; kept: { version: number; reason: string }[]; reclaimedBytes: number | null }> {
  const { stdout } = await run(
    process.execPath,
    [cli, 'model', 'prune', `--versions=${base}-${base + 5}`, '--keep-last=0', '--json', ...args],
    {
      timeout: 120_000,
    },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as never;
}

test('model prune deletes the files of intermediate versions, keeps what is needed, and refuses to load a pruned one', async () => {
  const exists = (version: number) => context.blobs.exists(`policies/${runId}/v${version}/model.safetensors`);
  const dry = await prune();
  assert.equal(dry.dryRun, true);
  assert.deepEqual(dry.pruned, [base + 1, base + 2]);
  assert.deepEqual(
    dry.kept.map((kept) => [kept.version - base, kept.reason]),
    [
      [0, 'untrained'],
      [3, 'evaluated'],
      [4, 'last of its run'],
      [5, 'untrained'],
    ],
  );
  assert.equal(await exists(base + 1), true, 'a dry run deletes nothing');

  assert.equal(dry.reclaimedBytes, null, 'a dry run compacts nothing');

  const done = await prune('--yes');
  assert.deepEqual([done.dryRun, done.pruned], [false, [base + 1, base + 2]]);
  // The embedded SeaweedFS keeps deleted bytes until a vacuum: --yes compacts, and the disk shrinks.
  assert.ok(
    done.reclaimedBytes !== null && done.reclaimedBytes >= bulkBytes / 2,
    `the disk got back ${done.reclaimedBytes} bytes of the ${bulkBytes} deleted`,
  );
  assert.deepEqual(await Promise.all([1, 2, 3, 4].map((offset) => exists(base + offset))), [false, true, true, true]);
  const versions = createPgPolicyVersionStore(context.pool);
  const row = await versions.get(base + 1);
  assert.ok(row?.prunedAt instanceof Date, 'the row stays, marked');
  assert.equal((await versions.get(base + 4))?.prunedAt, null);
  const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-prune-'));
  try {
    await assert.rejects(
      materializePolicyVersion({ blobs: context.blobs, versions, cacheDir, version: base + 1 }),
      new RegExp(`^LonghaulError: version: policy version ${base + 1} was pruned on `),
    );
  } finally {
    fs.rmSync(cacheDir, { recursive: true, force: true });
  }
  assert.deepEqual((await prune('--yes')).pruned, [], 'nothing left to prune');
});
