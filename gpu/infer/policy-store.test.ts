import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PolicyVersionRow, PolicyVersionStore } from '../../activities/ports/policy-version-store.port.js';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import { fetchedFiles, materializePolicyVersion, runStartVersion, servedFiles } from './policy-store.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

const unusedBlobs: BlobStore = new Proxy({} as BlobStore, {
  get: () => () => Promise.reject(new Error('a pruned version must not touch the blob store')),
});

/** The registry's contract in memory (insert once, highest is latest); Postgres is covered by policy.test. */
function memoryStore(rows: PolicyVersionRow[]): PolicyVersionStore & { rows: PolicyVersionRow[] } {
  return {
    rows,
    async register(row) {
      if (rows.some((existing) => existing.version === row.version)) return { inserted: false };
      rows.push(row);
      return { inserted: true };
    },
    async get(version) {
      return rows.find((row) => row.version === version);
    },
    async latest() {
      return [...rows].sort((a, b) => b.version - a.version)[0];
    },
    async list(range = {}) {
      return rows
        .filter((row) => row.version >= (range.from ?? 0) && row.version <= (range.to ?? Infinity))
        .sort((a, b) => a.version - b.version);
    },
    async markPruned(version) {
      const index = rows.findIndex((row) => row.version === version);
      if (index >= 0 && !rows[index]!.prunedAt) rows[index] = { ...rows[index]!, prunedAt: new Date() };
    },
  };
}

const row = (version: number, parentVersion: number | null, training?: object): PolicyVersionRow => ({
  version,
  name: 'm',
  blobPrefix: `policies/v${version}/`,
  files: [{ name: 'model.onnx', bytes: 1, sha256: String(version) }],
  manifest: { name: 'm', ...(training ? { training } : {}) },
  parentVersion,
});

test('a run starts from the latest version, or from a fork of an older one registered as latest + 1', async () => {
  const store = memoryStore([row(0, null), row(1, 0, { runId: 'r', step: 0, kind: 'rl' }), row(2, 1, { runId: 'r', step: 1, kind: 'rl' })]);
  assert.deepEqual(await runStartVersion(store), { version: 2, forkedFrom: null });
  assert.deepEqual(await runStartVersion(store, 2), { version: 2, forkedFrom: null });
  assert.deepEqual(await runStartVersion(store, 1), { version: 3, forkedFrom: 1 });
  const fork = (await store.get(3))!;
  assert.equal(fork.blobPrefix, 'policies/v1/'); // the same files, nothing copied
  assert.deepEqual(fork.files, store.rows[1]!.files);
  assert.equal(fork.parentVersion, 1);
  assert.deepEqual(fork.manifest, { name: 'm', forkedFrom: 1 }); // not a training output of run r
  await assert.rejects(
    runStartVersion(store, 9),
    (error: unknown) =>
      error instanceof LonghaulError &&
      error.code === errorTypes.invalidInput &&
      /policy version 9 is not registered \(the latest is 3\)/.test(error.message),
  );
  await assert.rejects(runStartVersion(memoryStore([])), /no policy version is registered yet; run `longhaul model prepare` first/);
});

test('a pruned version is refused by name, as a fork base or to load', async () => {
  const store = memoryStore([row(0, null), row(1, 0, { runId: 'r', step: 0, kind: 'rl' }), row(2, 1, { runId: 'r', step: 1, kind: 'rl' })]);
  await store.markPruned(1);
  await assert.rejects(runStartVersion(store, 1), (error: unknown) => {
    assert.ok(error instanceof LonghaulError);
    assert.equal(error.code, errorTypes.invalidInput);
    assert.match(error.message, /^version: policy version 1 was pruned on \d{4}-\d\d-\d\dT.+`longhaul model prune` deleted its files/);
    return true;
  });
  await assert.rejects(
    materializePolicyVersion({ blobs: unusedBlobs, versions: store, cacheDir: '/nonexistent', version: 1 }),
    /policy version 1 was pruned on/,
  );
  assert.equal(store.rows.length, 3, 'no fork registered');
});

test('a fork that loses a race for its number takes the next one', async () => {
  const store = memoryStore([row(0, null), row(1, 0)]);
  const register = store.register.bind(store);
  let raced = false;
  store.register = async (candidate) => {
    if (!raced) {
      raced = true;
      await register(row(2, 1));
    } // another run published v2 meanwhile
    return register(candidate);
  };
  assert.deepEqual(await runStartVersion(store, 0), { version: 3, forkedFrom: 0 });
});

test("a served fetch takes the manifest and what the ONNX backend reads, never the trainer's weights or optimizer state", () => {
  const files = ['longhaul-model.json', 'model.onnx', 'model.onnx.data', 'tokenizer.json', 'model.safetensors', 'optimizer.pt'].map(
    (name) => ({ name }),
  );
  assert.deepEqual(
    fetchedFiles(files, servedFiles).map((file) => file.name),
    ['longhaul-model.json', 'model.onnx', 'model.onnx.data', 'tokenizer.json'],
  );
  assert.deepEqual(fetchedFiles(files), files, 'no filter: every file');
  assert.deepEqual(
    fetchedFiles(files, () => false).map((file) => file.name),
    ['longhaul-model.json'],
    'the manifest is always fetched',
  );
});
