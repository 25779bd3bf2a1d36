import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/activity';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { agentWorkers, type AgentWorkerOptions } from './helpers/agent-workers.js';
import { createFinishActivities } from '../activities/agent/finish.activities.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { errorTypes } from '../workflows/contracts/errors.js';
import {
  learnerStateQuery,
  learnerWorkflowType,
  type LearnerResult,
  type TrainStepInput,
} from '../workflows/contracts/learner.contract.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';

/** A question file of `count` two-turn scripted questions, under `<prefix>q.jsonl`. */
async function scriptedQuestions(context: TestContext, prefix: string, count: number): Promise<void> {
  const lines = Array.from({ length: count }, (_, index) =>
    JSON.stringify({ id: `q${index}`, question: `script:{"turns":2,"answer":"a","delayMs":20}`, answers: ['a'] }),
  );
  await context.blobs.put(`${prefix}q.jsonl`, lines.join('\n'));
}

/** A learner over the questions of scriptedQuestions: groups of 2, batches of 4, η 4, every group kept. */
function startLearner(context: TestContext, prefix: string, runId: string, maxSteps: number) {
  return context.client.workflow.start(learnerWorkflowType, {
    taskQueue: context.queue('agent'),
    workflowId: `${prefix}learner`,
    args: [
      {
        runId,
        datasetKey: `${prefix}q.jsonl`,
        settings: { groupSize: 2, batchSize: 4, maxSteps, eta: 4, dropEqualRewardGroups: false, interruptOnPublish: false },
      },
    ],
  });
}

/** Every queue's workers in this process (scripted policy and tools), with the test's own activities. */
function learnerWorkers(context: TestContext, extraActivities: AgentWorkerOptions['extraActivities']) {
  return agentWorkers(context, createScriptedPolicy(), createScriptedTools(), {
    roles: ['agent', 'gpu-infer', 'tools', 'gpu-train'],
    ...(extraActivities ? { extraActivities } : {}),
  });
}

test(
  'a trajectory child that fails for good is counted by the learner, its group is dropped, and the run goes on to the end of its data',
  { timeout: 300_000 },
  async () => {
    const prefix = uniquePrefix('child-failure');
    const context = await openContext(prefix);
    const runId = `${prefix}run`;
    const failing = `${runId}-q1-s1`;
    // Six questions of two samples: twelve children, one of which fails. Eight of the ten that finish
    // make two steps of four; the third step never fills, so the run ends when its data is used up, which
    // it only notices once every group has settled (before the fix, group q1 never did and the run hung).
    await scriptedQuestions(context, prefix, 6);
    const finish = createFinishActivities({ blobs: context.blobs, trajectories: createPgTrajectoryStore(context.pool) });
    const steps: TrainStepInput[] = [];
    try {
      const workers = await learnerWorkers(context, {
        agent: {
          async finishTrajectory(input: Parameters<typeof finish.finishTrajectory>[0]) {
            if ((input as { trajectoryId: string }).trajectoryId === failing)
              throw ApplicationFailure.nonRetryable('trajectoryId: refused by the test (a non-retryable failure)', errorTypes.invalidInput);
            return finish.finishTrajectory(input);
          },
        },
        'gpu-train': {
          async trainStep(input: TrainStepInput) {
            steps.push(input);
            await sleep(200);
            return { version: input.outputVersion, metrics: {} };
          },
        },
      });
      const handle = await startLearner(context, prefix, runId, 3);
      const result = await workers.run(async () => {
        const outcome = await Promise.race([handle.result() as Promise<LearnerResult>, sleep(120_000).then(() => undefined)]);
        if (outcome === undefined) {
          const state = await handle.query(learnerStateQuery);
          assert.fail(`the learner did not finish within 120 s: ${JSON.stringify({ ...state, history: undefined })}`);
        }
        return outcome;
      });
      assert.equal(result.failed, 1, 'the failed child is counted');
      assert.equal(result.steps, 2, 'two full batches from the ten children that finished');
      assert.equal(result.consumed, 8);
      assert.ok(
        steps.every((step) => !step.trajectoryIds.some((id) => id.startsWith(`${runId}-q1-`))),
        'the group with the failure is never trained on',
      );
      const { rows } = await context.pool.query<{ trajectory_id: string; state: string; reason: string | null }>(
        'SELECT trajectory_id, state, reason FROM buffer_uses WHERE run_id = $1 AND trajectory_id LIKE $2',
        [runId, `${runId}-q1-%`],
      );
      assert.deepEqual(
        rows.map((row) => [row.trajectory_id, row.state, row.reason]),
        [[`${runId}-q1-s0`, 'dropped', 'a trajectory of the group failed']],
        'the sibling that finished leaves the buffer as dropped, with the reason',
      );
      const failedChild = await context.client.workflow.getHandle(failing).describe();
      assert.equal(failedChild.status.name, 'FAILED');
    } finally {
      await context.close();
    }
  },
);

test('a train step refused for good fails the learner with its message instead of hanging it', { timeout: 300_000 }, async () => {
  const prefix = uniquePrefix('train-refused');
  const context = await openContext(prefix);
  const runId = `${prefix}run`;
  await scriptedQuestions(context, prefix, 4);
  let attempts = 0;
  try {
    const workers = await learnerWorkers(context, {
      'gpu-train': {
        async trainStep() {
          attempts += 1;
          // What the engine said of a fork of a trained version before stageVersion renamed its engine state.
          throw ApplicationFailure.nonRetryable(
            'trainStep: engine refused: basePolicy.modelDir /x/v000004 holds policy version 1, manifest says 4',
            errorTypes.invalidInput,
          );
        },
      },
    });
    const handle = await startLearner(context, prefix, runId, 2);
    const outcome = await workers.run(() =>
      Promise.race([
        handle.result().then(
          () => 'completed',
          (error: unknown) => error,
        ),
        sleep(120_000).then(() => 'still running after 120 s'),
      ]),
    );
    assert.ok(outcome instanceof Error, `the learner failed (got ${String(outcome)})`);
    const cause = (outcome as { cause?: { cause?: { message?: string } } }).cause?.cause?.message ?? '';
    assert.match(cause, /holds policy version 1, manifest says 4/);
    assert.equal(attempts, 1, 'a non-retryable refusal is not retried');
    assert.equal((await handle.describe()).status.name, 'FAILED');
  } finally {
    await context.close();
  }
});
