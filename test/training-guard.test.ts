/**
 * Two runs training at once on one stack race for the same policy version numbers: the commands that
 * start training refuse while a learner or warm start of another run is running (cli/training-guard.ts).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { refuseConcurrentTraining } from '../cli/training-guard.js';
import { LonghaulError } from '../workflows/contracts/errors.js';
import { learnerWorkflowType } from '../workflows/contracts/learner.contract.js';
import { openContext, uniquePrefix } from './helpers/stack.js';

test('a command that starts training is refused while another run trains on the stack, naming it', async () => {
  const prefix = uniquePrefix('guard');
  const context = await openContext(prefix);
  // A learner on a queue no worker polls: running, as far as the server knows, until terminated.
  const workflowId = `${prefix}learner`;
  const handle = await context.client.workflow.start(learnerWorkflowType, {
    taskQueue: `${prefix}nobody`,
    workflowId,
    args: [{}],
  });
  try {
    let refusal: unknown;
    for (let attempt = 0; attempt < 50 && refusal === undefined; attempt += 1) {
      refusal = await refuseConcurrentTraining(context.client, []).then(
        () => undefined,
        (error: unknown) => error,
      );
      if (refusal === undefined) await sleep(100); // visibility catches up
    }
    assert.ok(LonghaulError.is(refusal), String(refusal));
    assert.equal(refusal.code, 'LonghaulInvalidInput');
    assert.match(refusal.message, /^stack: .+ \((learner|warmStart)\) is training on this stack now; policy versions are global/);
    // Its own workflow never refuses a run (a resumed demo finds its learner running).
    const others = await refuseConcurrentTraining(context.client, [workflowId]).then(
      () => '',
      (error: unknown) => String(error),
    );
    assert.doesNotMatch(others, new RegExp(workflowId));
  } finally {
    await handle.terminate('test over');
    await context.close();
  }
});
