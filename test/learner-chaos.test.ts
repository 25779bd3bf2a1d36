import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from '@temporalio/worker';
import { checkHyperparameters } from '../gpu/train/train-step.activities.js';
import { connectWorker, dataConverter } from '../infra/temporal/connection.js';
import {
  learnerStateQuery,
  learnerWorkflowType,
  type LearnerResult,
  type TrainStepInput,
} from '../workflows/contracts/learner.contract.js';
import { openContext, spawnWorker, uniquePrefix, waitUntil } from './helpers/stack.js';

test(
  'a learner survives kill -9 of its worker mid-run: versions stay in order and no trajectory is lost or used twice',
  { timeout: 600_000 },
  async () => {
    const prefix = uniquePrefix('learner-kill');
    const env = { LONGHAUL_TASK_QUEUE_PREFIX: prefix, LONGHAUL_POLICY_BACKEND: 'scripted' };
    const context = await openContext(prefix);
    const lines = Array.from({ length: 120 }, (_, index) =>
      JSON.stringify({ id: `q${index}`, question: `script:{"turns":${2 + (index % 3)},"answer":"a","delayMs":100}`, answers: ['a'] }),
    );
    await context.blobs.put(`${prefix}q.jsonl`, lines.join('\n'));
    const steps: TrainStepInput[] = [];
    // The trainer is a latency model here (engine training is tested in train-step.test); it runs in this process.
    const trainer = await Worker.create({
      connection: await connectWorker(context.config),
      namespace: context.config.temporal.namespace,
      taskQueue: context.queue('gpu-train'),
      dataConverter: dataConverter(context.config, context.blobs),
      activities: {
        checkHyperparameters,
        async trainStep(input: TrainStepInput) {
          steps.push(input);
          await sleep(1500);
          return { version: input.outputVersion, metrics: {} };
        },
      },
    });
    const processes = { agent: spawnWorker('agent', env), infer: spawnWorker('gpu-infer', env), tools: spawnWorker('tools', env) };
    const running = trainer.run();
    try {
      await Promise.all(Object.values(processes).map((worker) => worker.ready));
      const runId = `${prefix}run`;
      const handle = await context.client.workflow.start(learnerWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}learner`,
        args: [
          {
            runId,
            datasetKey: `${prefix}q.jsonl`,
            settings: {
              groupSize: 2,
              batchSize: 4,
              maxSteps: 4,
              eta: 4,
              maxInflight: 8,
              dropEqualRewardGroups: false,
              interruptOnPublish: false,
            },
          },
        ],
      });
      await waitUntil(async () => (await handle.query(learnerStateQuery)).step >= 1, 240_000, 'the first training step');
      processes.agent.kill('SIGKILL');
      await new Promise((resolve) => processes.agent.once('exit', resolve));
      processes.agent = spawnWorker('agent', env);
      await processes.agent.ready;
      const result = (await handle.result()) as LearnerResult;

      assert.equal(result.steps, 4);
      assert.equal(result.finalVersion, 4);
      const completedSteps = [...new Map(steps.map((step) => [step.step, step])).values()].sort((a, b) => a.step - b.step);
      assert.deepEqual(
        completedSteps.map((step) => [step.step, step.baseVersion, step.outputVersion]),
        [
          [0, 0, 1],
          [1, 1, 2],
          [2, 2, 3],
          [3, 3, 4],
        ],
      );
      for (const step of steps) {
        assert.deepEqual(step.trajectoryIds, completedSteps[step.step]!.trajectoryIds, 'a retried step trains on the same batch');
      }
      const ids = completedSteps.flatMap((step) => step.trajectoryIds);
      assert.equal(new Set(ids).size, 16, 'no trajectory in two steps');
      const { rows } = await context.pool.query<{ n: string }>(
        "SELECT count(*) AS n FROM buffer_uses WHERE run_id = $1 AND state = 'consumed'",
        [runId],
      );
      assert.equal(Number(rows[0]!.n), 16, 'exactly the trained trajectories are marked consumed');
      const finished = await context.pool.query<{ n: string }>('SELECT count(*) AS n FROM trajectories WHERE run_id = $1', [runId]);
      assert.ok(Number(finished.rows[0]!.n) >= 16, 'every trajectory the learner started and saw finish has its record');
    } finally {
      for (const worker of Object.values(processes)) worker.kill('SIGKILL');
      trainer.shutdown();
      await running.catch(() => undefined);
      await context.close();
    }
  },
);
