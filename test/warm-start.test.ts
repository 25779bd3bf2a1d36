/**
 * The warm-start workflow end to end on real workers: gold solution paths replayed through the agent
 * loop by teacher forcing on the onnx policy (the tiny model), scored by the real reward, filtered by
 * minReward, and trained with sftStep by the real engine on a spawned gpu-train worker into one new
 * registered version. Bad input fails at once, naming the field.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { publishPolicyVersion } from '../gpu/infer/policy-store.js';
import { tinyModelDir } from './doubles/test-model.js';
import { BpeTokenizer } from '../gpu/infer/tokenizer.js';
import { trainingOf } from '../gpu/train/version-files.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { warmStartWorkflowType, type WarmStartResult } from '../workflows/contracts/warm-start.contract.js';
import { openContext, spawnWorker, uniquePrefix, type TestContext } from './helpers/stack.js';

const gold = (city: string, answer = city) => [
  `<think>I will look up ${city}.</think>\n<search>capital ${city}</search>`,
  `<think>Found it.</think>\n<answer>${answer}</answer>`,
];

describe('the warm-start workflow', () => {
  const prefix = uniquePrefix('warm');
  let context: TestContext;
  let base: number;
  let modelDir: string;
  const workers: ReturnType<typeof spawnWorker>[] = [];

  before(async () => {
    context = await openContext(prefix);
    modelDir = await tinyModelDir();
    base = 5_000_000 + 10 * Math.floor(Math.random() * 100_000); // versions are global: keep apart from other tests
    await publishPolicyVersion({ blobs: context.blobs, versions: createPgPolicyVersionStore(context.pool), modelDir, version: base });
    const env = {
      LONGHAUL_TASK_QUEUE_PREFIX: prefix,
      LONGHAUL_POLICY_BACKEND: 'onnx',
      LONGHAUL_POLICY_VERSION: String(base),
      LONGHAUL_ONNX_THREADS: '1',
    };
    for (const role of ['agent', 'tools', 'gpu-infer', 'gpu-train'] as const) workers.push(spawnWorker(role, env));
    await Promise.all(workers.map((worker) => worker.ready));
  });
  after(async () => {
    for (const worker of workers) worker.kill('SIGTERM');
    await context.close();
  });

  it(
    'replays gold paths by teacher forcing, keeps the rewarded ones and trains one sft version on them',
    { timeout: 300_000 },
    async () => {
      const rows = [
        { id: 'w0', question: 'What is the capital of Freedonia?', answers: ['Fredville'], goldTurns: gold('Fredville') },
        { id: 'w1', question: 'What is the capital of Sylvania?', answers: ['Sylvan City'], goldTurns: gold('Sylvan City') },
        {
          id: 'w2',
          question: 'What is the capital of Grand Fenwick?',
          answers: ['Fenwick Town'],
          goldTurns: gold('Fenwick Town', 'Nowhere'),
        }, // a wrong gold path
        { id: 'w3', question: 'What is the capital of Ruritania?', answers: ['Strelsau'] }, // no gold path
      ];
      const datasetKey = `${prefix}gold.jsonl`;
      await context.blobs.put(datasetKey, rows.map((row) => JSON.stringify(row)).join('\n'));
      const runId = `${prefix}sft`;
      const result = (await context.client.workflow.execute(warmStartWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}warm-start`,
        args: [
          {
            runId,
            datasetKey,
            startVersion: base,
            settings: { source: 'gold', concurrency: 2 },
            trajectory: { limits: { maxTurns: 4, maxNewTokensPerTurn: 8 }, options: { maxObservationChars: 300 }, rewardMetric: 'em' },
            hyperparameters: { learningRate: 1e-3, epochs: 3, batchSize: 2, microBatchSize: 2 },
          },
        ],
      })) as WarmStartResult;

      assert.deepEqual([result.questions, result.skipped, result.started, result.finished, result.kept], [4, 1, 3, 3, 2]);
      assert.equal(result.phase, 'done');
      assert.deepEqual([result.startVersion, result.finalVersion], [base, base + 1]);
      assert.equal(result.steps.length, 1);
      const metrics = result.steps[0]!.metrics as { optimizerSteps: number; losses: number[]; samples: number };
      assert.equal(metrics.optimizerSteps, 3); // 3 epochs × one batch of 2
      assert.ok(metrics.losses.at(-1)! < metrics.losses[0]!, `the loss falls on its own data: ${metrics.losses.join(' → ')}`);
      const row = await createPgPolicyVersionStore(context.pool).get(base + 1);
      assert.equal(row?.parentVersion, base);
      assert.equal(trainingOf(row!)?.kind, 'sft');

      // The kept trajectories are the gold paths as the policy's own tokens, scored under the base version.
      const tokenizer = BpeTokenizer.fromFile(path.join(modelDir, 'tokenizer.json'));
      const stored = await createPgTrajectoryStore(context.pool).get(`${runId}-q0-s0`);
      assert.equal(stored?.reward, 1);
      const record = JSON.parse((await context.blobs.get(stored!.recordKey)).toString('utf8')) as {
        turnRecords: { tokenIds: number[]; logprobs: number[]; tokenVersions: number[] }[];
      };
      assert.equal(record.turnRecords.length, 2);
      record.turnRecords.forEach((turn, index) => {
        assert.deepEqual(turn.tokenIds, tokenizer.encode(rows[0]!.goldTurns![index]!));
        assert.ok(turn.logprobs.every((logprob) => Number.isFinite(logprob) && logprob <= 0));
        assert.ok(turn.tokenVersions.every((version) => version === base));
      });
      assert.equal((await createPgTrajectoryStore(context.pool).get(`${runId}-q2-s0`))?.reward, 0); // run, scored, not kept
    },
  );

  it('refuses bad input at once, naming the field', async () => {
    const start = (args: unknown, id: string) =>
      context.client.workflow.execute(warmStartWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}${id}`,
        args: [args],
      });
    const failure = async (promise: Promise<unknown>) => {
      const error = await promise.then(
        () => undefined,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof WorkflowFailedError);
      const messages: string[] = [];
      for (let cause: Error | undefined = error.cause; cause; cause = cause.cause as Error | undefined) messages.push(cause.message);
      return messages.join(' ← ');
    };
    assert.match(await failure(start({ runId: 'r', datasetKey: 'k', settings: { source: 'teacher' } }, 'bad-source')), /settings\.source/);
    assert.match(
      await failure(start({ runId: 'r', datasetKey: 'k', settings: { concurrency: 0 } }, 'bad-concurrency')),
      /settings\.concurrency/,
    );
    await context.blobs.put(
      `${prefix}empty-gold.jsonl`,
      JSON.stringify({ id: 'x', question: 'q?', answers: ['a'], goldTurns: ['<answer>a</answer>', '  '] }),
    );
    assert.match(
      await failure(start({ runId: `${prefix}bad`, datasetKey: `${prefix}empty-gold.jsonl` }, 'bad-gold')),
      /empty-gold\.jsonl:1: goldTurns\.1: a gold turn must not be empty/,
    );
  });
});
