import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ToolActivities, ToolResult } from '../workflows/contracts/tools.contract.js';
import { trajectoryWorkflowType, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import { readJson, transcriptKeys, type GenerationRecord } from '../activities/agent/transcript.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { createPgTrajectoryForkStore } from '../infra/postgres/trajectory-fork-store.pg.js';
import { repoRoot } from '../infra/paths.js';
import { planFork, runFork, type ForkDependencies } from '../cli/fork.js';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { agentWorkers } from './helpers/agent-workers.js';
import { openContext, uniquePrefix, type TestContext } from './helpers/stack.js';

const run = promisify(execFile);
const QUESTION = 'script:{"turns":5,"answer":"Lima","vary":true} What is the capital of Peru?';

function dependencies(context: TestContext): ForkDependencies {
  return {
    client: context.client,
    blobs: context.blobs,
    trajectories: createPgTrajectoryStore(context.pool),
    forks: createPgTrajectoryForkStore(context.pool),
  };
}

async function texts(context: TestContext, id: string, turns: number): Promise<string[]> {
  const out: string[] = [];
  for (let turn = 0; turn < turns; turn += 1)
    out.push((await readJson<GenerationRecord>(context.blobs, transcriptKeys.generation(id, turn)))?.text ?? '(missing)');
  return out;
}

async function cli(context: TestContext, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), 'fork', ...args], {
      env: { ...process.env, LONGHAUL_TASK_QUEUE_PREFIX: context.config.taskQueuePrefix },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

test(
  'a fork replays the first k turns of a trajectory exactly and samples different continuations from there',
  { timeout: 240_000 },
  async () => {
    const context = await openContext(uniquePrefix('fork'));
    try {
      const workers = await agentWorkers(context, createScriptedPolicy(), createScriptedTools());
      const parentId = `${context.queue('agent')}-parent`;
      const deps = dependencies(context);
      const { parent, outcome, grandchildId } = await workers.run(async () => {
        const result = (await context.client.workflow.execute(trajectoryWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: parentId,
          args: [{ question: QUESTION, answers: ['Lima'], questionId: 'peru', dataset: 'unit', limits: { maxTurns: 20 } }],
        })) as TrajectoryResult;
        const plan = await planFork(deps, { trajectoryId: parentId, at: 2, n: 3 });
        assert.equal(plan.settingsFrom, 'history', 'the children take the parent input from its history');
        assert.equal(plan.temperature, 0.7, 'a greedy parent: its continuations sample at 0.7 by default');
        assert.deepEqual(
          plan.children.map((child) => child.seed),
          [1, 2, 3],
        );
        assert.equal(plan.children[0]!.input.limits?.maxTurns, 20, 'limits come from the parent input');
        const started: string[] = [];
        const forked = await runFork(deps, plan, {
          taskQueue: context.queue('agent'),
          idPrefix: `${parentId}-fork`,
          onStarted: (id) => started.push(id),
        });
        assert.equal(started.length, 3);
        // A fork of a fork, for the tree below.
        const nestedPlan = await planFork(deps, { trajectoryId: forked.children[0]!.trajectoryId, at: 3, n: 1, firstSeed: 9 });
        const nested = await runFork(deps, nestedPlan, { taskQueue: context.queue('agent'), idPrefix: `${parentId}-nested` });
        assert.deepEqual(nested.mismatches, []);
        return { parent: result, outcome: forked, grandchildId: nested.children[0]!.trajectoryId };
      });
      assert.equal(parent.turns, 5);
      const parentTexts = await texts(context, parentId, parent.turns);
      assert.deepEqual(outcome.mismatches, [], 'deterministic tools: replayed observations are identical');
      assert.equal(outcome.children.length, 3);
      const continuations = new Set<string>();
      for (const child of outcome.children) {
        assert.equal(child.stopReason, 'answered');
        const childTexts = await texts(context, child.trajectoryId, child.turns);
        assert.deepEqual(childTexts.slice(0, 2), parentTexts.slice(0, 2), `${child.trajectoryId}: the first 2 turns are the parent's text`);
        assert.notEqual(childTexts[2], parentTexts[2], 'turn 2 is sampled, not replayed');
        assert.match(childTexts[2]!, new RegExp(`seed ${child.seed + 2}`), 'sampled with the child seed (seed + turn)');
        continuations.add(childTexts[2]!);
        const record = JSON.parse((await context.blobs.get(transcriptKeys.record(child.trajectoryId))).toString()) as {
          forkOf?: unknown;
          runId: string;
          questionId: string;
        };
        assert.deepEqual(record.forkOf, { trajectoryId: parentId, turn: 2 });
        assert.equal(record.runId, '', 'a fork joins no learner run');
        assert.equal(record.questionId, 'peru');
      }
      assert.equal(continuations.size, 3, 'three seeds, three different continuations');
      const parentRecord = JSON.parse((await context.blobs.get(transcriptKeys.record(parentId))).toString()) as { forkOf?: unknown };
      assert.equal(parentRecord.forkOf, undefined, 'a trajectory that is not a fork has no forkOf');

      // The tree, listed from any node (here the fork of a fork), starts at the root.
      const tree = await deps.forks.tree(grandchildId);
      assert.equal(tree.trajectoryId, parentId);
      assert.equal(tree.outcome?.turns, 5);
      assert.deepEqual(
        tree.children.map((child) => [child.trajectoryId, child.fork?.forkTurn, child.fork?.seed, child.outcome?.stopReason]),
        outcome.children.map((child) => [child.trajectoryId, 2, child.seed, 'answered']),
      );
      assert.deepEqual(
        tree.children[0]!.children.map((child) => [child.trajectoryId, child.fork?.forkTurn, child.fork?.seed]),
        [[grandchildId, 3, 9]],
      );

      // The command: --tree prints the same tree; bad input exits 2 naming the flag, before anything starts.
      const listed = await cli(context, '--tree', outcome.children[1]!.trajectoryId, '--json');
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, new RegExp(`${outcome.children[1]!.trajectoryId} \\*`), 'the asked-for node is marked');
      assert.deepEqual(JSON.parse(listed.stdout.trim().split('\n').at(-1)!), tree);
      const tooFar = await cli(context, parentId, '--at', '6', '-n', '2');
      assert.equal(tooFar.code, 2);
      assert.match(tooFar.stderr, /--at 6: trajectory .* recorded 5 turns; give --at between 0 and 5/);
      const unknown = await cli(context, `${parentId}-nonexistent`, '--at', '1', '-n', '2');
      assert.equal(unknown.code, 2);
      assert.match(unknown.stderr, /<trajectory-id>: no finished trajectory/);
      const none = await cli(context, parentId, '--at', '1', '-n', '0');
      assert.equal(none.code, 2);
      assert.match(none.stderr, /--count \(-n\) expects an integer between 1 and 64, got "0"/);
      const greedy = await cli(context, parentId, '--at', '1', '-n', '2', '--temperature', '0');
      assert.equal(greedy.code, 2);
      assert.match(greedy.stderr, /--temperature expects a number above 0/);
      const forks = await context.pool.query('SELECT count(*)::int AS n FROM trajectory_forks WHERE parent_id = $1', [parentId]);
      assert.equal(forks.rows[0].n, 3, 'the refused commands recorded no fork');
    } finally {
      await context.close();
    }
  },
);

test(
  'a fork over a tool that answers differently each time reports the replayed observations that differ',
  { timeout: 180_000 },
  async () => {
    const context = await openContext(uniquePrefix('fork-drift'));
    try {
      let calls = 0;
      // A tool whose answer changes from call to call (a live web page, a corpus rebuilt in between).
      const drifting: Pick<ToolActivities, 'runTools'> = {
        async runTools(input) {
          calls += 1;
          const results = await createScriptedTools().runTools(input);
          return results.map((result): ToolResult => ({ ...result, observation: `${result.observation} (call ${calls})` }));
        },
      };
      const workers = await agentWorkers(context, createScriptedPolicy(), drifting);
      const parentId = `${context.queue('agent')}-parent`;
      const deps = dependencies(context);
      const outcome = await workers.run(async () => {
        await context.client.workflow.execute(trajectoryWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId: parentId,
          args: [{ question: QUESTION, answers: ['Lima'] }],
        });
        const plan = await planFork(deps, { trajectoryId: parentId, at: 2, n: 1 });
        return runFork(deps, plan, { taskQueue: context.queue('agent'), idPrefix: `${parentId}-fork` });
      });
      assert.deepEqual(
        outcome.mismatches.map((mismatch) => [mismatch.turn, mismatch.what]),
        [
          [0, 'observation'],
          [1, 'observation'],
        ],
        'the text replays exactly; both replayed observations differ and are reported',
      );
      assert.match(outcome.mismatches[0]!.parent, /\(call 1\)$/);
      assert.match(outcome.mismatches[0]!.child, /\(call 5\)$/);
    } finally {
      await context.close();
    }
  },
);
