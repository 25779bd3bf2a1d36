/**
 * One η (issue 9, bug 1): the learner's settings.eta is the staleness bound of the buffer's claim and
 * of every check of the train step. With η = 6, trajectories generated 6 versions before the base
 * are claimed and trained on; without η the train step keeps its default bound (4) and refuses them;
 * a hyperparameters.ppo.maxStaleness that contradicts η is refused naming both.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { createBufferActivities } from '../activities/buffer.activities.js';
import { publishPolicyVersion } from '../gpu/infer/policy-store.js';
import { testPython, tinyModelDir } from './doubles/test-model.js';
import { createTrainActivities, type TrainStepOutput } from '../gpu/train/train-step.activities.js';
import { createPgTrajectoryBuffer } from '../infra/postgres/buffer.pg.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';
import { writeTrajectory } from './helpers/trajectories.js';

describe('η = 6 end to end through the buffer claim and trainStep', () => {
  let context: TestContext;
  let home: string;
  let base: number;
  let runId: string;
  let batch: string[];
  const stores = () => ({ blobs: context.blobs, trajectories: createPgTrajectoryStore(context.pool) });
  const trainer = () =>
    createTrainActivities({
      ...stores(),
      versions: createPgPolicyVersionStore(context.pool),
      python: testPython(),
      home,
      onnx: 'skip',
      threads: 2,
      heartbeatMs: 200,
    });

  before(async () => {
    context = await openContext(uniquePrefix('eta'));
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-eta-'));
    base = 5_000_000 + 10 * Math.floor(Math.random() * 100_000);
    const modelDir = await tinyModelDir();
    // Versions base … base+6 (the same weights: only the version numbers matter to the staleness checks).
    for (let version = base; version <= base + 6; version += 1) {
      await publishPolicyVersion({ blobs: context.blobs, versions: createPgPolicyVersionStore(context.pool), modelDir, version });
    }
    runId = `run-${randomUUID().slice(0, 8)}`;
    for (const [question, rewards] of [
      ['q1', [1, 0]],
      ['q2', [0, 1]],
    ] as const) {
      for (const [index, reward] of rewards.entries())
        await writeTrajectory(stores(), runId, { id: `${runId}-${question}-${index}`, questionId: question, reward, version: base });
    }
  });
  after(async () => {
    await context.close();
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('the buffer hands out trajectories 6 versions old under η = 6, and none under η = 5', async () => {
    const buffer = createBufferActivities({ buffer: createPgTrajectoryBuffer(context.pool) });
    const refused = await buffer.claimBatch({
      runId,
      step: 0,
      batchSize: 4,
      currentVersion: base + 6,
      eta: 5,
      selection: 'freshest',
      minGroupSize: 2,
    });
    assert.deepEqual(refused.trajectoryIds, []);
    const claimed = await buffer.claimBatch({
      runId,
      step: 1,
      batchSize: 4,
      currentVersion: base + 6,
      eta: 6,
      selection: 'freshest',
      minGroupSize: 2,
    });
    assert.equal(claimed.trajectoryIds.length, 4);
    batch = claimed.trajectoryIds;
  });

  const step = (overrides: Record<string, unknown>) => ({
    runId,
    step: 1,
    trajectoryIds: batch,
    baseVersion: base + 6,
    outputVersion: base + 7,
    groupSize: 2,
    hyperparameters: { learningRate: 1e-3, microBatchSize: 2 },
    ...overrides,
  });
  const refusal = (message: string) => (error: unknown) => {
    assert.ok(error instanceof ApplicationFailure, String(error));
    assert.deepEqual([error.type, error.nonRetryable, error.message], ['LonghaulInvalidInput', true, message]);
    return true;
  };

  it('without η, trainStep keeps its default bound (4) and refuses the batch', async () => {
    await assert.rejects(new MockActivityEnvironment().run(trainer().trainStep, step({})), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure && error.nonRetryable, String(error));
      assert.match(error.message, /staler than|maxStaleness/);
      return true;
    });
  });

  it('refuses a hyperparameters.ppo.maxStaleness that contradicts η, naming both', async () => {
    await assert.rejects(
      new MockActivityEnvironment().run(trainer().trainStep, step({ eta: 6, hyperparameters: { ppo: { maxStaleness: 4 } } })),
      refusal(
        "trainStep: hyperparameters.ppo.maxStaleness is 4 but the learner's η (settings.eta) is 6: η is set once, on the learner; remove ppo.maxStaleness",
      ),
    );
  });

  it('with η = 6 from the learner, the engine trains the batch into the next version', async () => {
    const result = (await new MockActivityEnvironment().run(trainer().trainStep, step({ eta: 6 }))) as TrainStepOutput;
    assert.deepEqual([result.version, result.trained, result.metrics.samples], [base + 7, true, 4]);
    assert.ok(Number.isFinite(result.metrics.loss), `finite loss, got ${String(result.metrics.loss)}`);
  });
});
