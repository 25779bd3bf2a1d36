import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowFailedError } from '@temporalio/client';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import {
  learnerStateQuery,
  learnerWorkflowType,
  pauseUpdate,
  resumeUpdate,
  type LearnerResult,
  type TrainStepInput,
} from '../workflows/contracts/learner.contract.js';
import { openContext, uniquePrefix, waitUntil, type TestContext } from './helpers/stack.js';

/** @param beforeGenerate awaited before each generation (a gate the test opens). */
async function learnerWorkers(
  context: TestContext,
  trainStep: (input: TrainStepInput) => Promise<{ version: number; metrics: Record<string, unknown> }>,
  version: () => number,
  beforeGenerate: () => Promise<void> = async () => undefined,
) {
  const scripted = createScriptedPolicy({ version });
  return createInProcessAgent({
    config: context.config,
    blobs: context.blobs,
    pool: context.pool,
    prefix: context.config.taskQueuePrefix,
    backend: {
      ...scripted,
      generate: async (request, signal) => {
        await beforeGenerate();
        return scripted.generate(request, signal);
      },
    },
    tools: createScriptedTools(),
    roles: ['agent', 'gpu-infer', 'tools', 'gpu-train'],
    extraActivities: {
      'gpu-train': { trainStep },
    },
  });
}

async function uploadQuestions(context: TestContext, key: string, count: number, answerFor: (index: number) => string) {
  const lines = Array.from({ length: count }, (_, index) =>
    JSON.stringify({
      id: `q${index}`,
      question: `script:{"turns":${1 + (index % 4)},"answer":"${answerFor(index)}","delayMs":30}`,
      answers: ['a'],
    }),
  );
  await context.blobs.put(key, lines.join('\n'));
}

test(
  'the async learner trains on every step with versions in order, each trajectory used once and never staler than η',
  { timeout: 300_000 },
  async () => {
    const prefix = uniquePrefix('learner');
    const context = await openContext(prefix);
    let served = 0;
    const steps: TrainStepInput[] = [];
    try {
      await uploadQuestions(context, `${prefix}q.jsonl`, 40, (index) => (index % 3 === 0 ? 'b' : 'a'));
      const workers = await learnerWorkers(
        context,
        async (input) => {
          steps.push(input);
          await sleep(500);
          served = input.outputVersion;
          // The engine's phases ride in its metrics; a non-number is not a phase.
          return { version: input.outputVersion, metrics: { proximalSeconds: 0.25, updateSeconds: 0.5, saveSeconds: 'x', loss: 1 } };
        },
        () => served,
      );
      const runId = `${prefix}run`;
      const result = (await workers.run(() =>
        context.client.workflow.execute(learnerWorkflowType, {
          taskQueue: context.queue('agent'),
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
      assert.equal(result.steps, 3);
      assert.equal(result.zeroAdvantageGroupShare, 1, 'every group had equal rewards');
      assert.ok(
        result.history.some((stats) => stats.groupsSettled !== undefined),
        'steps report the groups settled before them',
      );
      assert.equal(result.finalVersion, 3);
      assert.deepEqual(
        result.history.map((stats) => stats.trainPhases),
        Array.from({ length: 3 }, () => ({ proximalSeconds: 0.25, updateSeconds: 0.5 })),
        "each step's stats say where its training time went",
      );
      assert.deepEqual(
        steps.map((step) => [step.step, step.baseVersion, step.outputVersion]),
        [
          [0, 0, 1],
          [1, 1, 2],
          [2, 2, 3],
        ],
      );
      const ids = steps.flatMap((step) => step.trajectoryIds);
      assert.equal(new Set(ids).size, ids.length, 'no trajectory in two steps');
      // Staleness from what is stored, not from the learner's bookkeeping: each step's claimed batch
      // (buffer_batches, buffer_uses) and the policy version of every token of its trajectories (their records).
      const eta = 1;
      for (const step of steps) {
        const batch = await context.pool.query<{ trajectory_ids: string[]; current_version: number; eta: number }>(
          'SELECT trajectory_ids, current_version, eta FROM buffer_batches WHERE run_id = $1 AND step = $2',
          [runId, step.step],
        );
        assert.deepEqual(
          batch.rows.map((row) => [[...row.trajectory_ids].sort(), row.current_version, row.eta]),
          [[[...step.trajectoryIds].sort(), step.baseVersion, eta]],
          `step ${step.step}: the stored claim is the batch trained on`,
        );
        const stored = await context.pool.query<{ trajectory_id: string; record_key: string }>(
          `SELECT t.trajectory_id, t.record_key FROM buffer_uses u JOIN trajectories t USING (trajectory_id)
         WHERE u.run_id = $1 AND u.step = $2 AND u.state = 'consumed'`,
          [runId, step.step],
        );
        assert.equal(
          stored.rows.length,
          step.trajectoryIds.length,
          `step ${step.step}: every trajectory of the batch is stored as consumed by it`,
        );
        for (const row of stored.rows) {
          const record = JSON.parse((await context.blobs.get(row.record_key)).toString()) as { turnRecords: { tokenVersions: number[] }[] };
          const versions = record.turnRecords.flatMap((turn) => turn.tokenVersions);
          assert.ok(versions.length > 0, `${row.trajectory_id}: has generated tokens`);
          const oldest = Math.min(...versions);
          const newest = Math.max(...versions);
          assert.ok(
            oldest >= 0 && step.baseVersion - oldest <= eta,
            `step ${step.step} (base ${step.baseVersion}): ${row.trajectory_id} has a token of version ${oldest}, staler than η=${eta}`,
          );
          assert.ok(
            newest <= step.baseVersion,
            `step ${step.step} (base ${step.baseVersion}): ${row.trajectory_id} has a token of version ${newest}, newer than the base`,
          );
        }
      }
      const { rows } = await context.pool.query<{ n: string }>(
        "SELECT count(*) AS n FROM buffer_uses WHERE run_id = $1 AND state = 'consumed'",
        [runId],
      );
      assert.equal(Number(rows[0]!.n), 12);
      // Each step's mean reward is that of the batch it trained on (the trajectories' stored rewards).
      for (const [index, step] of steps.entries()) {
        const stored = await context.pool.query<{ reward: number }>('SELECT reward FROM trajectories WHERE trajectory_id = ANY($1)', [
          step.trajectoryIds,
        ]);
        const expected = stored.rows.reduce((sum, row) => sum + Number(row.reward), 0) / stored.rows.length;
        assert.ok(
          Math.abs(result.history[index]!.meanReward - expected) < 1e-9,
          `step ${index}: mean reward ${result.history[index]!.meanReward}, batch mean ${expected}`,
        );
        // Every sample of a question gives the same scripted answer: each settled group has zero advantage.
        if (result.history[index]!.groupsSettled !== undefined)
          assert.equal(result.history[index]!.zeroAdvantageGroupShare, 1, `step ${index}: share of zero-advantage groups`);
      }
    } finally {
      await context.close();
    }
  },
);

test('groups whose rewards are all equal are dropped, never trained on', { timeout: 300_000 }, async () => {
  const prefix = uniquePrefix('learner-drop');
  const context = await openContext(prefix);
  const steps: TrainStepInput[] = [];
  try {
    // even questions answer right, odd ones wrong: every group is all-equal, so nothing is trainable
    await uploadQuestions(context, `${prefix}q.jsonl`, 6, (index) => (index % 2 === 0 ? 'a' : 'b'));
    const workers = await learnerWorkers(
      context,
      async (input) => {
        steps.push(input);
        return { version: input.outputVersion, metrics: {} };
      },
      () => 0,
    );
    const result = (await workers.run(() =>
      context.client.workflow.execute(learnerWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}learner`,
        args: [{ runId: `${prefix}run`, datasetKey: `${prefix}q.jsonl`, settings: { groupSize: 2, batchSize: 2, maxSteps: 2 } }],
      }),
    )) as LearnerResult;
    assert.equal(steps.length, 0);
    assert.equal(result.steps, 0, 'the learner stops when the data runs out');
    assert.equal(result.dropped, 12);
    assert.equal(result.zeroAdvantageGroupShare, 1, 'all 6 groups had equal rewards: zero advantage');
  } finally {
    await context.close();
  }
});

test('pause stops admitting rollouts and resume continues; bad settings are refused naming the field', { timeout: 300_000 }, async () => {
  const prefix = uniquePrefix('learner-pause');
  const context = await openContext(prefix);
  try {
    await uploadQuestions(context, `${prefix}q.jsonl`, 20, () => 'a');
    let openGate: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    const workers = await learnerWorkers(
      context,
      async (input) => ({ version: input.outputVersion, metrics: {} }),
      () => 0,
      () => gate,
    );
    const outcome = await workers.run(async () => {
      const bad = await context.client.workflow
        .execute(learnerWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${prefix}bad`,
          args: [{ runId: 'r', datasetKey: 'k', settings: { groupSize: 1 } }],
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      assert.ok(bad instanceof WorkflowFailedError);
      assert.equal(
        bad.cause?.message,
        'settings.groupSize: must be at least 2 when dropEqualRewardGroups is on (a group of one always has equal rewards)',
      );
      const negative = await context.client.workflow
        .execute(learnerWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${prefix}bad-eta`,
          args: [{ runId: 'r', datasetKey: 'k', settings: { eta: -1 } }],
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      assert.equal((negative as WorkflowFailedError).cause?.message, 'settings.eta: expected an integer between 0 and 1000, got -1');

      const handle = await context.client.workflow.start(learnerWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}learner`,
        args: [
          {
            runId: `${prefix}run`,
            datasetKey: `${prefix}q.jsonl`,
            settings: { groupSize: 2, batchSize: 2, maxSteps: 2, maxInflight: 2, dropEqualRewardGroups: false },
          },
        ],
      });
      // Pause while the first group is held in generation (maxInflight admits one group at a time), let it
      // finish, then wait until it was reported and trained on: an unpaused learner would have admitted
      // the next group by then.
      const startedChildren = async () =>
        ((await handle.fetchHistory()).events ?? []).filter((event) => event.startChildWorkflowExecutionInitiatedEventAttributes).length;
      await waitUntil(
        async () => (await handle.query(learnerStateQuery)).inflight > 0 && (await startedChildren()) === 2,
        60_000,
        'a group in flight, both its children started',
      );
      const paused = await handle.executeUpdate(pauseUpdate);
      assert.equal(paused.paused, true);
      openGate();
      await waitUntil(
        async () => {
          const state = await handle.query(learnerStateQuery);
          return state.paused && state.inflight === 0 && !state.training && state.ready < 2 && state.step === 1;
        },
        120_000,
        'the admitted group finished and trained on while paused',
      );
      const events = (await handle.fetchHistory()).events ?? [];
      const pausedAt = events.findIndex(
        (event) => event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'pause',
      );
      assert.ok(pausedAt > 0, 'the pause is in the history');
      const childStarts = (from: number, to = events.length) =>
        events.slice(from, to).filter((event) => event.startChildWorkflowExecutionInitiatedEventAttributes).length;
      assert.equal(childStarts(0, pausedAt), 2, 'one group started before the pause');
      assert.equal(childStarts(pausedAt), 0, 'no child started while paused');
      await handle.executeUpdate(resumeUpdate);
      return (await handle.result()) as LearnerResult;
    });
    assert.equal(outcome.steps, 2);
  } finally {
    await context.close();
  }
});
