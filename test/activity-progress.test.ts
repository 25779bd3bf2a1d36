/**
 * What the CLI's progress lines say about a workflow's pending activity: its heartbeat, and, when it is being
 * retried, why (a train step that waits for disk space said only "training" for ten minutes, session 27).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describePending, describeRetry, pendingActivity, type PendingActivity } from '../cli/activity-progress.js';
import { trajectoryWorkflowType } from '../workflows/contracts/trajectory.contract.js';
import type { PolicyBackend } from '../activities/ports/policy.port.js';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { agentWorkers } from './helpers/agent-workers.js';
import { openContext, uniquePrefix } from './helpers/stack.js';

test('describePending shows the engine progress, and a retried activity its attempt and last failure, cut to width', () => {
  const progress = { event: 'progress', step: 3, of: 12, loss: 1.5 };
  assert.equal(describePending({ progress, attempt: 1, lastFailure: null }), 'update 3/12 · loss 1.500');
  assert.equal(describePending(null), '');
  const waiting: PendingActivity = {
    progress,
    attempt: 35,
    lastFailure: 'trainStep: disk: /data/models/train has 6.8 GiB free and rl step 10\n needs about 7.3 GiB',
  };
  assert.equal(
    describePending(waiting),
    'retrying (attempt 35): trainStep: disk: /data/models/train has 6.8 GiB free and rl step 10 needs about 7.3 GiB',
  );
  const cut = describeRetry({ ...waiting, lastFailure: 'x'.repeat(500) }, 60);
  assert.equal(cut.length, 60);
  assert.ok(cut.endsWith('…'));
  assert.equal(describeRetry({ progress: null, attempt: 1, lastFailure: 'an old failure' }), '', 'the first attempt is no retry');
});

test('pendingActivity reads a retried activity’s attempt and last failure from the server', { timeout: 120_000 }, async () => {
  const context = await openContext(uniquePrefix('pending-activity'));
  try {
    const scripted = createScriptedPolicy();
    let failures = 0;
    const policy: PolicyBackend = {
      name: scripted.name,
      currentVersion: () => scripted.currentVersion(),
      capabilities: () => scripted.capabilities(),
      async generate(request, signal) {
        // Retryable failures (plain errors) for the first two attempts, as a full disk fails a train step.
        if (failures < 2) {
          failures += 1;
          throw new Error(`disk: 1.0 GiB free, the engine needs 2.0 GiB (failure ${failures})`);
        }
        return scripted.generate(request, signal);
      },
    };
    const workers = await agentWorkers(context, policy, createScriptedTools());
    const seen: PendingActivity[] = [];
    await workers.run(async () => {
      const handle = await context.client.workflow.start(trajectoryWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${context.queue('agent')}-retried`,
        args: [{ question: 'script:{"turns":2,"answer":"Lima"} What is the capital of Peru?', answers: ['Lima'] }],
      });
      const done = handle.result().then(() => true);
      while (!(await Promise.race([done, sleep(100).then(() => false)]))) {
        const pending = await pendingActivity(context.client, handle, 'generateTurn');
        if (pending) seen.push(pending);
      }
    });
    const retried = seen.find((pending) => pending.attempt >= 2 && pending.lastFailure !== null);
    assert.ok(retried, `a retry was seen among ${seen.length} polls: ${JSON.stringify(seen.slice(-3))}`);
    assert.match(retried.lastFailure!, /disk: 1\.0 GiB free, the engine needs 2\.0 GiB \(failure [12]\)/);
    assert.match(describePending(retried), /^retrying \(attempt [23]\): .*disk: 1\.0 GiB free/);
  } finally {
    await context.close();
  }
});
