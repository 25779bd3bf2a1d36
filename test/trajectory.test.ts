import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { trajectoryWorkflowType, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import { agentWorkers } from './helpers/agent-workers.js';
import { openContext, uniquePrefix } from './helpers/stack.js';

test('a scripted trajectory searches, answers, and writes one record with its reward', { timeout: 180_000 }, async () => {
  const context = await openContext(uniquePrefix('traj'));
  const calls: string[] = [];
  try {
    const workers = await agentWorkers(
      context,
      createScriptedPolicy(),
      createScriptedTools((key, index) => calls.push(`${key}#${index}`)),
    );
    const workflowId = `${context.queue('agent')}-lima`;
    const result = (await workers.run(() =>
      context.client.workflow.execute(trajectoryWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId,
        args: [
          {
            question: 'script:{"turns":4,"answer":"Lima"} What is the capital of Peru?',
            answers: ['Lima'],
            questionId: 'q1',
            dataset: 'unit',
          },
        ],
      }),
    )) as TrajectoryResult;
    assert.equal(result.stopReason, 'answered');
    assert.equal(result.turns, 4);
    assert.equal(result.answer, 'Lima');
    assert.equal(result.reward, 1);
    assert.deepEqual(result.rewardParts, { em: 1, f1: 1, cover_em: 1, format: 1, f1_format: 1, em_format: 1 });
    assert.equal(calls.length, 3, 'three searches, each run once');
    const row = await createPgTrajectoryStore(context.pool).get(workflowId);
    assert.equal(row?.turns, 4);
    assert.equal(row?.stopReason, 'answered');
    const record = JSON.parse((await context.blobs.get(result.recordKey)).toString()) as {
      turnRecords: { tokenIds: number[]; logprobs: number[]; tokenVersions: number[]; tools: unknown[] }[];
    };
    assert.equal(record.turnRecords.length, 4);
    for (const turn of record.turnRecords) {
      assert.equal(turn.logprobs.length, turn.tokenIds.length);
      assert.equal(turn.tokenVersions.length, turn.tokenIds.length);
    }
    assert.deepEqual(
      record.turnRecords.map((turn) => turn.tools.length),
      [1, 1, 1, 0],
    );
  } finally {
    await context.close();
  }
});

test(
  'malformed model output becomes invalid steps and the trajectory goes on, then stops at the invalid limit',
  { timeout: 180_000 },
  async () => {
    const context = await openContext(uniquePrefix('invalid'));
    try {
      const workers = await agentWorkers(context, createScriptedPolicy(), createScriptedTools());
      const result = (await workers.run(() =>
        context.client.workflow.execute(trajectoryWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${context.queue('agent')}-bad-output`,
          args: [{ question: 'script:{"turns":50,"invalidEvery":2}', answers: ['x'], limits: { maxInvalidSteps: 3 } }],
        }),
      )) as TrajectoryResult;
      assert.equal(result.stopReason, 'invalid');
      assert.equal(result.turns, 6, 'turns 2, 4, 6 were invalid');
      assert.equal(result.reward, 0);
      assert.equal(result.rewardParts.format, 0.25);
    } finally {
      await context.close();
    }
  },
);

test(
  "em_format and f1_format rewards take the trajectory's format weight and credit; a sentence that contains the gold earns F1 credit, not EM",
  { timeout: 180_000 },
  async () => {
    const context = await openContext(uniquePrefix('format-reward'));
    try {
      const workers = await agentWorkers(context, createScriptedPolicy(), createScriptedTools());
      const sentence = 'The capital of Peru is Lima';
      const run = (rewardMetric: string, suffix: string, credit?: string) =>
        context.client.workflow.execute(trajectoryWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${context.queue('agent')}-${suffix}`,
          args: [
            {
              question: `script:{"turns":2,"answer":"${sentence}"} What is the capital of Peru?`,
              answers: ['Lima'],
              rewardMetric,
              rewardFormatWeight: 0.3,
              ...(credit ? { rewardFormatCredit: credit } : {}),
            },
          ],
        }) as Promise<TrajectoryResult>;
      const [em, emAlways, f1] = await workers.run(() =>
        Promise.all([run('em_format', 'em'), run('em_format', 'em-always', 'always'), run('f1_format', 'f1')]),
      );
      assert.equal(em.answer, sentence);
      assert.equal(em.rewardParts.em, 0);
      assert.equal(em.rewardParts.format, 1);
      assert.equal(em.reward, 0, `em_format of an answer with EM 0 earns no format credit by default: ${em.reward}`);
      assert.ok(
        Math.abs(emAlways.reward - 0.3) < 1e-12,
        `em_format at w = 0.3, credit "always", is the format term alone: ${emAlways.reward}`,
      );
      const expected = 0.7 * f1.rewardParts.f1! + 0.3;
      assert.ok(f1.rewardParts.f1! > 0 && Math.abs(f1.reward - expected) < 1e-12, `f1_format at w = 0.3: ${f1.reward} ≠ ${expected}`);
    } finally {
      await context.close();
    }
  },
);

test('the turn limit ends a trajectory that never answers; rewardUnanswered is its reward', { timeout: 180_000 }, async () => {
  const context = await openContext(uniquePrefix('limit'));
  try {
    const workers = await agentWorkers(context, createScriptedPolicy(), createScriptedTools());
    const run = (suffix: string, extra: Record<string, unknown>) =>
      context.client.workflow.execute(trajectoryWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${context.queue('agent')}-${suffix}`,
        args: [{ question: 'script:{"turns":100}', answers: ['Lima'], limits: { maxTurns: 5 }, ...extra }],
      }) as Promise<TrajectoryResult>;
    const [result, penalised, answered] = await workers.run(() =>
      Promise.all([
        run('limit', {}),
        run('limit-unanswered', { rewardMetric: 'f1_format', rewardUnanswered: -0.25 }),
        context.client.workflow.execute(trajectoryWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${context.queue('agent')}-answered-unanswered`,
          args: [{ question: 'script:{"turns":1,"answer":"Paris"} q', answers: ['Lima'], rewardMetric: 'em', rewardUnanswered: -0.25 }],
        }) as Promise<TrajectoryResult>,
      ]),
    );
    assert.equal(result.stopReason, 'max_turns');
    assert.equal(result.turns, 5);
    assert.equal(result.answer, null);
    assert.equal(result.reward, 0, 'no answer earns 0 by default');
    assert.equal(penalised.stopReason, 'max_turns');
    assert.equal(penalised.reward, -0.25, 'no answer earns rewardUnanswered whatever the metric');
    assert.equal(answered.answer, 'Paris');
    assert.equal(answered.reward, 0, 'a wrong answer still earns the metric (0), not rewardUnanswered');
  } finally {
    await context.close();
  }
});

test('trajectory input is validated at the edge with the field named', { timeout: 180_000 }, async () => {
  const context = await openContext(uniquePrefix('traj-input'));
  try {
    const workers = await agentWorkers(context, createScriptedPolicy(), createScriptedTools());
    const outcome = await workers.run(() =>
      context.client.workflow
        .execute(trajectoryWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${context.queue('agent')}-bad`,
          args: [{ question: 'q', limits: { maxTurns: 0 } }],
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        ),
    );
    assert.ok(outcome instanceof WorkflowFailedError);
    assert.equal(outcome.cause?.message, 'limits.maxTurns: expected an integer between 1 and 100000, got 0');
  } finally {
    await context.close();
  }
});
