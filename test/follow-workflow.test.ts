/** followWorkflow, the CLI's one loop for following a started workflow, against a real skeleton workflow. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { createSkeletonActivities } from '../activities/skeleton.activities.js';
import { followWorkflow } from '../cli/follow-workflow.js';
import { createPgSkeletonStepStore } from '../infra/postgres/skeleton-step-store.pg.js';
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
