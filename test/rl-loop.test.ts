/**
 * The whole RL loop on real parts, once: the tiny real model (random Llama weights, SmolLM2
 * tokenizer) registered as policy version `base`; the learner workflow for one step, whose
 * trajectory children generate with the onnx policy; the real trainStep (PyTorch engine, ONNX
 * export) trains version base + 1; syncWeights switches the serving backend to it; a trajectory
 * generated afterwards is recorded under base + 1, and the weights really changed: the same forced
 * text scores differently than before.
 *
 * A random model never answers, so every reward is 0 and group-normalised advantages are 0: the
 * update comes from the entropy bonus (ppo.entropyCoefficient), which moves the weights whatever
 * the rewards are.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { createConfiguredBackend, lazyBackend } from '../composition/policy-backend.js';
import { publishPolicyVersion } from '../gpu/infer/policy-store.js';
import { testPython, tinyModelDir } from './doubles/test-model.js';
import { createTrainActivities } from '../gpu/train/train-step.activities.js';
import { trainingOf } from '../gpu/train/version-files.js';
import { createWeightSync } from '../infra/inference/weight-sync.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import { learnerWorkflowType, type LearnerResult } from '../workflows/contracts/learner.contract.js';
import { trajectoryWorkflowType, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import { openContext, testConfig, uniquePrefix } from './helpers/stack.js';

interface StoredRecord {
  readonly turnRecords: readonly {
    readonly policyVersion: number;
    readonly tokenIds: number[];
    readonly logprobs: number[];
    readonly tokenVersions: number[];
    readonly temperature?: number;
  }[];
}

const forced = {
  prompt: 'Question: what is durable execution?\nAnswer:',
  forcedText: ' A workflow that survives crashes and restarts.',
  maxNewTokens: 64,
};
const limits = { maxTurns: 2, maxNewTokensPerTurn: 12 };

test(
  'the RL loop: onnx rollouts of the tiny model, a real trainStep, syncWeights, then generation under the new version',
  { timeout: 900_000 },
  async () => {
    const prefix = uniquePrefix('rl-loop');
    const context = await openContext(prefix);
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-rl-loop-'));
    const versions = createPgPolicyVersionStore(context.pool);
    const stores = { blobs: context.blobs, versions };
    // Versions are global to a database: a random base keeps this file apart from other tests.
    const base = 7_000_000 + 10 * Math.floor(Math.random() * 100_000);
    const settings = testConfig({
      LONGHAUL_HOME: home,
      LONGHAUL_TASK_QUEUE_PREFIX: prefix,
      LONGHAUL_POLICY_BACKEND: 'onnx',
      LONGHAUL_POLICY_VERSION: String(base),
      LONGHAUL_ONNX_THREADS: '1',
      LONGHAUL_MODEL_DIR: '',
    });
    const backend = lazyBackend((version) => createConfiguredBackend(settings, stores, version), 'onnx');
    try {
      await publishPolicyVersion({ ...stores, modelDir: await tinyModelDir(), version: base });
      const before = await backend.generate(forced);
      assert.equal(before.policyVersion, base);

      const runId = `${prefix}run`;
      const questions = [
        ['peru', 'What is the capital of Peru?', 'Lima'],
        ['gold', 'Which element has atomic number 79?', 'Gold'],
      ];
      await context.blobs.put(
        `${prefix}q.jsonl`,
        questions.map(([id, question, answer]) => JSON.stringify({ id, question, answers: [answer] })).join('\n'),
      );
      const trajectories = createPgTrajectoryStore(context.pool);
      const workers = await createInProcessAgent({
        config: context.config,
        blobs: context.blobs,
        pool: context.pool,
        prefix,
        backend,
        tools: createScriptedTools(),
        roles: ['agent', 'gpu-infer', 'tools', 'gpu-train'],
        weightSync: createWeightSync({ kind: 'onnx', url: null }, { local: backend, folderOf: async () => '' }),
        extraActivities: {
          'gpu-train': createTrainActivities({
            blobs: context.blobs,
            versions,
            trajectories,
            python: testPython(),
            home,
            onnx: 'auto',
            threads: 2,
          }),
        },
      });

      const { result, after } = await workers.run(async () => {
        const learned = (await context.client.workflow.execute(learnerWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${prefix}learner`,
          args: [
            {
              runId,
              datasetKey: `${prefix}q.jsonl`,
              startVersion: base,
              settings: { groupSize: 2, batchSize: 4, maxSteps: 1, maxInflight: 4, dropEqualRewardGroups: false },
              // Sampled rollouts at T ≠ 1: the engine scores at the same temperature (behaviour weight 1).
              trajectory: { limits, options: { temperature: 0.7 } },
              hyperparameters: { learningRate: 1e-3, microBatchSize: 2, ppo: { entropyCoefficient: 0.1 } },
            },
          ],
        })) as LearnerResult;
        const generated = (await context.client.workflow.execute(trajectoryWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${prefix}after`,
          args: [{ question: 'What is the capital of Peru?', answers: ['Lima'], limits }],
        })) as TrajectoryResult;
        return { result: learned, after: generated };
      });

      // One step trained base → base + 1 on the four rollouts, and the serving side took it up.
      assert.deepEqual([result.steps, result.finalVersion, result.consumed], [1, base + 1, 4]);
      assert.equal(typeof result.history[0]?.syncSeconds, 'number', 'syncWeights ran after the step');
      assert.equal(await backend.currentVersion(), base + 1);

      // The batch: rollouts of the onnx policy under version base, as stored.
      const { rows } = await context.pool.query<{ record_key: string }>(
        `SELECT t.record_key FROM buffer_uses u JOIN trajectories t USING (trajectory_id) WHERE u.run_id = $1 AND u.step = 0 AND u.state = 'consumed'`,
        [runId],
      );
      assert.equal(rows.length, 4);
      for (const row of rows) {
        const record = JSON.parse((await context.blobs.get(row.record_key)).toString()) as StoredRecord;
        const tokens = record.turnRecords.flatMap((turn) => turn.tokenIds);
        assert.ok(tokens.length > 0, `${row.record_key}: generated tokens`);
        assert.deepEqual(new Set(record.turnRecords.flatMap((turn) => turn.tokenVersions)), new Set([base]));
        assert.deepEqual(new Set(record.turnRecords.map((turn) => turn.temperature)), new Set([0.7]), 'each turn records its temperature');
        assert.ok(
          record.turnRecords.every(
            (turn) =>
              turn.logprobs.length === turn.tokenIds.length && turn.logprobs.every((logprob) => Number.isFinite(logprob) && logprob <= 0),
          ),
        );
      }

      // The real engine trained it: a registered child of base with finite metrics and new weights.
      const [parent, child] = [await versions.get(base), await versions.get(base + 1)];
      assert.equal(child?.parentVersion, base);
      const training = trainingOf(child!);
      assert.deepEqual([training?.runId, training?.step, training?.kind, training?.baseVersion], [runId, 0, 'rl', base]);
      assert.ok(Number.isFinite(training?.metrics.loss), `a finite loss, got ${String(training?.metrics.loss)}`);
      // Fresh rollouts are on-policy: onnx inference at T = 0.7 and the engine's logits / 0.7 agree to float rounding.
      const logWeight = training?.metrics.maxAbsLogBehaviourWeight as number;
      console.log(`largest |log behaviour weight| at T = 0.7: ${logWeight}`);
      assert.ok(logWeight < 1e-3, `behaviour weights of on-policy tokens at T = 0.7 are 1, got |log w| up to ${logWeight}`);
      const weights = (row: typeof parent) => row?.files.find((file) => file.name === 'model.safetensors')?.sha256;
      assert.notEqual(weights(child), weights(parent), 'the trained weights differ from the base');

      // Generation after the sync runs under the new version, and the new weights score differently.
      const record = JSON.parse((await context.blobs.get(after.recordKey)).toString()) as StoredRecord;
      assert.ok(after.versionsUsed.includes(base + 1), `versions used: ${JSON.stringify(after.versionsUsed)}`);
      assert.ok(record.turnRecords.length > 0);
      for (const turn of record.turnRecords) {
        assert.equal(turn.policyVersion, base + 1);
        assert.deepEqual(new Set(turn.tokenVersions), new Set([base + 1]));
      }
      const later = await backend.generate(forced);
      assert.equal(later.policyVersion, base + 1);
      assert.deepEqual(later.tokenIds, before.tokenIds);
      const largest = Math.max(...later.logprobs.map((logprob, index) => Math.abs(logprob - before.logprobs[index]!)));
      console.log(
        `forced text: ${later.tokenIds.length} tokens, largest logprob change ${largest.toFixed(5)}; trainStep ${result.history[0]!.trainSeconds} s, sync ${result.history[0]!.syncSeconds} s`,
      );
      assert.ok(largest > 1e-4, `the same forced text scores the same under base and base + 1 (largest change ${largest})`);
    } finally {
      await backend.close();
      await context.close();
      fs.rmSync(home, { recursive: true, force: true });
    }
  },
);
