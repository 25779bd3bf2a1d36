/**
 * Cheap tools as local activities (issue 12): a turn whose every call is local runs in the agent
 * worker, its result recorded in the history (a marker), instead of a tools-queue round trip.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import { createAccessTool } from '../activities/tools/access.tool.js';
import { createAnswerTool } from '../activities/tools/answer.tool.js';
import { ToolRegistry } from '../activities/tools/registry.js';
import { createSearchTool } from '../activities/tools/search.tool.js';
import { createWebFetchTool } from '../activities/tools/web-fetch.tool.js';
import type { PageFetcher, SearchEngine } from '../activities/ports/search.port.js';
import { transcriptKeys } from '../activities/agent/transcript.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import { trajectoryWorkflowType, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import type { ToolCall } from '../workflows/contracts/tools.contract.js';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';

type History = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>;

const question = 'script:{"turns":4,"answer":"Lima"} What is the capital of Peru?';

/** Activities scheduled on task queues, and local activities recorded (markers), by type. */
function tally(events: History) {
  const scheduled = events.flatMap((event) => event.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
  const markers = events.flatMap((event) => event.markerRecordedEventAttributes?.markerName ?? []);
  return {
    queued: (type: string) => scheduled.filter((name) => name === type).length,
    localActivities: markers.filter((name) => name === 'core_local_activity').length,
    workflowTasks: events.filter((event) => event.workflowTaskCompletedEventAttributes).length,
  };
}

async function runOne(
  context: TestContext,
  name: string,
  runsLocally: ((call: ToolCall) => boolean) | null,
  options: Record<string, unknown> = {},
): Promise<{ result: TrajectoryResult; history: History; localCalls: string[]; queueCalls: string[]; workflowId: string }> {
  const localCalls: string[] = [];
  const queueCalls: string[] = [];
  const local = createScriptedTools((key, index) => localCalls.push(`${key}#${index}`));
  const agent = await createInProcessAgent({
    config: context.config,
    blobs: context.blobs,
    pool: context.pool,
    backend: createScriptedPolicy(),
    tools: createScriptedTools((key, index) => queueCalls.push(`${key}#${index}`)),
    ...(runsLocally ? { localTools: { runTools: local.runTools, runsLocally } } : {}),
    prefix: context.config.taskQueuePrefix,
  });
  const workflowId = `${context.queue('agent')}-${name}`;
  const result = (await agent.run(() =>
    context.client.workflow.execute(trajectoryWorkflowType, {
      taskQueue: context.queue('agent'),
      workflowId,
      args: [{ question, answers: ['Lima'], options }],
    }),
  )) as TrajectoryResult;
  const history = (await context.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  return { result, history, localCalls, queueCalls, workflowId };
}

test('turns of local tool calls run as recorded local activities in the agent worker: one workflow task and one activity a turn', async () => {
  const context = await openContext(uniquePrefix('localtools'));
  try {
    const { result, history, localCalls, queueCalls, workflowId } = await runOne(context, 'local', (call) => call.tool === 'search');
    assert.equal(result.stopReason, 'answered');
    assert.equal(result.turns, 4);
    assert.equal(result.reward, 1);
    assert.equal(localCalls.length, 3, 'three searches, each run once, in the agent worker');
    assert.equal(queueCalls.length, 0, 'nothing on the tools queue');
    const counts = tally(history);
    assert.equal(counts.queued('runTurnTools'), 0);
    assert.equal(counts.localActivities, 3, 'each tool turn recorded as a local activity marker');
    assert.equal(counts.queued('generateTurn'), 4);
    // One workflow task per turn (the tool calls run inside it), and the last one after finishTrajectory.
    assert.ok(counts.workflowTasks <= result.turns + 2, `${counts.workflowTasks} workflow tasks for ${result.turns} turns`);
    // The same turn records as on the tools queue: the transcript (and the training record) sees no difference.
    for (let turn = 0; turn < 3; turn += 1) {
      const record = JSON.parse((await context.blobs.get(transcriptKeys.tools(workflowId, turn))).toString()) as { results: unknown[] };
      assert.equal(record.results.length, 1);
    }
  } finally {
    await context.close();
  }
});

test('a turn with a call its tool keeps remote, and a trajectory with localTools false, use the tools queue', async () => {
  const context = await openContext(uniquePrefix('queuetools'));
  try {
    const remote = await runOne(context, 'remote', () => false);
    assert.equal(remote.result.stopReason, 'answered');
    assert.equal(remote.localCalls.length, 0, 'a remote call never runs in the agent worker');
    assert.equal(remote.queueCalls.length, 3);
    assert.equal(tally(remote.history).queued('runTurnTools'), 3);
    assert.equal(tally(remote.history).localActivities, 3, 'the local activity looked and left each turn to the queue');

    const off = await runOne(context, 'off', () => true, { localTools: false });
    assert.equal(off.result.reward, 1);
    assert.equal(off.localCalls.length, 0);
    assert.equal(off.queueCalls.length, 3);
    assert.equal(tally(off.history).localActivities, 0, 'localTools false: no local activity at all');
    assert.equal(tally(off.history).queued('runTurnTools'), 3);
  } finally {
    await context.close();
  }
});

test('which calls a tool declares local: search and document reads on a local engine, never a URL or a remote tool', () => {
  const engine = {} as SearchEngine;
  const fetcher = {} as PageFetcher;
  const local = new ToolRegistry([
    createSearchTool(engine, { localEngine: true }),
    createAccessTool(engine, { localEngine: true, fetcher }),
    createAnswerTool(),
    createWebFetchTool(fetcher, 5000),
  ]);
  assert.equal(local.runsLocally({ tool: 'search', input: { query: 'Peru' } }), true);
  assert.equal(local.runsLocally({ tool: 'access', input: { target: 'doc-1' } }), true);
  assert.equal(local.runsLocally({ tool: 'access', input: { target: 'https://example.org/' } }), false, 'a URL is fetched: remote');
  assert.equal(local.runsLocally({ tool: 'answer', input: { answer: 'Lima' } }), true);
  assert.equal(local.runsLocally({ tool: 'web_fetch', input: { url: 'https://example.org/' } }), false, 'no declaration: the tools queue');
  assert.equal(local.runsLocally({ tool: 'nope', input: {} }), true, 'an unknown tool is answered in memory');
  assert.equal(local.runsLocally({ tool: 'search', input: { query: 7 } }), true, 'input failing the schema is answered in memory');
  const remoteEngine = new ToolRegistry([createSearchTool(engine), createAccessTool(engine)]);
  assert.equal(
    remoteEngine.runsLocally({ tool: 'search', input: { query: 'Peru' } }),
    false,
    'dense or hybrid engines call an embeddings server',
  );
  assert.equal(remoteEngine.runsLocally({ tool: 'access', input: { target: 'doc-1' } }), false);
});
