import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WorkflowStartInput } from '@temporalio/client';
import { onWorkflowStarted, refuseStarts, startedWorkflowTracker } from './started-workflows.js';

const input = (workflowId: string) =>
  ({ workflowType: 'demo', options: { workflowId, taskQueue: 'agent' }, headers: {} }) as unknown as WorkflowStartInput;

test('the tracker reports a start, and after refuseStarts fails every start before it reaches the server', async () => {
  const seen: string[] = [];
  onWorkflowStarted((workflow) => seen.push(`${workflow.workflowId}@${workflow.firstExecutionRunId}`));
  const sent: string[] = [];
  const next = async (start: WorkflowStartInput) => {
    sent.push(start.options.workflowId);
    return 'run-1';
  };
  assert.equal(await startedWorkflowTracker.start!(input('before'), next), 'run-1');
  assert.deepEqual(seen, ['before@run-1']);
  refuseStarts(new Error('interrupted by SIGINT: no new workflow is started'));
  await assert.rejects(startedWorkflowTracker.start!(input('after'), next), /interrupted by SIGINT/);
  assert.deepEqual(sent, ['before'], 'the refused start never reached the server');
  assert.deepEqual(seen, ['before@run-1']);
});
