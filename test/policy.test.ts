/**
 * The generate activity (idempotent record in the real S3 store, cancellation → interrupted record,
 * resume) and policy versions (publish to S3 + Postgres, fetch back), on the tiny model.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import {
  createPolicyActivities,
  generationBlobKey,
  type GenerateActivityResult,
  type GenerationBlob,
} from '../activities/policy.activities.js';
import type { GenerateRequest, GenerateResult, PolicyBackend } from '../activities/ports/policy.port.js';
import { createOnnxBackend, type OnnxBackend } from '../gpu/infer/onnx.backend.js';
import { materializePolicyVersion, publishPolicyVersion, servedFiles } from '../gpu/infer/policy-store.js';
import { modelFiles } from '../gpu/infer/model-files.js';
import { threadFileFetcher } from '../composition/thread-file-fetcher.js';
import { tinyModelDir } from './doubles/test-model.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

const prompt = 'Question: where is the Eiffel Tower?\nAnswer:';

describe('the generate activity and policy versions', () => {
  let context: TestContext;
  let onnx: OnnxBackend;
  let dir: string;

  before(async () => {
    context = await openContext(uniquePrefix('policy'));
    dir = await tinyModelDir();
    onnx = await createOnnxBackend({ modelDir: dir, version: 0, threads: 1 });
  });
  after(async () => {
    await onnx.close();
    await context.close();
  });

  it('stores the generation under its key and returns the stored record on a retry', async () => {
    let calls = 0;
    const counting: PolicyBackend = {
      name: 'onnx',
      currentVersion: () => onnx.currentVersion(),
      capabilities: () => onnx.capabilities(),
      generate: (request, signal) => {
        calls += 1;
        return onnx.generate(request, signal);
      },
    };
    const activities = createPolicyActivities({ backend: counting, blobs: context.blobs });
    const key = `${randomUUID()}/turn-0003`;
    const input = { key, request: { prompt, maxNewTokens: 6 } };
    const first = (await new MockActivityEnvironment().run(activities.generate, input)) as GenerateActivityResult;
    const again = await new MockActivityEnvironment().run(activities.generate, input);
    assert.equal(calls, 1);
    assert.deepEqual(again, first);
    assert.equal(first.blobKey, `generations/${key}.json`);
    assert.equal(first.generatedTokens, 6);
    assert.equal(first.finishReason, 'length');
    const stored = JSON.parse((await context.blobs.get(first.blobKey)).toString()) as GenerationBlob;
    assert.equal(stored.tokenIds.length, 6);
    assert.equal(stored.logprobs.length, 6);
    assert.deepEqual(stored.tokenVersions, [0, 0, 0, 0, 0, 0]);
    assert.equal(stored.text, first.text);
    assert.deepEqual(stored.promptTokenIds, onnx.tokenizer.encode(prompt));
  });

  it('stores an interrupted record on cancellation, rethrows, and a resumed generation keeps its tokens', async () => {
    let release!: () => void;
    const started = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow: PolicyBackend = {
      name: 'onnx',
      currentVersion: async () => 0,
      capabilities: () => onnx.capabilities(),
      async generate(request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
        release();
        await new Promise((resolve) => signal?.addEventListener('abort', resolve, { once: true }));
        return { ...(await onnx.generate({ ...request, maxNewTokens: 3 })), finishReason: 'interrupted' };
      },
    };
    const key = `${randomUUID()}/turn-0001`;
    const environment = new MockActivityEnvironment();
    const running = environment.run(createPolicyActivities({ backend: slow, blobs: context.blobs }).generate, {
      key,
      request: { prompt, maxNewTokens: 10 },
    });
    await started;
    environment.cancel();
    await assert.rejects(running, (error: unknown) => error instanceof CancelledFailure);
    const partial = JSON.parse((await context.blobs.get(generationBlobKey(key))).toString()) as GenerationBlob;
    assert.equal(partial.tokenIds.length, 3);

    const resumed = (await new MockActivityEnvironment().run(createPolicyActivities({ backend: onnx, blobs: context.blobs }).generate, {
      key: `${key}-r1`,
      resumeFrom: key,
      request: { prompt, maxNewTokens: 10 },
    })) as GenerateActivityResult;
    const whole = await onnx.generate({ prompt, maxNewTokens: 10 });
    const record = JSON.parse((await context.blobs.get(resumed.blobKey)).toString()) as GenerationBlob;
    assert.deepEqual(record.tokenIds, whole.tokenIds);
    assert.deepEqual(record.logprobs.slice(0, 3), partial.logprobs);
    assert.equal(resumed.text, whole.text);
  });

  it('fails a bad input without retrying, naming the field', async () => {
    const activities = createPolicyActivities({ backend: onnx, blobs: context.blobs });
    await assert.rejects(
      new MockActivityEnvironment().run(activities.generate, { key: '../escape', request: { prompt, maxNewTokens: 2 } }),
      (error: unknown) =>
        error instanceof ApplicationFailure &&
        error.nonRetryable &&
        error.type === 'LonghaulInvalidInput' &&
        error.message.startsWith('generate: key: '),
    );
    await assert.rejects(
      new MockActivityEnvironment().run(activities.generate, { key: 'k', request: { prompt, maxNewTokens: -1 } }),
      (error: unknown) =>
        error instanceof ApplicationFailure &&
        error.nonRetryable &&
        error.message === 'generate: request.maxNewTokens: Too small: expected number to be >=1',
    );
  });

  it('publishes a prepared folder as a policy version once and fetches it back byte for byte', async () => {
    const versions = createPgPolicyVersionStore(context.pool);
    const version = 1_000_000 + Math.floor(Math.random() * 1_000_000);
    const first = await publishPolicyVersion({ blobs: context.blobs, versions, modelDir: dir, version });
    const again = await publishPolicyVersion({ blobs: context.blobs, versions, modelDir: dir, version });
    assert.equal(first.published, true);
    assert.equal(again.published, false);
    assert.deepEqual(
      first.row.files.map((file) => file.name),
      [
        'chat_template.jinja',
        'config.json',
        'generation_config.json',
        'longhaul-model.json',
        'model.onnx',
        'model.onnx.data',
        'model.safetensors',
        'tokenizer.json',
        'tokenizer_config.json',
      ],
    );
    const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-policy-'));
    try {
      // The ONNX backend's fetch leaves out the PyTorch weights; a reader of every file (a weight-sync server) adds them.
      const served = await materializePolicyVersion({ blobs: context.blobs, versions, cacheDir, version, files: servedFiles });
      assert.deepEqual(
        fs.readdirSync(served.dir).sort(),
        modelFiles(dir).filter((name) => name !== 'model.safetensors'),
      );
      assert.deepEqual(fs.readFileSync(path.join(served.dir, 'model.onnx.data')), fs.readFileSync(path.join(dir, 'model.onnx.data')));
      const fetched = await materializePolicyVersion({ blobs: context.blobs, versions, cacheDir, version });
      assert.equal(fetched.dir, served.dir);
      assert.deepEqual(fs.readdirSync(fetched.dir).sort(), modelFiles(dir));
      assert.deepEqual(fs.readFileSync(path.join(fetched.dir, 'model.onnx')), fs.readFileSync(path.join(dir, 'model.onnx')));
      assert.deepEqual(fs.readFileSync(path.join(fetched.dir, 'model.safetensors')), fs.readFileSync(path.join(dir, 'model.safetensors')));
      assert.equal(fetched.row.name, 'longhaul-tiny-llama');
    } finally {
      fs.rmSync(cacheDir, { recursive: true, force: true });
    }
    await assert.rejects(
      materializePolicyVersion({ blobs: context.blobs, versions, cacheDir, version: version + 5_000_000 }),
      (error: unknown) =>
        error instanceof LonghaulError &&
        error.code === errorTypes.notFound &&
        error.message === `policy version ${version + 5_000_000} is not registered`,
    );

    // The ONNX backend's way (composition/policy-backend.ts): the same files, downloaded on a worker thread.
    const threadCache = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-policy-thread-'));
    try {
      const fetchFiles = threadFileFetcher(context.config);
      const threaded = await materializePolicyVersion({
        blobs: context.blobs,
        versions,
        cacheDir: threadCache,
        version,
        files: servedFiles,
        fetchFiles,
      });
      assert.deepEqual(
        fs.readdirSync(threaded.dir).sort(),
        modelFiles(dir).filter((name) => name !== 'model.safetensors'),
      );
      assert.deepEqual(fs.readFileSync(path.join(threaded.dir, 'model.onnx.data')), fs.readFileSync(path.join(dir, 'model.onnx.data')));
      const onnxFile = first.row.files.find((file) => file.name === 'model.onnx')!;
      const into = path.join(threadCache, 'tampered');
      await assert.rejects(
        fetchFiles([{ key: first.row.blobPrefix + onnxFile.name, sha256: '0'.repeat(64), into, label: 'the tampered model.onnx' }]),
        (error: unknown) =>
          LonghaulError.is(error) &&
          error.code === errorTypes.corrupt &&
          error.message === 'the tampered model.onnx does not match its registered sha256',
      );
      assert.equal(fs.existsSync(into), false, 'nothing written for a file that does not match');
      await assert.rejects(
        fetchFiles([{ key: `${first.row.blobPrefix}no-such-file`, sha256: onnxFile.sha256, into, label: 'a missing file' }]),
        (error: unknown) => LonghaulError.is(error) && error.code === errorTypes.notFound,
      );
    } finally {
      fs.rmSync(threadCache, { recursive: true, force: true });
    }

    // Leave the stack's "latest version" as it was.
    await context.pool.query('DELETE FROM policy_versions WHERE version = $1', [version]);
    for (const key of await context.blobs.list(first.row.blobPrefix)) await context.blobs.delete(key);
  });
});
