import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createSkeletonActivities } from '../activities/skeleton.activities.js';
import { createPgSkeletonStepStore } from '../infra/postgres/skeleton-step-store.pg.js';
import { payloadRoundTripWorkflowType, type PayloadRoundTripResult } from '../workflows/contracts/skeleton.contract.js';
import { inProcessWorker, openContext, uniquePrefix } from './helpers/stack.js';

test('a 5 MiB activity result round-trips through a workflow while history holds only blob references', async () => {
  const context = await openContext(uniquePrefix('payload'));
  try {
    const worker = await inProcessWorker(
      context,
      'agent',
      createSkeletonActivities({ blobs: context.blobs, steps: createPgSkeletonStepStore(context.pool) }),
    );
    const bytes = 5 * 1024 * 1024;
    const workflowId = `${context.queue('agent')}-payload`;
    const result = (await worker.runUntil(
      context.client.workflow.execute(payloadRoundTripWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId,
        args: [{ bytes }],
      }),
    )) as PayloadRoundTripResult;

    assert.equal(result.payload.length, bytes);
    assert.equal(result.bytes, bytes);
    assert.equal(result.sha256, createHash('sha256').update(result.payload).digest('hex'));

    // The raw history as the server stores it: fetched without our codec, so references stay references.
    const raw = await context.client.workflowService.getWorkflowExecutionHistory({
      namespace: context.config.temporal.namespace,
      execution: { workflowId },
    });
    const historyBytes = JSON.stringify(raw.history).length;
    assert.ok(historyBytes < 64 * 1024, `history is ${historyBytes} bytes; a 5 MiB payload must not be inside it`);
    const stored = await context.blobs.list('payloads/');
    assert.ok(stored.length >= 1, 'large payloads live in the blob store');
  } finally {
    await context.close();
  }
});
