import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowFailedError } from '@temporalio/client';
import { createScriptedPolicy } from '../activities/agent/scripted-policy.js';
import { createScriptedTools } from '../activities/agent/scripted-tools.js';
import { createBufferActivities } from '../activities/buffer.activities.js';
import { createLearnerActivities } from '../activities/learner.activities.js';
import { checkHyperparameters } from '../gpu/train/train-step.activities.js';
import { createPgTrajectoryBuffer } from '../infra/postgres/buffer.pg.js';
import { createInProcessAgent } from '../workers/in-process-agent.js';
import { learnerStateQuery, learnerWorkflowType, pauseUpdate, resumeUpdate, type LearnerResult, type TrainStepInput } from '../workflows/contracts/learner.contract.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';

async function learnerWorkers(context: TestContext, trainStep: (input: TrainStepInput) => Promise<{ version: number; metrics: Record<string, unknown> }>, version: () => number) {
  return createInProcessAgent({
    config: context.config, blobs: context.blobs, pool: context.pool, prefix: context.config.taskQueuePrefix,
    backend: createScriptedPolicy({ version }), tools: createScriptedTools(), roles: ['agent', 'gpu-infer', 'tools', 'gpu-train'],
    extraActivities: {
      agent: { ...createLearnerActivities({ blobs: context.blobs }), ...createBufferActivities({ buffer: createPgTrajectoryBuffer(context.pool) }) },
      'gpu-train': { trainStep, checkHyperparameters },
    },
  });
}

async function uploadQuestions(context: TestContext, key: string, count: number, answerFor: (index: number) => string) {
  const lines = Array.from({ length: count }, (_, index) => JSON.stringify({ id: `q${index}`, question: `script:{"turns":${1 + (index % 4)},"answer":"${answerFor(index)}","delayMs":30}`, answers: ['a'] }));
  await context.blobs.put(key, lines.join('\n'));
}

test('the async learner trains on every step with versions in order, each trajectory used once and never staler than η', { timeout: 300_000 }, async () => {
  const prefix = uniquePrefix('learner');
  const context = await openContext(prefix);
  let served = 0;
  const steps: TrainStepInput[] = [];
  try {
    await uploadQuestions(context, `${prefix}q.jsonl`, 40, (index) => (index % 3 === 0 ? 'b' : 'a'));
    const workers = await learnerWorkers(context, async (input) => {
      steps.push(input);
      await sleep(500);
      served = input.outputVersion;
      return { version: input.outputVersion, metrics: {} };
    }, () => served);
    const runId = `${prefix}run`;
    const result = await workers.run(() => context.client.workflow.execute(learnerWorkflowType, {
      taskQueue: context.queue('agent'), workflowId: `${prefix}learner`,
      args: [{ runId, datasetKey: `${prefix}q.jsonl`, settings: { groupSize: 2, batchSize: 4, maxSteps: 3, eta: 1, dropEqualRewardGroups: false } }],
    })) as LearnerResult;
    assert.equal(result.steps, 3);
    assert.equal(result.finalVersion, 3);
    assert.deepEqual(steps.map((step) => [step.step, step.baseVersion, step.outputVersion]), [[0, 0, 1], [1, 1, 2], [2, 2, 3]]);
    const ids = steps.flatMap((step) => step.trajectoryIds);
    assert.equal(new Set(ids).size, ids.length, 'no trajectory in two steps');
    assert.ok(result.maxStaleness <= 1, `staleness ${result.maxStaleness} within η=1`);
    const { rows } = await context.pool.query<{ n: string }>("SELECT count(*) AS n FROM buffer_uses WHERE run_id = $1 AND state = 'consumed'", [runId]);
    assert.equal(Number(rows[0]!.n), 12);
    // Each step's mean reward is that of the batch it trained on (the trajectories' stored rewards).
    for (const [index, step] of steps.entries()) {
      const stored = await context.pool.query<{ reward: number }>('SELECT reward FROM trajectories WHERE trajectory_id = ANY($1)', [step.trajectoryIds]);
      const expected = stored.rows.reduce((sum, row) => sum + Number(row.reward), 0) / stored.rows.length;
      assert.ok(Math.abs(result.history[index]!.meanReward - expected) < 1e-9, `step ${index}: mean reward ${result.history[index]!.meanReward}, batch mean ${expected}`);
    }
  } finally {
    await context.close();
  }
});

test('groups whose rewards are all equal are dropped, never trained on', { timeout: 300_000 }, async () => {
  const prefix = uniquePrefix('learner-drop');
  const context = await openContext(prefix);
  const steps: TrainStepInput[] = [];
  try {
    // even questions answer right, odd ones wrong: every group is all-equal, so nothing is trainable
    await uploadQuestions(context, `${prefix}q.jsonl`, 6, (index) => (index % 2 === 0 ? 'a' : 'b'));
    const workers = await learnerWorkers(context, async (input) => { steps.push(input); return { version: input.outputVersion, metrics: {} }; }, () => 0);
    const result = await workers.run(() => context.client.workflow.execute(learnerWorkflowType, {
      taskQueue: context.queue('agent'), workflowId: `${prefix}learner`,
      args: [{ runId: `${prefix}run`, datasetKey: `${prefix}q.jsonl`, settings: { groupSize: 2, batchSize: 2, maxSteps: 2 } }],
    })) as LearnerResult;
    assert.equal(steps.length, 0);
    assert.equal(result.steps, 0, 'the learner stops when the data runs out');
    assert.equal(result.dropped, 12);
  } finally {
    await context.close();
  }
});

test('pause stops admitting rollouts and resume continues; bad settings are refused naming the field', { timeout: 300_000 }, async () => {
  const prefix = uniquePrefix('learner-pause');
  const context = await openContext(prefix);
  try {
    await uploadQuestions(context, `${prefix}q.jsonl`, 20, () => 'a');
    const workers = await learnerWorkers(context, async (input) => ({ version: input.outputVersion, metrics: {} }), () => 0);
    const outcome = await workers.run(async () => {
      const bad = await context.client.workflow.execute(learnerWorkflowType, {
        taskQueue: context.queue('agent'), workflowId: `${prefix}bad`, args: [{ runId: 'r', datasetKey: 'k', settings: { groupSize: 1 } }],
      }).then(() => undefined, (error: unknown) => error);
      assert.ok(bad instanceof WorkflowFailedError);
      assert.equal(bad.cause?.message, 'settings.groupSize: must be at least 2 when dropEqualRewardGroups is on (a group of one always has equal rewards)');
      const negative = await context.client.workflow.execute(learnerWorkflowType, {
        taskQueue: context.queue('agent'), workflowId: `${prefix}bad-eta`, args: [{ runId: 'r', datasetKey: 'k', settings: { eta: -1 } }],
      }).then(() => undefined, (error: unknown) => error);
      assert.equal((negative as WorkflowFailedError).cause?.message, 'settings.eta: expected an integer between 0 and 1000, got -1');

      const handle = await context.client.workflow.start(learnerWorkflowType, {
        taskQueue: context.queue('agent'), workflowId: `${prefix}learner`,
        args: [{ runId: `${prefix}run`, datasetKey: `${prefix}q.jsonl`, settings: { groupSize: 2, batchSize: 2, maxSteps: 2, dropEqualRewardGroups: false } }],
      });
      const paused = await handle.executeUpdate(pauseUpdate);
      assert.equal(paused.paused, true);
      await sleep(1500);
      const state = await handle.query(learnerStateQuery);
      assert.ok(state.finished + state.inflight <= 4, 'no new groups while paused beyond what was admitted first');
      await handle.executeUpdate(resumeUpdate);
      return (await handle.result()) as LearnerResult;
    });
    assert.equal(outcome.steps, 2);
  } finally {
    await context.close();
  }
});
