import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { agentWorkers } from './helpers/agent-workers.js';
import { learnerWorkflowType, type LearnerResult, type TrainStepInput } from '../workflows/contracts/learner.contract.js';
import { cancelLeftoverRollouts } from '../cli/leftover-rollouts.js';
import { openContext, uniquePrefix } from './helpers/stack.js';

test(
  "the trajectories still generating when a learner ends are cancelled by the command that waited for it, and only that run's",
  { timeout: 300_000 },
  async () => {
    const prefix = uniquePrefix('leftover-rollouts');
    const context = await openContext(prefix);
    const runId = `${prefix}run`;
    // q0 answers at once; q1–q3 take 40 turns of 100 ms, so they are still generating when the one step ends.
    const lines = Array.from({ length: 4 }, (_, index) =>
      JSON.stringify({
        id: `q${index}`,
        question: `script:{"turns":${index === 0 ? 1 : 40},"answer":"a","delayMs":${index === 0 ? 10 : 100}}`,
        answers: ['a'],
      }),
    );
    await context.blobs.put(`${prefix}q.jsonl`, lines.join('\n'));
    try {
      const workers = await agentWorkers(context, createScriptedPolicy(), createScriptedTools(), {
        roles: ['agent', 'gpu-infer', 'tools', 'gpu-train'],
        extraActivities: {
          'gpu-train': {
            async trainStep(input: TrainStepInput) {
              return { version: input.outputVersion, metrics: {} };
            },
          },
        },
      });
      const { result, cancelled, statuses, otherRun } = await workers.run(async () => {
        // A trajectory of another run, generating at the same time: not this run's to cancel.
        const other = await context.client.workflow.start('trajectory', {
          taskQueue: context.queue('agent'),
          workflowId: `${prefix}other`,
          args: [{ runId: `${prefix}other-run`, question: 'script:{"turns":30,"answer":"a","delayMs":100}', answers: ['a'] }],
        });
        const result = (await context.client.workflow.execute(learnerWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: `${prefix}learner`,
          args: [
            {
              runId,
              datasetKey: `${prefix}q.jsonl`,
              settings: {
                groupSize: 2,
                batchSize: 2,
                maxSteps: 1,
                eta: 4,
                maxInflight: 8,
                dropEqualRewardGroups: false,
                interruptOnPublish: false,
              },
            },
          ],
        })) as LearnerResult;
        // The children set the run's search attribute in their first workflow task; visibility follows.
        let cancelled = 0;
        for (let attempt = 0; attempt < 20 && cancelled === 0; attempt += 1) {
          cancelled = await cancelLeftoverRollouts(context.client, runId);
          if (cancelled === 0) await sleep(250);
        }
        // Cancellation is a request: each child ends once its worker runs the cancelled workflow task.
        let statuses: Record<string, string> = {};
        for (let attempt = 0; attempt < 60; attempt += 1) {
          statuses = {};
          for await (const execution of context.client.workflow.list({ query: `WorkflowId STARTS_WITH '${runId}-q'` }))
            statuses[execution.workflowId] = execution.status.name;
          if (!Object.values(statuses).includes('RUNNING')) break;
          await sleep(500);
        }
        const otherRun = (await other.describe()).status.name;
        await other.terminate('test over');
        return { result, cancelled, statuses, otherRun };
      });
      assert.equal(result.steps, 1);
      assert.ok(cancelled >= 2, `cancelled: ${cancelled}`);
      const ended = Object.entries(statuses).filter(([, status]) => status === 'CANCELLED');
      assert.equal(ended.length, cancelled, JSON.stringify(statuses));
      assert.ok(!Object.values(statuses).includes('RUNNING'), `none left running: ${JSON.stringify(statuses)}`);
      assert.equal(statuses[`${runId}-q0-s0`], 'COMPLETED');
      assert.equal(otherRun, 'RUNNING', "another run's trajectory is left alone");
    } finally {
      await context.close();
    }
  },
);
