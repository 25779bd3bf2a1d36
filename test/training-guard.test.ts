/**
 * Two runs training at once on one stack race for the same policy version numbers: the commands that
 * start training refuse while a learner or warm start of another run is running (cli/training-guard.ts).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { refuseConcurrentTraining, refuseUsedRunIds } from '../cli/training-guard.js';
import { createPgReportSource } from '../infra/postgres/report-source.pg.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { LonghaulError } from '../workflows/contracts/errors.js';
import { learnerWorkflowType } from '../workflows/contracts/learner.contract.js';
import { openContext, uniquePrefix } from './helpers/stack.js';
import { writeTrajectory } from './helpers/trajectories.js';

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

test('a run id that already has trajectories is refused, naming the flag: a new run under it would replay them', async () => {
  const prefix = uniquePrefix('usedrun');
  const context = await openContext(prefix);
  try {
    const source = createPgReportSource(context.pool);
    const used = `${prefix}used`;
    // Under another run id but named like this run's rollouts (an old evaluation named like the run): counted too.
    const named = `${prefix}named`;
    await writeTrajectory({ blobs: context.blobs, trajectories: createPgTrajectoryStore(context.pool) }, used, {
      id: `${used}-q0-s0`,
      questionId: 'q0',
      reward: 1,
      version: 0,
    });
    await writeTrajectory({ blobs: context.blobs, trajectories: createPgTrajectoryStore(context.pool) }, `eval-${named}`, {
      id: `${named}-q3-s0`,
      questionId: 'q3',
      reward: 0,
      version: 0,
    });
    await refuseUsedRunIds(source, [`${prefix}fresh`], 'run-id'); // nothing under it: no refusal
    for (const runId of [used, named]) {
      const refusal = await refuseUsedRunIds(source, [`${prefix}fresh`, runId], 'run-id').then(
        () => undefined,
        (error: unknown) => error,
      );
      assert.ok(LonghaulError.is(refusal), String(refusal));
      assert.equal(refusal.code, 'LonghaulInvalidInput');
      assert.equal(
        refusal.message,
        `--run-id: run "${runId}" already has 1 trajectories on this stack; a new run under the same id would replay them instead of sampling its own. Choose another --run-id (\`longhaul report --run ${runId}\` shows the old one)`,
      );
    }
  } finally {
    await context.close();
  }
});
