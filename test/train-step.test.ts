/**
 * trainStep and sftStep for real: the tiny model registered as a base version, four trajectories of
 * one run in two groups, a claimed batch, the engine run as a child process, the new version
 * uploaded and registered; retries do not train again; every bad input is refused before the engine.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { createBufferActivities } from '../activities/buffer.activities.js';
import type { BlobStore } from '../activities/ports/blob-store.port.js';
import { publishPolicyVersion } from '../gpu/infer/policy-store.js';
import { testPython, tinyModelDir } from './doubles/test-model.js';
import { createTrainActivities, type TrainStepOutput } from '../gpu/train/train-step.activities.js';
import { trainingOf } from '../gpu/train/version-files.js';
import { versionFolderName } from '../gpu/infer/version-cache.js';
import { createPgTrajectoryBuffer } from '../infra/postgres/buffer.pg.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';
import { writeTrajectory } from './helpers/trajectories.js';

const hyperparameters = { learningRate: 1e-3, microBatchSize: 2, ppo: { maxStaleness: 2 } };

describe('the trainStep and sftStep activities', () => {
  let context: TestContext;
  let home: string;
  let base: number;
  let runId: string;
  let batch: string[];
  let engineStarts = 0;
  let activities: ReturnType<typeof createTrainActivities>;
  const versions = () => createPgPolicyVersionStore(context.pool);
  const stores = () => ({ blobs: context.blobs, trajectories: createPgTrajectoryStore(context.pool) });
  const make = (options: { home?: string; onnx?: 'auto' | 'skip'; blobs?: BlobStore; cacheKeep?: number } = {}) =>
    createTrainActivities({
      ...stores(),
      ...(options.blobs ? { blobs: options.blobs } : {}),
      ...(options.cacheKeep ? { cacheKeep: options.cacheKeep } : {}),
      versions: versions(),
      python: testPython(),
      home: options.home ?? home,
      onnx: options.onnx ?? 'skip',
      threads: 2,
      heartbeatMs: 200,
      onEngineStart: () => {
        engineStarts += 1;
      },
    });

  before(async () => {
    context = await openContext(uniquePrefix('train'));
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-train-'));
    // Versions are global to a database: a random base keeps this file apart from other tests.
    base = 3_000_000 + 10 * Math.floor(Math.random() * 100_000);
    await publishPolicyVersion({ blobs: context.blobs, versions: versions(), modelDir: await tinyModelDir(), version: base });
    runId = `run-${randomUUID().slice(0, 8)}`;
    for (const [question, rewards] of [
      ['q1', [1, 0]],
      ['q2', [0, 1]],
    ] as const) {
      for (const [index, reward] of rewards.entries())
        await writeTrajectory(stores(), runId, { id: `${runId}-${question}-${index}`, questionId: question, reward, version: base });
    }
    const claimed = await createBufferActivities({ buffer: createPgTrajectoryBuffer(context.pool) }).claimBatch({
      runId,
      step: 0,
      batchSize: 4,
      currentVersion: base,
      eta: 2,
      selection: 'freshest',
      minGroupSize: 2,
    });
    batch = claimed.trajectoryIds;
    activities = make();
  });
  after(async () => {
    await context.close();
    fs.rmSync(home, { recursive: true, force: true });
  });

  const step = (overrides: Record<string, unknown> = {}) => ({
    runId,
    step: 0,
    trajectoryIds: batch,
    baseVersion: base,
    outputVersion: base + 1,
    groupSize: 2,
    hyperparameters,
    ...overrides,
  });

  it('trains a claimed batch into a new version, uploads it and registers it, with ONNX and heartbeats', async () => {
    const environment = new MockActivityEnvironment();
    const beats: unknown[] = [];
    environment.on('heartbeat', (details: unknown) => beats.push(details));
    const started = Date.now();
    const result = (await environment.run(make({ onnx: 'auto' }).trainStep, step())) as TrainStepOutput;
    console.log(`trainStep on the tiny model (4 trajectories, ONNX export): ${Date.now() - started} ms`);
    assert.equal(result.version, base + 1);
    assert.equal(result.trained, true);
    assert.equal(result.modelKey, `policies/${runId}/${versionFolderName(base + 1)}/`);
    assert.equal(result.metrics.samples, 4);
    assert.equal(result.metrics.policyVersion, base + 1);
    assert.ok(Number.isFinite(result.metrics.loss), `a finite loss, got ${String(result.metrics.loss)}`);
    assert.equal(result.metrics.onnx, 'model.onnx');
    const row = await versions().get(base + 1);
    assert.equal(row?.parentVersion, base);
    assert.deepEqual(trainingOf(row!), { runId, step: 0, kind: 'rl', baseVersion: base, metrics: result.metrics });
    for (const name of ['model.safetensors', 'optimizer.pt', 'engine_state.json', 'metrics.json', 'model.onnx', 'longhaul-model.json']) {
      assert.equal(await context.blobs.exists(result.modelKey + name), true, name);
    }
    assert.ok(
      beats.some((beat) => (beat as { phase?: string }).phase === 'update'),
      'a progress heartbeat',
    );
    assert.equal(engineStarts, 1);
  });

  it('returns the registered version on a retry of the same step without training again', async () => {
    const again = (await new MockActivityEnvironment().run(activities.trainStep, step())) as TrainStepOutput;
    assert.equal(again.version, base + 1);
    assert.equal(again.trained, false);
    assert.equal(engineStarts, 1);
  });

  it('warm-starts with sftStep from a downloaded trained version through the same path', async () => {
    const fresh = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-train-fresh-'));
    try {
      const result = (await new MockActivityEnvironment().run(make({ home: fresh }).sftStep, {
        runId,
        step: 1,
        trajectoryIds: batch,
        baseVersion: base + 1,
        outputVersion: base + 2,
        hyperparameters: { learningRate: 1e-3, epochs: 2 },
      })) as TrainStepOutput;
      assert.equal(result.version, base + 2);
      const losses = result.metrics.losses as number[];
      assert.equal(losses.length, 2);
      assert.ok(
        losses.every((loss) => Number.isFinite(loss)),
        `finite losses, got ${JSON.stringify(losses)}`,
      );
      assert.equal(trainingOf((await versions().get(base + 2))!)?.kind, 'sft');
      const state = JSON.parse(
        fs.readFileSync(path.join(fresh, 'models', 'train', versionFolderName(base + 2), 'engine_state.json'), 'utf8'),
      ) as { policyVersion: number; optimizerSteps: number };
      assert.deepEqual([state.policyVersion, state.optimizerSteps], [base + 2, 3]); // the optimizer resumed: 1 RL step + 2 SFT epochs
    } finally {
      fs.rmSync(fresh, { recursive: true, force: true });
    }
  });

  it('refuses every bad input before the engine starts, naming the field, and never overwrites a version', async () => {
    const bad = `${runId}-bad`;
    await writeTrajectory(stores(), bad, { id: `${bad}-short`, questionId: 'q', reward: 1, version: base, firstTurn: { logprobs: [-1] } });
    await writeTrajectory(stores(), bad, { id: `${bad}-nan`, questionId: 'q', reward: Number.NaN, version: base });
    await writeTrajectory(stores(), bad, { id: `${bad}-ok`, questionId: 'q', reward: 0, version: base });
    const cases: [Record<string, unknown>, string][] = [
      [
        { runId: bad, trajectoryIds: [`${bad}-short`, `${bad}-ok`], outputVersion: base + 7, baseVersion: base + 6 },
        `baseVersion: unknown policy version ${base + 6} (not registered)`,
      ],
      [
        { runId: bad, trajectoryIds: [`${bad}-short`, `${bad}-ok`], outputVersion: base + 3, baseVersion: base + 2 },
        `trajectoryIds[0] (${bad}-short): turn 0: logprobs has 1 entries but tokenIds has 3`,
      ],
      [
        { runId: bad, trajectoryIds: [`${bad}-nan`, `${bad}-ok`], outputVersion: base + 3, baseVersion: base + 2 },
        `trajectoryIds[0] (${bad}-nan): its stored row is invalid: reward: Invalid input: expected number, received NaN`,
      ],
      [{ groupSize: 1 }, 'groupSize is 1, hyperparameters.ppo.groupNormalise needs at least 2 samples per group (G >= 2)'],
      [{ hyperparameters: { ppo: { maxStaleness: -1 } } }, 'hyperparameters.ppo.maxStaleness: Too small: expected number to be >=0'],
      [
        { trajectoryIds: [`${runId}-q1-0`, `${runId}-q1-1`, `${runId}-q2-0`], step: 5, outputVersion: base + 3, baseVersion: base + 2 },
        `trajectoryIds: question q2 has 1 trajectory in the batch, hyperparameters.ppo.groupNormalise needs at least 2 per group (G >= 2)`,
      ],
      [{ outputVersion: base + 5 }, `outputVersion is ${base + 5}, must be baseVersion + 1 = ${base + 1}`],
      [{ step: 9 }, `outputVersion: policy version ${base + 1} is already registered by run ${runId} step 0; refusing to overwrite it`],
    ];
    const before = engineStarts;
    for (const [overrides, message] of cases) {
      await assert.rejects(new MockActivityEnvironment().run(activities.trainStep, step(overrides)), (error: unknown) => {
        assert.ok(error instanceof ApplicationFailure, String(error));
        assert.deepEqual([error.type, error.nonRetryable, error.message], ['LonghaulInvalidInput', true, `trainStep: ${message}`]);
        return true;
      });
    }
    assert.equal(engineStarts, before);
    assert.equal(fs.existsSync(path.join(home, 'models', 'train', versionFolderName(base + 3))), false);
  });

  it('refuses a corrupt checkpoint as LonghaulCorrupt before the engine starts', async () => {
    const corrupt = base + 50;
    const row = (await versions().get(base))!;
    await versions().register({
      ...row,
      version: corrupt,
      files: row.files.map((file) => (file.name === 'model.safetensors' ? { ...file, sha256: '0'.repeat(64) } : file)),
      parentVersion: null,
    });
    const before = engineStarts;
    await assert.rejects(
      new MockActivityEnvironment().run(
        activities.trainStep,
        step({ baseVersion: corrupt, outputVersion: corrupt + 1, step: 3, hyperparameters: { ppo: { maxStaleness: 100 } } }),
      ),
      (error: unknown) =>
        error instanceof ApplicationFailure &&
        error.type === 'LonghaulCorrupt' &&
        error.nonRetryable &&
        error.message === `trainStep: policy version ${corrupt}: ${row.blobPrefix}model.safetensors does not match its registered sha256`,
    );
    assert.equal(engineStarts, before);
  });

  it("stops the engine when the activity is cancelled, and a retry replaces a crashed attempt's unregistered folder", async () => {
    const environment = new MockActivityEnvironment();
    environment.on('heartbeat', (details: unknown) => {
      if ((details as { event?: string }).event === 'start') environment.cancel();
    });
    const running = environment.run(
      make().trainStep,
      step({ step: 4, baseVersion: base + 2, outputVersion: base + 3, hyperparameters: { ...hyperparameters, ppo: { maxStaleness: 4 } } }),
    );
    await assert.rejects(running, (error: unknown) => error instanceof CancelledFailure);
    assert.equal(await versions().get(base + 3), undefined);
    const leftover = path.join(home, 'models', 'train', versionFolderName(base + 3));
    assert.equal(fs.existsSync(leftover), false);
    fs.mkdirSync(leftover, { recursive: true });
    fs.writeFileSync(path.join(leftover, 'model.safetensors'), 'half-written');
    const retried = (await new MockActivityEnvironment().run(
      make().trainStep,
      step({ step: 4, baseVersion: base + 2, outputVersion: base + 3, hyperparameters: { ...hyperparameters, ppo: { maxStaleness: 4 } } }),
    )) as TrainStepOutput;
    assert.deepEqual([retried.version, retried.trained], [base + 3, true]);
    assert.notEqual(fs.readFileSync(path.join(leftover, 'model.safetensors'), 'utf8').slice(0, 12), 'half-written');
  });

  it("a retry after a failed upload publishes the engine's output without training again; the trainer's cache keeps its newest versions", async () => {
    const input = step({
      step: 5,
      baseVersion: base + 3,
      outputVersion: base + 4,
      hyperparameters: { ...hyperparameters, ppo: { maxStaleness: 5 } },
    });
    let refused = 0;
    const failing: BlobStore = {
      ...context.blobs,
      put: async (key, body, contentType) => {
        if (key.includes(versionFolderName(base + 4)) && key.endsWith('model.safetensors')) {
          refused += 1;
          throw new Error('S3 PutObject: 500 Internal Server Error (volume is read-only)');
        }
        return context.blobs.put(key, body, contentType);
      },
    };
    const before = engineStarts;
    await assert.rejects(new MockActivityEnvironment().run(make({ blobs: failing }).trainStep, input), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure, String(error));
      assert.deepEqual([error.type, error.nonRetryable], ['LonghaulUnavailable', false]);
      return true;
    });
    assert.equal(refused, 1);
    assert.equal(engineStarts, before + 1);
    assert.equal(await versions().get(base + 4), undefined);
    const beats: unknown[] = [];
    const environment = new MockActivityEnvironment();
    environment.on('heartbeat', (details: unknown) => beats.push(details));
    const retried = (await environment.run(make({ cacheKeep: 2 }).trainStep, input)) as TrainStepOutput;
    assert.deepEqual([retried.version, retried.trained], [base + 4, true]);
    assert.equal(engineStarts, before + 1, 'the retry reused the engine output');
    assert.ok(beats.some((beat) => (beat as { event?: string }).event === 'reusing'));
    assert.equal(trainingOf((await versions().get(base + 4))!)?.step, 5);
    assert.equal(retried.metrics.policyVersion, base + 4);
    const cached = fs.readdirSync(path.join(home, 'models', 'train')).filter((name) => /^v\d{6,}$/.test(name));
    assert.deepEqual(cached.sort(), [versionFolderName(base + 3), versionFolderName(base + 4)], 'keep 2: the base and the output');
  });

  it("trains from a fork of a trained version: the staged engine state takes the fork's number", async () => {
    const trained = (await versions().get(base + 4))!;
    const fork = base + 30;
    await versions().register({ ...trained, version: fork, manifest: { forkedFrom: base + 4 }, parentVersion: base + 4 });
    const result = (await new MockActivityEnvironment().run(make().sftStep, {
      runId,
      step: 6,
      trajectoryIds: batch,
      baseVersion: fork,
      outputVersion: fork + 1,
      hyperparameters: { learningRate: 1e-3, epochs: 1 },
    })) as TrainStepOutput;
    assert.deepEqual([result.version, result.trained], [fork + 1, true]);
    const state = JSON.parse(fs.readFileSync(path.join(home, 'models', 'train', versionFolderName(fork), 'engine_state.json'), 'utf8')) as {
      policyVersion: number;
      forkedFrom: number;
    };
    assert.deepEqual([state.policyVersion, state.forkedFrom], [fork, base + 4]);
  });
});
