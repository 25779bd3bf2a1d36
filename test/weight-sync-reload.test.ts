/**
 * Weight sync on the real stack: the gpu-infer backend reloads a registered version of the tiny
 * model in place (running generations finish on the old model, the old one closes once idle, an
 * unknown version is refused while the old one keeps serving); the real gpu-infer worker process
 * serves syncWeights; and the learner calls it after every step with the version it trained.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import type { GenerationBlob } from '../activities/policy.activities.js';
import type { WeightSync } from '../activities/ports/weight-sync.port.js';
import { createWeightSyncActivities } from '../activities/weight-sync.activities.js';
import { createConfiguredBackend, lazyBackend, type LazyBackend } from '../composition/policy-backend.js';
import { publishPolicyVersion } from '../gpu/infer/policy-store.js';
import { tinyModelDir } from './doubles/test-model.js';
import { createWeightSync } from '../infra/inference/weight-sync.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { connectWorker, dataConverter } from '../infra/temporal/connection.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import {
  learnerWorkflowType,
  type LearnerResult,
  type SyncWeightsInput,
  type SyncWeightsResult,
} from '../workflows/contracts/learner.contract.js';
import type { SyncThenGenerateResult } from './fixtures/sync-weights.workflow.js';
import { startOpenAIServer } from './helpers/inference-servers.js';
import { openContext, spawnWorker, testConfig, uniquePrefix, type TestContext } from './helpers/stack.js';

const prompt = 'Question: what is durable execution?\nAnswer:';
const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'sync-weights.workflow.js');

describe('weight sync into a serving policy', () => {
  let context: TestContext;
  let home: string;
  let base: number;
  const stores = () => ({ blobs: context.blobs, versions: createPgPolicyVersionStore(context.pool) });

  before(async () => {
    context = await openContext(uniquePrefix('weight-sync'));
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-weight-sync-'));
    // Versions are global to a database: a random base keeps this file apart from other tests.
    base = 5_000_000 + 10 * Math.floor(Math.random() * 100_000);
    const modelDir = await tinyModelDir();
    for (const version of [base, base + 1]) await publishPolicyVersion({ ...stores(), modelDir, version });
  });
  after(async () => {
    await context.close();
    fs.rmSync(home, { recursive: true, force: true });
  });

  describe('the onnx backend reloads in place', () => {
    let backend: LazyBackend;
    const closed: number[] = [];
    before(() => {
      const settings = testConfig({
        LONGHAUL_HOME: home,
        LONGHAUL_POLICY_BACKEND: 'onnx',
        LONGHAUL_POLICY_VERSION: String(base),
        LONGHAUL_ONNX_THREADS: '1',
        LONGHAUL_MODEL_DIR: '',
      });
      backend = lazyBackend(async (version) => {
        const opened = await createConfiguredBackend(settings, stores(), version);
        const served = await opened.backend.currentVersion();
        return {
          ...opened,
          close: async () => {
            closed.push(served);
            await opened.close();
          },
        };
      }, 'onnx');
    });
    after(() => backend.close());

    it('switches versions without a restart: a running generation finishes on the old model, which closes once idle', async () => {
      const first = await backend.generate({ prompt, maxNewTokens: 8 });
      assert.equal(first.policyVersion, base);
      assert.deepEqual(new Set(first.tokenVersions), new Set([base]));

      const reloading = backend.reload(base + 1);
      let longDone = false;
      const long = backend.generate({ prompt, maxNewTokens: 1500 }).finally(() => {
        longDone = true;
      });
      assert.deepEqual(await reloading, { previous: base, reloaded: true });
      assert.equal(longDone, false, 'the reload landed while the long generation ran');
      assert.deepEqual(closed, [], 'the old model stays open under a running generation');
      assert.equal(await backend.currentVersion(), base + 1);

      const second = await backend.generate({ prompt, maxNewTokens: 8 });
      assert.equal(second.policyVersion, base + 1);
      assert.deepEqual(new Set(second.tokenVersions), new Set([base + 1]));
      assert.deepEqual(second.tokenIds, first.tokenIds, 'the same weights under a new version give the same greedy tokens');

      const finished = await long;
      assert.equal(finished.tokenIds.length, 1500);
      assert.equal(finished.policyVersion, base);
      assert.deepEqual(new Set(finished.tokenVersions), new Set([base]), 'tokens of the running generation keep the old version');
      assert.deepEqual(closed, [base], 'the old model is closed once its last generation ended');
    });

    it('through syncWeights: an unknown version is refused naming it and the fix, the old one keeps serving, a repeat is a no-op', async () => {
      const activities = createWeightSyncActivities({
        weightSync: createWeightSync({ kind: 'onnx', url: null }, { local: backend, folderOf: async () => '' }),
      });
      const unknown = base + 7;
      const failure = await new MockActivityEnvironment()
        .run(activities.syncWeights, { runId: 'r', version: unknown })
        .catch((error: unknown) => error);
      assert.ok(failure instanceof ApplicationFailure);
      assert.equal(failure.nonRetryable, true);
      assert.equal(
        failure.message,
        `syncWeights (onnx): policy version ${unknown} cannot be served: policy version ${unknown} is not registered; ` +
          'sync only registered versions (trainStep and `longhaul model prepare` register them). The worker keeps serving the version it had',
      );
      const still = await backend.generate({ prompt, maxNewTokens: 4 });
      assert.deepEqual(new Set(still.tokenVersions), new Set([base + 1]));

      const environment = new MockActivityEnvironment();
      const beats: unknown[] = [];
      environment.on('heartbeat', (details: unknown) => beats.push(details));
      const again = (await environment.run(activities.syncWeights, { runId: 'r', version: base + 1 })) as SyncWeightsResult;
      assert.equal(again.adapter, 'onnx');
      assert.equal(again.version, base + 1);
      assert.ok(beats.length >= 1);
      assert.deepEqual(closed, [base], 'a repeated sync opens nothing and closes nothing');
    });
  });

  it('the scripted and openai backends switch only their version tag (vllm: and the LoRA adapter they ask for)', async () => {
    const scripted = lazyBackend(
      (version) =>
        createConfiguredBackend(testConfig({ LONGHAUL_POLICY_BACKEND: 'scripted', LONGHAUL_POLICY_VERSION: '' }), stores(), version),
      'scripted',
    );
    assert.equal(await scripted.currentVersion(), 0);
    assert.deepEqual(await scripted.reload(3), { previous: 0, reloaded: true });
    const answer = await scripted.generate({ prompt: 'script:{"turns":1,"answer":"a"}', maxNewTokens: 20 });
    assert.deepEqual(new Set(answer.tokenVersions), new Set([3]));
    const requested: string[] = [];
    const server = await startOpenAIServer((model) => requested.push(model));
    try {
      const settings = testConfig({
        LONGHAUL_POLICY_BACKEND: 'openai',
        LONGHAUL_OPENAI_BASE_URL: `${server.url}/v1`,
        LONGHAUL_OPENAI_MODEL: 'base',
        LONGHAUL_WEIGHT_SYNC: 'vllm',
        LONGHAUL_POLICY_VERSION: '',
      });
      const openai = lazyBackend((version) => createConfiguredBackend(settings, stores(), version), 'openai');
      await openai.generate({ prompt: 'hello', maxNewTokens: 2 });
      await openai.reload(4);
      const tagged = await openai.generate({ prompt: 'hello', maxNewTokens: 2 });
      assert.equal(tagged.policyVersion, 4);
      assert.deepEqual(requested, ['base', 'longhaul-v4']);
    } finally {
      await server.close();
    }
  });

  it('the gpu-infer worker process serves syncWeights and generates with the new version', { timeout: 240_000 }, async () => {
    const prefix = uniquePrefix('weight-sync-worker');
    const env = {
      LONGHAUL_TASK_QUEUE_PREFIX: prefix,
      LONGHAUL_HOME: home,
      LONGHAUL_POLICY_BACKEND: 'onnx',
      LONGHAUL_POLICY_VERSION: String(base),
      LONGHAUL_ONNX_THREADS: '1',
      LONGHAUL_WEIGHT_SYNC: 'onnx',
    };
    const workflowWorker = await Worker.create({
      connection: await connectWorker(context.config),
      namespace: context.config.temporal.namespace,
      taskQueue: `${prefix}agent`,
      workflowsPath: fixture,
      dataConverter: dataConverter(context.config, context.blobs),
    });
    const infer = spawnWorker('gpu-infer', env);
    const running = workflowWorker.run();
    try {
      await infer.ready;
      const key = `${randomUUID()}/turn-0000`;
      const result = (await context.client.workflow.execute('syncThenGenerate', {
        taskQueue: `${prefix}agent`,
        workflowId: `${prefix}sync`,
        args: [
          {
            queue: `${prefix}gpu-infer`,
            runId: `${prefix}run`,
            versions: [base + 1, base + 9],
            generation: { key, request: { prompt, maxNewTokens: 6 } },
          },
        ],
      })) as SyncThenGenerateResult;
      assert.equal((result.syncs[0] as SyncWeightsResult).adapter, 'onnx');
      assert.equal((result.syncs[0] as SyncWeightsResult).version, base + 1);
      // Where the reload's time went: the version's files (downloaded and checked) and opening its ONNX session.
      const { phases = {}, seconds } = result.syncs[0] as SyncWeightsResult;
      assert.ok(
        ['waiting', 'files', 'open'].every((name) => name in phases),
        `phases ${JSON.stringify(phases)}`,
      );
      assert.ok(phases.open! > 0 && phases.files! > 0, `phases ${JSON.stringify(phases)}`);
      const total = Object.values(phases).reduce((sum, value) => sum + value, 0);
      assert.ok(total <= seconds + 0.01, `the phases (${total} s) fit in the sync's ${seconds} s`);
      assert.deepEqual(result.syncs[1], {
        refused:
          `syncWeights (onnx): policy version ${base + 9} cannot be served: policy version ${base + 9} is not registered; ` +
          'sync only registered versions (trainStep and `longhaul model prepare` register them). The worker keeps serving the version it had',
        nonRetryable: true,
      });
      assert.equal(result.generated.policyVersion, base + 1);
      const record = JSON.parse((await context.blobs.get(result.generated.blobKey)).toString()) as GenerationBlob;
      assert.deepEqual(record.tokenVersions, Array(6).fill(base + 1));
    } finally {
      infer.kill('SIGKILL');
      workflowWorker.shutdown();
      await running;
    }
  });

  it('the learner syncs every trained version, in order, and records the seconds in its step stats', { timeout: 300_000 }, async () => {
    const prefix = uniquePrefix('weight-sync-learner');
    const learnerContext = await openContext(prefix);
    const synced: SyncWeightsInput[] = [];
    let served = 0;
    const weightSync: WeightSync = {
      kind: 'sglang',
      async sync(version) {
        await sleep(200);
        served = version;
      },
    };
    try {
      const lines = Array.from({ length: 24 }, (_, index) =>
        JSON.stringify({ id: `q${index}`, question: `script:{"turns":2,"answer":"a","delayMs":20}`, answers: ['a'] }),
      );
      await learnerContext.blobs.put(`${prefix}q.jsonl`, lines.join('\n'));
      const recording = createWeightSyncActivities({ weightSync });
      const workers = await createInProcessAgent({
        config: learnerContext.config,
        blobs: learnerContext.blobs,
        pool: learnerContext.pool,
        prefix,
        backend: createScriptedPolicy({ version: () => served }),
        tools: createScriptedTools(),
        roles: ['agent', 'gpu-infer', 'tools', 'gpu-train'],
        extraActivities: {
          'gpu-infer': {
            syncWeights: (input: SyncWeightsInput) => {
              synced.push(input);
              return recording.syncWeights(input);
            },
          },
          'gpu-train': {
            trainStep: async (input: { outputVersion: number }) => {
              await sleep(200);
              return { version: input.outputVersion, metrics: {} };
            },
          },
        },
      });
      const runId = `${prefix}run`;
      const result = (await workers.run(() =>
        learnerContext.client.workflow.execute(learnerWorkflowType, {
          taskQueue: learnerContext.queue('agent'),
          workflowId: `${prefix}learner`,
          args: [
            {
              runId,
              datasetKey: `${prefix}q.jsonl`,
              settings: { groupSize: 2, batchSize: 4, maxSteps: 3, eta: 1, dropEqualRewardGroups: false },
            },
          ],
        }),
      )) as LearnerResult;
      assert.deepEqual(synced, [
        { runId, version: 1 },
        { runId, version: 2 },
        { runId, version: 3 },
      ]);
      assert.equal(served, 3);
      assert.deepEqual(
        result.history.map((stats) => stats.version),
        [1, 2, 3],
      );
      for (const stats of result.history)
        assert.ok(
          // Workflow time is the start of each workflow task, so the recorded span can read a few
          // milliseconds short of the 200 ms the sync slept; 0.1 s still tells it was measured.
          typeof stats.syncSeconds === 'number' && stats.syncSeconds >= 0.1,
          `step ${stats.step}: syncSeconds ${stats.syncSeconds}`,
        );
    } finally {
      await learnerContext.close();
    }
  });
});
