/**
 * `longhaul schedule` against the real stack: a Temporal Schedule evaluates the newest policy version
 * when triggered (through the CLI, served by in-process workers with the scripted policy), a scheduled
 * benchmark runs `longhaul bench` as an activity and stores its result per version and commit, a
 * failing run pauses its schedule, and an unparseable interval exits 2 before anything starts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ScheduleNotFoundError } from '@temporalio/client';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { createScriptedTools } from './doubles/scripted-tools.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import { createPgBenchmarkResultStore } from '../infra/postgres/benchmark-result-store.pg.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { repoRoot } from '../infra/paths.js';
import { resultIdOf } from '../workflows/contracts/schedules.contract.js';
import { openContext, uniquePrefix, waitUntil, type TestContext } from './helpers/stack.js';

const execute = promisify(execFile);
const cli = path.join(repoRoot, 'dist', 'cli', 'main.js');
const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repoRoot }).toString().trim();

async function longhaul(context: TestContext | null, args: string[], env: NodeJS.ProcessEnv = {}) {
  const prefix = context ? { LONGHAUL_TASK_QUEUE_PREFIX: context.config.taskQueuePrefix } : {};
  try {
    const { stdout, stderr } = await execute(process.execPath, [cli, 'schedule', ...args], {
      env: { ...process.env, ...prefix, ...env },
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

async function agentFor(context: TestContext) {
  return createInProcessAgent({
    config: context.config,
    blobs: context.blobs,
    pool: context.pool,
    backend: createScriptedPolicy(),
    tools: createScriptedTools(),
    prefix: context.config.taskQueuePrefix,
    roles: ['agent', 'gpu-infer', 'tools'],
  });
}

test(
  'a scheduled evaluation evaluates the newest policy version when triggered; list shows it, delete removes it',
  { timeout: 300_000 },
  async () => {
    const context = await openContext(uniquePrefix('schedeval'));
    const versions = createPgPolicyVersionStore(context.pool);
    const tag = context.config.taskQueuePrefix.replace(/-$/, '');
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-schedule-'));
    let newest: number | undefined;
    try {
      const file = path.join(scratch, 'capitals.jsonl');
      fs.writeFileSync(
        file,
        [
          { id: 'q1', question: 'script:{"turns":2,"answer":"Paris"} Capital of France?', answers: ['Paris'] },
          { id: 'q2', question: 'script:{"turns":1,"answer":"Lyon"} Capital of France, again?', answers: ['Paris'] },
        ]
          .map((row) => JSON.stringify(row))
          .join('\n') + '\n',
      );
      // A version newer than any registered: the scheduled run must pick it up when it starts, not when the schedule was created.
      const created = await longhaul(context, ['eval', '--every', '1h', '--dataset', file, '-k', '2', '--id', `${tag}-eval`]);
      assert.equal(created.code, 0, created.stderr);
      const scheduleId = `longhaul-${tag}-eval`;
      assert.match(
        created.stdout,
        new RegExp(`created schedule ${scheduleId}: .*every 1h \\(overlap skip, catch-up window 1h, pause on failure\\)`),
      );
      const latest = await versions.latest();
      newest = (latest?.version ?? 0) + 1;
      await versions.register({
        version: newest,
        name: `schedule-test-${tag}`,
        blobPrefix: `policies/schedule-test-${tag}/`,
        files: [],
        manifest: {},
        parentVersion: latest?.version ?? null,
      });

      const listed = await longhaul(context, ['list', '--json']);
      assert.equal(listed.code, 0, listed.stderr);
      const row = (
        JSON.parse(listed.stdout.trim().split('\n').pop()!) as { id: string; workflow: string; every: string; paused: boolean }[]
      ).find((entry) => entry.id === scheduleId);
      assert.deepEqual(
        { workflow: row?.workflow, every: row?.every, paused: row?.paused },
        { workflow: 'scheduledEvaluation', every: '1h', paused: false },
      );
      const description = await context.client.schedule.getHandle(scheduleId).describe();
      assert.equal(description.policies.overlap, 'SKIP');
      assert.equal(description.policies.pauseOnFailure, true);
      assert.equal(description.policies.catchupWindow, 3_600_000);

      const agent = await agentFor(context);
      const stored = await agent.run(async () => {
        const triggered = await longhaul(context, ['trigger', scheduleId]);
        assert.equal(triggered.code, 0, triggered.stderr);
        let found:
          | {
              result_id: string;
              policy_version: number;
              k: number;
              questions: number;
              git_commit: string;
              summary: { avgAtK: { em: number } };
            }
          | undefined;
        await waitUntil(
          async () => {
            const rows = await context.pool.query(
              'SELECT result_id, policy_version, k, questions, git_commit, summary FROM evaluation_results WHERE result_id LIKE $1',
              [`${resultIdOf(scheduleId)}-%`],
            );
            found = rows.rows[0];
            return found !== undefined;
          },
          240_000,
          'the scheduled evaluation result',
        );
        return found!;
      });
      assert.equal(stored.policy_version, newest, 'the run evaluated the newest version, registered after the schedule was created');
      assert.deepEqual([stored.k, stored.questions], [2, 2]);
      assert.equal(stored.summary.avgAtK.em, 0.5, 'q1 answers Paris (EM 1), q2 answers Lyon (EM 0)');
      assert.equal(stored.git_commit, head, "the result records the worker's git commit");

      const deleted = await longhaul(context, ['delete', scheduleId]);
      assert.equal(deleted.code, 0, deleted.stderr);
      await assert.rejects(context.client.schedule.getHandle(scheduleId).describe(), ScheduleNotFoundError);
      const again = await longhaul(context, ['delete', scheduleId]);
      assert.equal(again.code, 2);
      assert.match(again.stderr, new RegExp(`no schedule "${scheduleId}"`));
    } finally {
      if (newest !== undefined)
        await context.pool.query('DELETE FROM policy_versions WHERE version = $1 AND name = $2', [newest, `schedule-test-${tag}`]);
      fs.rmSync(scratch, { recursive: true, force: true });
      await context.close();
    }
  },
);

test(
  'a scheduled benchmark stores its result per version and commit; a failing one pauses its schedule',
  { timeout: 300_000 },
  async () => {
    const context = await openContext(uniquePrefix('schedbench'));
    const tag = context.config.taskQueuePrefix.replace(/-$/, '');
    const good = `longhaul-${tag}-overhead`;
    const bad = `longhaul-${tag}-broken`;
    try {
      for (const [id, flags] of [
        [good, ['--turns', '3']],
        [bad, ['--turns', '1']], // below the benchmark's minimum: `longhaul bench overhead` exits 2
      ] as const) {
        const created = await longhaul(context, ['bench', 'overhead', '--every', '6h', '--id', id, '--', ...flags]);
        assert.equal(created.code, 0, created.stderr);
      }
      const benchmarks = createPgBenchmarkResultStore(context.pool);
      const agent = await agentFor(context);
      await agent.run(async () => {
        for (const id of [good, bad]) assert.equal((await longhaul(context, ['trigger', id])).code, 0);
        await waitUntil(
          async () => (await context.pool.query('SELECT 1 FROM benchmark_results WHERE id LIKE $1', [`${good}-%`])).rowCount === 1,
          240_000,
          'the scheduled benchmark result',
        );
        await waitUntil(
          async () => (await context.client.schedule.getHandle(bad).describe()).state.paused,
          120_000,
          'the failing schedule to pause',
        );
      });
      const [record] = (await benchmarks.recent('overhead', 20)).filter((entry) => entry.id.startsWith(`${good}-`));
      assert.ok(record, 'the result is stored');
      assert.deepEqual(record.args, ['--turns', '3']);
      assert.equal(record.result.turns, 3);
      assert.equal(record.gitCommit, head);
      const latest = await createPgPolicyVersionStore(context.pool).latest();
      assert.equal(record.policyVersion, latest?.version ?? null);
      assert.equal(
        (await context.client.schedule.getHandle(good).describe()).state.paused,
        false,
        'a run that succeeded leaves its schedule running',
      );

      const listed = await longhaul(context, ['list']);
      assert.match(listed.stdout, new RegExp(`${bad}\\s+scheduledBenchmark\\s+every 6h\\s+PAUSED`));
      const resumed = await longhaul(context, ['resume', bad]);
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.equal((await context.client.schedule.getHandle(bad).describe()).state.paused, false);
    } finally {
      for (const id of [good, bad])
        await context.client.schedule
          .getHandle(id)
          .delete()
          .catch(() => undefined);
      await context.close();
    }
  },
);

test(
  'schedule refuses an unparseable interval, an unknown benchmark or bad settings with exit 2, naming the flag, before anything starts',
  { timeout: 120_000 },
  async () => {
    const nowhere = {
      LONGHAUL_HOME: path.join(os.tmpdir(), `longhaul-schedule-none-${process.pid}`),
      LONGHAUL_TEMPORAL_PORT: '1',
      LONGHAUL_PG_PORT: '2',
      LONGHAUL_S3_PORT: '3',
    };
    const dataset = path.join(os.tmpdir(), `longhaul-schedule-set-${process.pid}.jsonl`);
    fs.writeFileSync(dataset, `${JSON.stringify({ id: 'q1', question: 'Capital of Peru?', answers: ['Lima'] })}\n`);
    try {
      const cases: [string[], RegExp][] = [
        [['eval', '--every', 'often', '--dataset', dataset], /^longhaul: --every: cannot parse "often" as an interval/],
        [['eval', '--every', '5 minutes', '--dataset', dataset], /^longhaul: --every: cannot parse "5 minutes"/],
        [['eval', '--dataset', dataset], /^longhaul: --every INTERVAL is required/],
        [['eval', '--every', '1h', '--dataset', dataset, '-k', '0'], /^longhaul: --k expects an integer between 1 and 256/],
        [
          ['eval', '--every', '1h', '--dataset', dataset, '--catchup-window', '2s'],
          /^longhaul: --catchup-window: Temporal needs at least 10s/,
        ],
        [['bench', 'search', '--every', '1x'], /^longhaul: --every: cannot parse "1x"/],
        [['bench', 'infer', '--every', '1h'], /^longhaul: schedule bench: expected one of search, overhead, async, got "infer"/],
        [['pause', 'x'], /^longhaul: schedule: expected eval, bench, list, trigger, delete or resume/],
      ];
      for (const [args, message] of cases) {
        const { code, stderr } = await longhaul(null, args, nowhere);
        assert.equal(code, 2, `${args.join(' ')}: ${stderr}`);
        assert.match(stderr, message);
      }
      assert.equal(fs.existsSync(nowhere.LONGHAUL_HOME), false, 'nothing was started');
    } finally {
      fs.rmSync(dataset, { force: true });
    }
  },
);
