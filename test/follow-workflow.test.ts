/** followWorkflow, the CLI's one loop for following a started workflow, against a real skeleton workflow. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowFailedError } from '@temporalio/client';
import { createSkeletonActivities } from '../activities/skeleton.activities.js';
import { followWorkflow } from '../cli/follow-workflow.js';
import { createPgSkeletonStepStore } from '../infra/postgres/skeleton-step-store.pg.js';
import { connectClient } from '../infra/temporal/connection.js';
import {
  skeletonStateQuery,
  skeletonWorkflowType,
  type SkeletonResult,
  type SkeletonState,
} from '../workflows/contracts/skeleton.contract.js';
import { inProcessWorker, openContext, uniquePrefix } from './helpers/stack.js';

test(
  'followWorkflow hands each state to the drawing, returns the result, and throws the failure of a failed workflow',
  { timeout: 120_000 },
  async () => {
    const context = await openContext(uniquePrefix('follow'));
    try {
      const worker = await inProcessWorker(
        context,
        'agent',
        createSkeletonActivities({ blobs: context.blobs, steps: createPgSkeletonStepStore(context.pool) }),
      );
      await worker.runUntil(async () => {
        const seen: number[] = [];
        const handle = await context.client.workflow.start(skeletonWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${context.queue('agent')}-ok`,
          args: [{ steps: 4, stepDelayMs: 200 }],
        });
        const result = await followWorkflow<SkeletonResult, SkeletonState>(handle, {
          query: skeletonStateQuery,
          intervalMs: 50,
          onState: (state) => {
            seen.push(state.completedSteps);
          },
        });
        assert.equal(result.steps, 4);
        assert.ok(seen.length > 0, 'the drawing got at least one state');
        assert.deepEqual(
          seen,
          [...seen].sort((a, b) => a - b),
          `states in order: ${seen.join(',')}`,
        );
        assert.ok(seen.every((steps) => steps >= 0 && steps <= 4));

        const bad = await context.client.workflow.start(skeletonWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${context.queue('agent')}-bad`,
          args: [{ steps: 'many' }],
        });
        await assert.rejects(
          followWorkflow(bad, { query: skeletonStateQuery, intervalMs: 50, onState: () => undefined }),
          (error: unknown) =>
            error instanceof WorkflowFailedError && error.cause?.message === 'steps: expected an integer between 1 and 100000, got "many"',
        );
      });
    } finally {
      await context.close();
    }
  },
);

/** A TCP relay to the real Temporal server that can be cut (listener closed, connections dropped) and restored. */
async function relay(
  upstream: string,
): Promise<{ address: string; cut(): Promise<void>; restore(): Promise<void>; close(): Promise<void> }> {
  const [host, port] = [upstream.slice(0, upstream.lastIndexOf(':')), Number(upstream.slice(upstream.lastIndexOf(':') + 1))];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const toTemporal = net.connect(port, host);
    for (const socket of [client, toTemporal]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(toTemporal).pipe(client);
  });
  const listen = (at: number) => new Promise<void>((resolve) => server.listen(at, '127.0.0.1', resolve));
  await listen(0);
  const relayPort = (server.address() as net.AddressInfo).port;
  const cut = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return { address: `127.0.0.1:${relayPort}`, cut, restore: () => listen(relayPort), close: cut };
}

test(
  'followWorkflow waits through a Temporal server that cannot be reached for longer than the SDK retries, and returns the result',
  { timeout: 180_000 },
  async () => {
    const context = await openContext(uniquePrefix('follow-outage'));
    const link = await relay(context.config.temporal.address);
    try {
      const client = await connectClient(
        { ...context.config, temporal: { ...context.config.temporal, address: link.address } },
        context.blobs,
      );
      const worker = await inProcessWorker(
        context,
        'agent',
        createSkeletonActivities({ blobs: context.blobs, steps: createPgSkeletonStepStore(context.pool) }),
      );
      await worker.runUntil(async () => {
        const handle = await client.workflow.start(skeletonWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${context.queue('agent')}-outage`,
          args: [{ steps: 4, stepDelayMs: 500 }],
        });
        const retries: number[] = [];
        const following = followWorkflow<SkeletonResult, SkeletonState>(handle, {
          query: skeletonStateQuery,
          intervalMs: 100,
          onState: () => undefined,
          onRetry: (_error, failingForMs) => retries.push(failingForMs),
        });
        const settled = following.then(
          () => 'resolved',
          (error: Error) => `rejected: ${error.message}`,
        );
        await sleep(200);
        // The SDK retries an unreachable server by itself for ~20 s (10 attempts, 1.7× backoff capped at 5 s); 35 s is beyond that.
        await link.cut();
        await sleep(35_000);
        assert.equal(await Promise.race([settled, sleep(0).then(() => 'pending')]), 'pending', 'still waiting during the outage');
        await link.restore();
        const result = await following;
        assert.equal(result.steps, 4, 'the result of the workflow that ran on meanwhile');
        assert.ok(retries.length > 0, 'the wait was taken up again at least once');
        await client.connection.close();
      });
    } finally {
      await link.close().catch(() => undefined);
      await context.close();
    }
  },
);
