import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openContext, spawnWorker, uniquePrefix, waitUntil } from './helpers/stack.js';
import { skeletonStateQuery, skeletonWorkflowType, type SkeletonResult } from '../workflows/contracts/skeleton.contract.js';
import { createPgSkeletonStepStore } from '../infra/postgres/skeleton-step-store.pg.js';

test('a skeleton trajectory survives kill -9 of its worker and completes with exactly 50 rows and 50 objects', async () => {
  const prefix = uniquePrefix('kill');
  const context = await openContext(prefix);
  const env = { LONGHAUL_TASK_QUEUE_PREFIX: prefix };
  let worker = spawnWorker('agent', env);
  try {
    await worker.ready;
    const workflowId = `${prefix}skeleton`;
    const handle = await context.client.workflow.start(skeletonWorkflowType, {
      taskQueue: context.queue('agent'),
      workflowId,
      args: [{ steps: 50, stepDelayMs: 60 }],
    });
    await waitUntil(async () => (await handle.query(skeletonStateQuery)).completedSteps >= 15, 60_000, '15 completed steps');
    worker.kill('SIGKILL');
    await new Promise((resolve) => worker.once('exit', resolve));
    const midway = (await handle.describe()).status.name;
    assert.equal(midway, 'RUNNING', 'the workflow outlives its worker');

    worker = spawnWorker('agent', env);
    await worker.ready;
    const result = (await handle.result()) as SkeletonResult;
    assert.equal(result.steps, 50);

    const rows = await createPgSkeletonStepStore(context.pool).list(workflowId);
    assert.deepEqual(
      rows.map((row) => row.step),
      Array.from({ length: 50 }, (_, index) => index),
      'no gap, no duplicate',
    );
    const objects = await context.blobs.list(`skeleton/${workflowId}/`);
    assert.equal(objects.length, 50);
    assert.deepEqual(
      objects,
      rows.map((row) => row.blobKey),
    );
  } finally {
    worker.kill('SIGKILL');
    await context.close();
  }
});
