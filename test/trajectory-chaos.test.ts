import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { QueueRole } from '../workflows/contracts/queues.js';
import { trajectoryStateQuery, trajectoryWorkflowType, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import { repoRoot } from '../infra/paths.js';
import { accepts, openContext, spawnWorker, uniquePrefix, waitUntil, type TestContext } from './helpers/stack.js';

const run = promisify(execFile);
const QUESTION = 'script:{"turns":8,"answer":"Lima","tokenDelayMs":12} What is the capital of Peru?';

/** The real worker entry points, as processes, with the deterministic scripted policy. */
async function startWorkers(env: NodeJS.ProcessEnv): Promise<Map<QueueRole, ChildProcess>> {
  const workers = new Map<QueueRole, ChildProcess>();
  for (const role of ['agent', 'gpu-infer', 'tools'] as const) {
    const worker = spawnWorker(role, { ...env, LONGHAUL_POLICY_BACKEND: 'scripted' });
    await worker.ready;
    workers.set(role, worker);
  }
  return workers;
}

async function restart(workers: Map<QueueRole, ChildProcess>, role: QueueRole, env: NodeJS.ProcessEnv): Promise<void> {
  const worker = workers.get(role)!;
  worker.kill('SIGKILL');
  await new Promise((resolve) => worker.once('exit', resolve));
  const replacement = spawnWorker(role, { ...env, LONGHAUL_POLICY_BACKEND: 'scripted' });
  await replacement.ready;
  workers.set(role, replacement);
}

function stopAll(workers: Map<QueueRole, ChildProcess>): void {
  for (const worker of workers.values()) worker.kill('SIGKILL');
}

/** What must be identical between an interrupted and an uninterrupted run. */
async function comparableRecord(context: TestContext, result: TrajectoryResult) {
  const record = JSON.parse((await context.blobs.get(result.recordKey)).toString()) as {
    turnRecords: {
      text: string;
      tokenIds: number[];
      logprobs: number[];
      tokenVersions: number[];
      action: unknown;
      tools: { tool: string; ok: boolean; documentIds: string[] }[];
    }[];
    reward: number;
    answer: string | null;
    stopReason: string;
    turns: number;
  };
  return {
    reward: record.reward,
    answer: record.answer,
    stopReason: record.stopReason,
    turns: record.turns,
    turnRecords: record.turnRecords.map((turn) => ({
      text: turn.text,
      tokenIds: turn.tokenIds,
      logprobs: turn.logprobs,
      tokenVersions: turn.tokenVersions,
      action: turn.action,
      tools: turn.tools.map((tool) => ({ tool: tool.tool, ok: tool.ok, documentIds: tool.documentIds })),
    })),
  };
}

async function toolRowsPerTurn(context: TestContext, trajectoryId: string): Promise<number[]> {
  const { rows } = await context.pool.query<{ turn_key: string; calls: string }>(
    'SELECT turn_key, count(*) AS calls FROM tool_calls WHERE turn_key LIKE $1 GROUP BY turn_key ORDER BY turn_key',
    [`${trajectoryId}/%`],
  );
  return rows.map((row) => Number(row.calls));
}

async function runTrajectory(context: TestContext, workflowId: string, chaos?: () => Promise<void>): Promise<TrajectoryResult> {
  const handle = await context.client.workflow.start(trajectoryWorkflowType, {
    taskQueue: context.queue('agent'),
    workflowId,
    args: [{ question: QUESTION, answers: ['Lima'] }],
  });
  if (chaos) {
    await waitUntil(
      async () => {
        const state = await handle.query(trajectoryStateQuery);
        return state.turn >= 3 && state.generating;
      },
      120_000,
      'turn 3 generating',
    );
    await chaos();
  }
  return (await handle.result()) as TrajectoryResult;
}

test(
  'a trajectory survives kill -9 of the inference worker and of the agent worker, with a record identical to an uninterrupted run',
  { timeout: 600_000 },
  async () => {
    const prefix = uniquePrefix('chaos');
    const env = { LONGHAUL_TASK_QUEUE_PREFIX: prefix };
    const context = await openContext(prefix);
    const workers = await startWorkers(env);
    try {
      const baseline = await runTrajectory(context, `${prefix}baseline`);
      assert.equal(baseline.stopReason, 'answered');
      assert.equal(baseline.turns, 8);
      const expected = await comparableRecord(context, baseline);

      const afterInferKill = await runTrajectory(context, `${prefix}kill-infer`, () => restart(workers, 'gpu-infer', env));
      assert.deepEqual(await comparableRecord(context, afterInferKill), expected);

      const afterAgentKill = await runTrajectory(context, `${prefix}kill-agent`, () => restart(workers, 'agent', env));
      assert.deepEqual(await comparableRecord(context, afterAgentKill), expected);

      for (const id of [`${prefix}kill-infer`, `${prefix}kill-agent`]) {
        assert.deepEqual(await toolRowsPerTurn(context, id), [1, 1, 1, 1, 1, 1, 1], `${id}: each of the seven searches recorded once`);
      }
    } finally {
      stopAll(workers);
      await context.close();
    }
  },
);

test('a trajectory survives a restart of the Temporal server mid-run, with an identical record', { timeout: 600_000 }, async () => {
  const prefix = uniquePrefix('chaos-temporal');
  const shared = await openContext(prefix);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-chaos-'));
  // A Temporal server of its own (shared Postgres and S3), so restarting it disturbs no other test.
  const port = shared.config.temporal.port + 30;
  const env = {
    LONGHAUL_HOME: home,
    LONGHAUL_TEMPORAL_PORT: String(port),
    LONGHAUL_TEMPORAL_UI_PORT: String(port + 1),
    DATABASE_URL: shared.config.postgres.url,
    S3_ENDPOINT: shared.config.s3.endpoint,
    LONGHAUL_TASK_QUEUE_PREFIX: prefix,
  };
  const cli = (...args: string[]) =>
    run(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), ...args], { env: { ...process.env, ...env } });
  await shared.close();
  await cli('up', '--no-workers');
  const context = await openContext(prefix, env);
  const workers = await startWorkers(env);
  try {
    const baseline = await runTrajectory(context, `${prefix}baseline`);
    const expected = await comparableRecord(context, baseline);
    const restarted = await runTrajectory(context, `${prefix}restart`, async () => {
      const pid = Number(fs.readFileSync(path.join(home, 'run', 'temporal.pid'), 'utf8').split(' ')[0]);
      process.kill(pid, 'SIGKILL');
      await waitUntil(
        async () => !(await accepts(port)) && !(await accepts(port + 1)),
        30_000,
        `the killed Temporal server to release ports ${port} and ${port + 1}`,
      );
      await cli('up', '--no-workers');
    });
    assert.deepEqual(await comparableRecord(context, restarted), expected);
    assert.deepEqual(await toolRowsPerTurn(context, `${prefix}restart`), [1, 1, 1, 1, 1, 1, 1]);
  } finally {
    stopAll(workers);
    await context.close();
    await cli('down').catch(() => undefined);
    fs.rmSync(home, { recursive: true, force: true });
  }
});
