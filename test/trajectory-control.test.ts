import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import {
  interruptSignal,
  setPolicyVersionUpdate,
  trajectoryStateQuery,
  trajectoryWorkflowType,
  type TrajectoryResult,
} from '../workflows/contracts/trajectory.contract.js';
import { agentWorkers } from './helpers/agent-workers.js';
import { openContext, uniquePrefix, waitUntil } from './helpers/stack.js';

test('an interrupted generation is resubmitted under the new version and keeps the tokens it had', { timeout: 180_000 }, async () => {
  const context = await openContext(uniquePrefix('interrupt'));
  let served = 0;
  // The scripted policy asks for the version once per token it generates: count those calls.
  let tokensGenerated = 0;
  const scripted = createScriptedPolicy({
    version: () => {
      tokensGenerated += 1;
      return served;
    },
  });
  try {
    const workers = await agentWorkers(context, { ...scripted, currentVersion: async () => served }, createScriptedTools());
    const handle = await context.client.workflow.start(trajectoryWorkflowType, {
      taskQueue: context.queue('agent'),
      workflowId: `${context.queue('agent')}-interrupt`,
      args: [{ question: 'script:{"turns":2,"answer":"Lima","tokenDelayMs":40}', answers: ['Lima'] }],
    });
    const result = await workers.run(async () => {
      await waitUntil(
        async () => (await handle.query(trajectoryStateQuery)).generating && tokensGenerated >= 3,
        30_000,
        'three tokens generated under version 0',
      );
      served = 1;
      assert.equal(await handle.executeUpdate(setPolicyVersionUpdate, { args: [1] }), 1);
      await handle.signal(interruptSignal);
      const finished = (await handle.result()) as TrajectoryResult;
      assert.equal((await handle.query(trajectoryStateQuery)).policyVersion, 1);
      return finished;
    });
    assert.equal(result.stopReason, 'answered');
    assert.deepEqual(result.versionsUsed, [0, 1], 'the first turn mixes tokens of versions 0 and 1');
    const record = JSON.parse((await context.blobs.get(result.recordKey)).toString()) as {
      turnRecords: { interruptions: number; tokenVersions: number[]; text: string }[];
    };
    const first = record.turnRecords[0]!;
    assert.equal(first.interruptions, 1);
    assert.equal(first.text, '<think>step 0</think>\n<search>query 0</search>', 'no token lost or repeated across the interruption');
    assert.equal(first.tokenVersions[0], 0);
    assert.equal(first.tokenVersions.at(-1), 1);
  } finally {
    await context.close();
  }
});

test('setPolicyVersion rejects a negative version without touching the trajectory', { timeout: 120_000 }, async () => {
  const context = await openContext(uniquePrefix('version'));
  try {
    const workers = await agentWorkers(context, createScriptedPolicy(), createScriptedTools());
    const handle = await context.client.workflow.start(trajectoryWorkflowType, {
      taskQueue: context.queue('agent'),
      workflowId: `${context.queue('agent')}-version`,
      args: [{ question: 'script:{"turns":3,"delayMs":200}' }],
    });
    await workers.run(async () => {
      await assert.rejects(
        handle.executeUpdate(setPolicyVersionUpdate, { args: [-1] }),
        (error: Error) => error.cause instanceof Error && error.cause.message === 'policyVersion must be a non-negative integer, got -1',
      );
      const result = (await handle.result()) as TrajectoryResult;
      assert.deepEqual(result.versionsUsed, [0]);
      assert.equal((await handle.query(trajectoryStateQuery)).policyVersion, 0);
    });
  } finally {
    await context.close();
  }
});

test('cancelling a trajectory leaves a clean partial record', { timeout: 120_000 }, async () => {
  const context = await openContext(uniquePrefix('cancel'));
  try {
    const workers = await agentWorkers(context, createScriptedPolicy(), createScriptedTools());
    const workflowId = `${context.queue('agent')}-cancel`;
    const handle = await context.client.workflow.start(trajectoryWorkflowType, {
      taskQueue: context.queue('agent'),
      workflowId,
      args: [{ question: 'script:{"turns":100,"delayMs":100}', answers: ['x'] }],
    });
    const outcome = await workers.run(async () => {
      await waitUntil(async () => (await handle.query(trajectoryStateQuery)).turn >= 3, 60_000, 'three turns');
      await handle.cancel();
      return handle.result().then(
        () => undefined,
        (error: unknown) => error,
      );
    });
    assert.ok(outcome instanceof WorkflowFailedError);
    assert.equal((await handle.describe()).status.name, 'CANCELLED');
    const row = await createPgTrajectoryStore(context.pool).get(workflowId);
    assert.equal(row?.stopReason, 'cancelled');
    assert.ok((row?.turns ?? 0) >= 3);
    const record = JSON.parse((await context.blobs.get(row!.recordKey)).toString()) as { turnRecords: unknown[] };
    assert.equal(record.turnRecords.length, row!.turns);
  } finally {
    await context.close();
  }
});
