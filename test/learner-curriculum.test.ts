/**
 * The learner's curriculum against the real stack (Temporal, Postgres, S3) with the scripted policy:
 * questions always answered right leave as mastered, those never answered right leave as too hard,
 * unused ones enter in their place, and the counts are exact and survive continue-as-new. The reward
 * is f1_format, whose format term a wrong answer does not earn (format credit "when-scored"). Bad curriculum
 * input fails the workflow naming the field, and `longhaul train` exits 2 naming the flag.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { agentWorkers } from './helpers/agent-workers.js';
import { repoRoot } from '../infra/paths.js';
import {
  learnerStateQuery,
  learnerWorkflowType,
  type CurriculumCounts,
  type LearnerResult,
  type TrainStepInput,
} from '../workflows/contracts/learner.contract.js';
import { openContext, uniquePrefix, waitUntil } from './helpers/stack.js';

/**
 * The scripted policy, except that a question whose script answers "by-seed" answers right (Lima) on
 * even seeds and wrong (Paris) on odd ones: sample s of a question's n-th group has seed n·G + s, so
 * such a group is mixed. `bySeed` collects the seeds that question was sampled with.
 */
function policy(version: () => number, bySeed: number[] = []) {
  const scripted = createScriptedPolicy({ version });
  return {
    ...scripted,
    generate: (request: Parameters<typeof scripted.generate>[0], signal?: AbortSignal) => {
      if (request.prompt.includes('"answer":"by-seed"')) bySeed.push(request.seed ?? 0);
      return scripted.generate(
        {
          ...request,
          prompt: request.prompt.replace('"answer":"by-seed"', `"answer":"${(request.seed ?? 0) % 2 === 0 ? 'Lima' : 'Paris'}"`),
        },
        signal,
      );
    },
  };
}

/** Executions of a workflow id, following continue-as-new from the first run. */
async function executions(client: Client, workflowId: string, firstRunId: string): Promise<number> {
  let count = 0;
  for (let runId: string | undefined = firstRunId; runId; count += 1) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    runId =
      history.events?.find((event) => event.workflowExecutionContinuedAsNewEventAttributes)?.workflowExecutionContinuedAsNewEventAttributes
        ?.newExecutionRunId ?? undefined;
  }
  return count;
}

test(
  'mastered questions leave, too-hard ones are set aside, unused ones enter; counts exact across continue-as-new',
  { timeout: 400_000 },
  async () => {
    const prefix = uniquePrefix('curriculum');
    const context = await openContext(prefix);
    let served = 0;
    const steps: TrainStepInput[] = [];
    const mixedSeeds: number[] = [];
    try {
      // q0, q3, q5 always right; q1, q4, q6 always wrong; q2 right on one sample of two.
      const kinds = ['right', 'wrong', 'mixed', 'right', 'wrong', 'right', 'wrong'] as const;
      const answer = { right: 'Lima', wrong: 'Paris', mixed: 'by-seed' };
      const rows = kinds.map((kind, index) =>
        JSON.stringify({ id: `q${index}`, question: `script:{"turns":1,"answer":"${answer[kind]}"} Capital of Peru?`, answers: ['Lima'] }),
      );
      await context.blobs.put(`${prefix}q.jsonl`, rows.join('\n'));
      const workers = await agentWorkers(
        context,
        policy(() => served, mixedSeeds),
        createScriptedTools(),
        {
          roles: ['agent', 'gpu-infer', 'tools', 'gpu-train'],
          extraActivities: {
            'gpu-train': {
              trainStep: async (input: TrainStepInput) => {
                steps.push(input);
                served = input.outputVersion;
                return { version: input.outputVersion, metrics: {} };
              },
            },
          },
        },
      );
      const runId = `${prefix}run`;
      const workflowId = `${prefix}learner`;
      const { result, firstRunId, midway } = await workers.run(async () => {
        // sync with G = B = 2: one group at a time, each settled before the next starts, so the order
        // of draws (and every count) is exact.
        const handle = await context.client.workflow.start(learnerWorkflowType, {
          taskQueue: context.queue('agent'),
          workflowId,
          args: [
            {
              runId,
              datasetKey: `${prefix}q.jsonl`,
              settings: { mode: 'sync', groupSize: 2, batchSize: 2, maxSteps: 5 },
              trajectory: { rewardMetric: 'f1_format', limits: { maxTurns: 3 } },
              curriculum: { activeSize: 3, lower: 0.2, upper: 0.8, masteredAfter: 2, tooHardAfter: 2 },
              stepsPerExecution: 2,
            },
          ],
        });
        await waitUntil(
          async () => (await handle.query(learnerStateQuery)).curriculum !== undefined,
          120_000,
          'the curriculum in the state query',
        );
        const midway = (await handle.query(learnerStateQuery)).curriculum;
        return { result: (await handle.result()) as LearnerResult, firstRunId: handle.firstExecutionRunId, midway };
      });
      assert.ok(midway && midway.entered === midway.active + midway.mastered + midway.tooHard, `the query reports the curriculum`);

      // Draws: q0 q1 q2 | q0 (mastered, q3 enters) q3 q1 (too hard, q4 enters) q4 q2 | q3 (mastered, q5) q5
      // q4 (too hard, q6) q6 q2 | q5 (mastered, pool empty) q6 (too hard) q2 | q2. Steps train on q2's groups.
      assert.equal(result.steps, 5);
      assert.deepEqual(result.curriculum, { active: 1, entered: 7, mastered: 3, tooHard: 3, activeQuestionIds: ['q2'] });
      const counts = (active: number, entered: number, mastered: number, tooHard: number): CurriculumCounts => ({
        active,
        entered,
        mastered,
        tooHard,
      });
      assert.deepEqual(
        result.history.map((stats) => stats.curriculum),
        [counts(3, 3, 0, 0), counts(3, 5, 1, 1), counts(3, 7, 2, 2), counts(1, 7, 3, 3), counts(1, 7, 3, 3)],
        'the counts when each step finished',
      );
      assert.deepEqual(
        result.history.map((stats) => [stats.groupsSettled, stats.zeroAdvantageGroupShare]),
        [
          [3, 2 / 3],
          [5, 4 / 5],
          [5, 4 / 5],
          [3, 2 / 3],
          [1, 0],
        ],
        'groups settled before each step and the share with zero advantage',
      );
      assert.equal(await executions(context.client, workflowId, firstRunId), 3, 'continued as new after steps 2 and 4');

      // What Postgres holds: groups per question (question id <id>/g<n>) and the f1_format rewards.
      const stored = await context.pool.query<{ question_id: string; rewards: number[] }>(
        'SELECT question_id, array_agg(reward ORDER BY trajectory_id) AS rewards FROM trajectories WHERE run_id = $1 GROUP BY question_id ORDER BY question_id',
        [runId],
      );
      const groupsOf = new Map<string, number>();
      for (const row of stored.rows) {
        const [question, group] = row.question_id.split('/');
        groupsOf.set(question!, (groupsOf.get(question!) ?? 0) + 1);
        const kind = kinds[Number(question!.slice(1))]!;
        const expected = { right: [1, 1], wrong: [0, 0], mixed: [1, 0] }[kind];
        assert.deepEqual(
          row.rewards.map((reward) => Math.round(Number(reward) * 1e9) / 1e9),
          expected,
          `${question} group ${group} (${kind}): f1_format rewards 0.9·F1 + 0.1·format, 0 without a score`,
        );
      }
      assert.deepEqual(Object.fromEntries(groupsOf), { q0: 2, q1: 2, q2: 5, q3: 2, q4: 2, q5: 2, q6: 2 });
      // Only q2's mixed groups have a learning signal: each step trains on one of them.
      assert.deepEqual(
        steps.map((step) => step.trajectoryIds.map((id) => id.replace(runId, '')).sort()),
        [0, 1, 2, 3, 4].map((group) => [`-q2-g${group}-s0`, `-q2-g${group}-s1`]),
      );
      assert.equal(result.dropped, 24, 'the 12 all-equal groups (mastered and too-hard questions) were dropped');
      // q2's five groups of two (one generation each) sampled ten different seeds, not seeds 0 and 1 five times.
      assert.deepEqual(
        [...mixedSeeds].sort((a, b) => a - b),
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      );
    } finally {
      await context.close();
    }
  },
);

test('a learner whose curriculum band is empty or outside [0, 1] fails at once with LonghaulInvalidInput naming the field', async () => {
  const prefix = uniquePrefix('curriculum-bad');
  const context = await openContext(prefix);
  try {
    const workers = await agentWorkers(context, createScriptedPolicy(), createScriptedTools(), { roles: ['agent'] });
    await workers.run(async () => {
      for (const [curriculum, message] of [
        [
          { lower: 0.7, upper: 0.3 },
          'curriculum.upper: the band needs lower < upper, got lower 0.7 and upper 0.3; e.g. lower 0.1, upper 0.9',
        ],
        [{ upper: 1.2 }, 'curriculum.upper: expected a number between 0 and 1, got 1.2'],
        [{ activeSize: 0 }, 'curriculum.activeSize: expected an integer between 1 and 100000, got 0'],
      ] as const) {
        const failure = await context.client.workflow
          .execute(learnerWorkflowType, {
            taskQueue: context.queue('agent'),
            workflowId: `${prefix}${JSON.stringify(curriculum).replace(/\W/g, '')}`,
            args: [{ runId: 'r', datasetKey: 'k', settings: { groupSize: 2, batchSize: 2 }, curriculum }],
          })
          .then(
            () => undefined,
            (error: unknown) => error,
          );
        assert.ok(failure instanceof WorkflowFailedError, JSON.stringify(curriculum));
        assert.equal((failure.cause as { type?: string } | undefined)?.type, 'LonghaulInvalidInput');
        assert.equal(failure.cause?.message, message);
      }
    });
  } finally {
    await context.close();
  }
});

// `longhaul train` refuses the same before anything starts (exit 2, one line naming the flag); the
// stack's ports point where nothing listens, so a command that went on to start services would not exit 2.
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-curriculum-'));
const home = path.join(scratch, 'home-that-does-not-exist');
const questions = path.join(scratch, 'questions.jsonl');
fs.writeFileSync(questions, `${JSON.stringify({ id: 'q1', question: 'What is the capital of Peru?', answers: ['Lima'] })}\n`);

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function train(args: string[]): Promise<{ code: number; stderr: string }> {
  const env = {
    ...process.env,
    LONGHAUL_HOME: home,
    LONGHAUL_TEMPORAL_PORT: String(await freePort()),
    LONGHAUL_TEMPORAL_UI_PORT: String(await freePort()),
    LONGHAUL_PG_PORT: String(await freePort()),
    LONGHAUL_S3_PORT: String(await freePort()),
  };
  try {
    const { stderr } = await promisify(execFile)(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), 'train', ...args], {
      env,
      timeout: 60_000,
    });
    return { code: 0, stderr };
  } catch (error) {
    return error as { code: number; stderr: string };
  }
}

for (const [what, args, message] of [
  [
    'a lower bound above 1',
    ['--curriculum-lower', '1.5'],
    /^longhaul: --curriculum-lower \(curriculum\.lower\): expected a number between 0 and 1, got 1\.5/,
  ],
  [
    'lower ≥ upper',
    ['--curriculum-lower', '0.8', '--curriculum-upper', '0.2'],
    /^longhaul: --curriculum-upper \(curriculum\.upper\): the band needs lower < upper, got lower 0\.8 and upper 0\.2/,
  ],
  ['an active set of 0', ['--curriculum', '0'], /^longhaul: --curriculum expects an integer between 1 and 100000, got "0"/],
  [
    'an unknown reward',
    ['--reward', 'f1format'],
    /^longhaul: --reward \(rewardMetric\): expected one of .*"f1_format", "em_format", got "f1format"/,
  ],
  [
    'a format weight above 1',
    ['--reward', 'f1_format', '--format-weight', '2'],
    /^longhaul: --format-weight \(rewardFormatWeight\): expected a number between 0 and 1, got 2/,
  ],
  [
    'a format credit without a format term',
    ['--format-credit', 'always'],
    /^longhaul: --format-credit applies to a reward with a format term: give --reward f1_format or em_format/,
  ],
  [
    'an unknown format credit',
    ['--reward', 'f1_format', '--format-credit', 'sometimes'],
    /^longhaul: --format-credit \(rewardFormatCredit\): expected one of "when-scored", "always", got "sometimes"/,
  ],
] as const) {
  test(`longhaul train with ${what} exits 2 naming the flag, and starts nothing`, { timeout: 90_000 }, async () => {
    const result = await train(['--dataset', questions, ...args]);
    assert.equal(result.code, 2, result.stderr);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.match(result.stderr.trim(), message);
    assert.equal(fs.existsSync(home), false, `${home} was created: something started`);
  });
}

test('longhaul train --help explains the curriculum and the f1_format reward', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), 'train', '--help']);
  for (const flag of [
    '--curriculum N',
    '--curriculum-lower',
    '--mastered-after',
    '--too-hard-after',
    '--pass-reward',
    'f1_format',
    '--format-weight',
    '--format-credit',
    'when-scored',
  ])
    assert.ok(stdout.includes(flag), `--help mentions ${flag}`);
});

after(() => fs.rmSync(scratch, { recursive: true, force: true }));
