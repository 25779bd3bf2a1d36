/**
 * The learner's evaluation request (`evaluation.everyVersions`): after publishing every N-th version
 * it starts an `evaluation` child it abandons, and trains on without waiting for it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowNotFoundError } from '@temporalio/client';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import {
  learnerWorkflowType,
  type LearnerInput,
  type LearnerResult,
  type TrainStepInput,
} from '../workflows/contracts/learner.contract.js';
import { openContext, uniquePrefix, waitUntil } from './helpers/stack.js';

test('the learner starts an abandoned evaluation after every 2nd version and trains on while it runs', { timeout: 400_000 }, async () => {
  const prefix = uniquePrefix('learner-eval');
  const context = await openContext(prefix);
  let served = 0;
  const stepStarts: number[] = [];
  try {
    const lines = (count: number, script: (index: number) => string) =>
      Array.from({ length: count }, (_, index) =>
        JSON.stringify({ id: `q${index}`, question: `script:${script(index)}`, answers: ['a'] }),
      ).join('\n');
    await context.blobs.put(
      `${prefix}train.jsonl`,
      lines(40, (index) => `{"turns":${1 + (index % 2)},"answer":"${index % 3 ? 'a' : 'b'}","delayMs":20}`),
    );
    // Evaluation samples are slow (2 turns × 2.5 s each): an evaluation outlasts the training steps after it.
    await context.blobs.put(
      `${prefix}eval.jsonl`,
      lines(2, () => '{"turns":2,"answer":"a","delayMs":2500}'),
    );
    const scripted = createScriptedPolicy({ version: () => served });
    const workers = await createInProcessAgent({
      config: context.config,
      blobs: context.blobs,
      pool: context.pool,
      prefix: context.config.taskQueuePrefix,
      backend: scripted,
      tools: createScriptedTools(),
      roles: ['agent', 'gpu-infer', 'tools', 'gpu-train'],
      extraActivities: {
        'gpu-train': {
          trainStep: async (input: TrainStepInput) => {
            stepStarts.push(Date.now());
            served = input.outputVersion;
            return { version: input.outputVersion, metrics: {} };
          },
        },
      },
    });
    const runId = `${prefix}run`;
    const input: LearnerInput = {
      runId,
      datasetKey: `${prefix}train.jsonl`,
      settings: { groupSize: 2, batchSize: 2, maxSteps: 5, eta: 2, dropEqualRewardGroups: false },
      evaluation: {
        everyVersions: 2,
        datasetKey: `${prefix}eval.jsonl`,
        dataset: 'slow-unit',
        datasetVersion: 'sha-learner-eval',
        questions: 2,
        k: 1,
        trajectory: { limits: { maxTurns: 4 } },
      },
    };
    const evaluationId = (version: number) => `evaluation-${runId}-v${version}`;
    const { result, atEnd } = await workers.run(async () => {
      const finished = (await context.client.workflow.execute(learnerWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}learner`,
        args: [input],
      })) as LearnerResult;
      const statuses = await Promise.all(
        [2, 4].map(async (version) => (await context.client.workflow.getHandle(evaluationId(version)).describe()).status.name),
      );
      // Abandoned: they finish after the learner, on the same workers.
      for (const version of [2, 4])
        await waitUntil(
          async () => (await context.client.workflow.getHandle(evaluationId(version)).describe()).status.name === 'COMPLETED',
          180_000,
          `the evaluation of v${version}`,
        );
      return { result: finished, atEnd: statuses };
    });
    assert.equal(result.finalVersion, 5);
    assert.equal(atEnd[1], 'RUNNING', 'the learner finished while the evaluation of v4 was still running');

    // The learner did not wait: the step after v2 started before v2's evaluation closed.
    const v2 = await context.client.workflow.getHandle(evaluationId(2)).describe();
    assert.ok(v2.closeTime && stepStarts[2]! < v2.closeTime.getTime(), 'step 3 started while the evaluation of v2 ran');
    assert.equal(v2.parentExecution?.workflowId, `${prefix}learner`);

    for (const version of [1, 3, 5])
      await assert.rejects(
        context.client.workflow.getHandle(evaluationId(version)).describe(),
        WorkflowNotFoundError,
        `no evaluation of v${version}`,
      );
    const rows = await context.pool.query<{ result_id: string; policy_version: number; questions: number }>(
      'SELECT result_id, policy_version, questions FROM evaluation_results WHERE run_id = $1 ORDER BY policy_version',
      [runId],
    );
    assert.deepEqual(
      rows.rows.map((row) => [row.result_id, row.policy_version, row.questions]),
      [
        [`${runId}-v2`, 2, 2],
        [`${runId}-v4`, 4, 2],
      ],
    );
  } finally {
    await context.close();
  }
});
