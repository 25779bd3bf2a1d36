/**
 * The learner and the warm start refuse bad train-step hyperparameters when they start (the
 * `checkHyperparameters` activity on the gpu-train queue, the same schema trainStep and sftStep
 * use), not at their first training step after a whole batch of rollouts: no trajectory child is
 * ever started and no step is tried.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { checkHyperparameters } from '../gpu/train/train-step.activities.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import { errorTypes } from '../workflows/contracts/errors.js';
import { learnerWorkflowType } from '../workflows/contracts/learner.contract.js';
import { warmStartWorkflowType } from '../workflows/contracts/warm-start.contract.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';

/** Workers for every queue; each train step tried is recorded (none should be). */
async function workers(context: TestContext, stepsTried: string[]) {
  return createInProcessAgent({
    config: context.config,
    blobs: context.blobs,
    pool: context.pool,
    prefix: context.config.taskQueuePrefix,
    backend: createScriptedPolicy({ version: () => 0 }),
    tools: createScriptedTools(),
    roles: ['agent', 'gpu-infer', 'tools', 'gpu-train'],
    extraActivities: {
      'gpu-train': {
        checkHyperparameters,
        async trainStep() {
          stepsTried.push('trainStep');
          throw new Error('no train step may run');
        },
        async sftStep() {
          stepsTried.push('sftStep');
          throw new Error('no sft step may run');
        },
      },
    },
  });
}

async function failureOf(
  context: TestContext,
  run: Promise<unknown>,
  workflowId: string,
): Promise<{ failure: ApplicationFailure; childrenStarted: number }> {
  const outcome = await run.then(
    () => undefined,
    (error: unknown) => error,
  );
  assert.ok(outcome instanceof WorkflowFailedError, `expected the workflow to fail, got ${String(outcome)}`);
  assert.ok(outcome.cause instanceof ActivityFailure, String(outcome.cause));
  assert.equal(outcome.cause.activityType, 'checkHyperparameters');
  assert.ok(outcome.cause.cause instanceof ApplicationFailure, String(outcome.cause.cause));
  const history = await context.client.workflow.getHandle(workflowId).fetchHistory();
  const childrenStarted = (history.events ?? []).filter((event) => event.startChildWorkflowExecutionInitiatedEventAttributes).length;
  return { failure: outcome.cause.cause, childrenStarted };
}

test(
  'a learner with a hyperparameter typo fails at start, naming it, before any trajectory child starts',
  { timeout: 120_000 },
  async () => {
    const prefix = uniquePrefix('learner-hyper');
    const context = await openContext(prefix);
    const stepsTried: string[] = [];
    try {
      await context.blobs.put(
        `${prefix}q.jsonl`,
        Array.from({ length: 8 }, (_, index) =>
          JSON.stringify({ id: `q${index}`, question: 'script:{"turns":1,"answer":"a"}', answers: ['a'] }),
        ).join('\n'),
      );
      const agent = await workers(context, stepsTried);
      const workflowId = `${prefix}learner`;
      const { failure, childrenStarted } = await failureOf(
        context,
        agent.run(() =>
          context.client.workflow.execute(learnerWorkflowType, {
            taskQueue: context.queue('agent'),
            workflowId,
            args: [
              {
                runId: `${prefix}run`,
                datasetKey: `${prefix}q.jsonl`,
                settings: { groupSize: 2, batchSize: 2, maxSteps: 1 },
                hyperparameters: { ppo: { clipEpsilonn: 0.3 } },
              },
            ],
          }),
        ),
        workflowId,
      );
      assert.deepEqual([failure.type, failure.nonRetryable], [errorTypes.invalidInput, true]);
      assert.match(
        failure.message,
        /^checkHyperparameters: hyperparameters\.ppo\.clipEpsilonn: unknown field \(expected one of: clipEpsilon,/,
      );
      assert.equal(childrenStarted, 0);
      assert.deepEqual(stepsTried, []);
    } finally {
      await context.close();
    }
  },
);

test(
  'a warm start with an out-of-range hyperparameter fails at start, naming it, before any trajectory child starts',
  { timeout: 120_000 },
  async () => {
    const prefix = uniquePrefix('warm-hyper');
    const context = await openContext(prefix);
    const stepsTried: string[] = [];
    try {
      await context.blobs.put(
        `${prefix}q.jsonl`,
        JSON.stringify({ id: 'q0', question: 'script:{"turns":1,"answer":"a"}', answers: ['a'], goldTurns: ['<answer>a</answer>'] }),
      );
      const agent = await workers(context, stepsTried);
      const workflowId = `${prefix}warm-start`;
      const { failure, childrenStarted } = await failureOf(
        context,
        agent.run(() =>
          context.client.workflow.execute(warmStartWorkflowType, {
            taskQueue: context.queue('agent'),
            workflowId,
            args: [{ runId: `${prefix}run`, datasetKey: `${prefix}q.jsonl`, hyperparameters: { learningRate: 2, epochs: 1 } }],
          }),
        ),
        workflowId,
      );
      assert.deepEqual([failure.type, failure.nonRetryable], [errorTypes.invalidInput, true]);
      assert.equal(failure.message, 'checkHyperparameters: hyperparameters.learningRate: Too big: expected number to be <=1');
      assert.equal(childrenStarted, 0);
      assert.deepEqual(stepsTried, []);
    } finally {
      await context.close();
    }
  },
);
