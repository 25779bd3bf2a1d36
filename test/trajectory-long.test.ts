import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { trajectoryWorkflowType, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import { agentWorkers } from './helpers/agent-workers.js';
import { openContext, uniquePrefix } from './helpers/stack.js';

test(
  'a 1,000-turn trajectory completes, continuing as new, with every history far below Temporal limits',
  { timeout: 900_000 },
  async () => {
    const context = await openContext(uniquePrefix('long'));
    try {
      const workers = await agentWorkers(context, createScriptedPolicy(), createScriptedTools());
      const workflowId = `${context.queue('agent')}-1000`;
      const startedAt = Date.now();
      const result = (await workers.run(() =>
        context.client.workflow.execute(trajectoryWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId,
          args: [{ question: 'script:{"turns":1000,"answer":"done"}', answers: ['done'], limits: { maxTurns: 1000 } }],
        }),
      )) as TrajectoryResult;
      const seconds = (Date.now() - startedAt) / 1000;
      assert.equal(result.stopReason, 'answered');
      assert.equal(result.turns, 1000);
      assert.equal(result.reward, 1);

      const runs: { events: number; bytes: number }[] = [];
      for await (const execution of context.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
        const described = await context.client.workflow.getHandle(workflowId, execution.runId).describe();
        runs.push({ events: described.historyLength, bytes: described.historySize ?? 0 });
      }
      const maxEvents = Math.max(...runs.map((run) => run.events));
      const maxBytes = Math.max(...runs.map((run) => run.bytes));
      console.log(
        `1000-turn trajectory: ${seconds.toFixed(1)} s, ${runs.length} runs (continue-as-new), largest history ${maxEvents} events / ${maxBytes} bytes`,
      );
      assert.ok(runs.length >= 2, 'continued as new at least once');
      assert.ok(maxEvents <= 10_240, `largest history has ${maxEvents} events`);
      assert.ok(maxBytes <= 4 * 1024 * 1024, `largest history is ${maxBytes} bytes`);
    } finally {
      await context.close();
    }
  },
);
