/**
 * Stack and command lifecycle: a failed `up` stops what it launched, Postgres runs as root under a
 * home others cannot enter, and an interrupted long command stops the workflows it started.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { loadConfig } from '../infra/config.js';
import { repoRoot } from '../infra/paths.js';
import { SHARED_CLUSTERS_DIR, postgresService } from '../infra/services/postgres.service.js';
import { canConnect } from '../infra/services/processes.js';
import { openContext, uniquePrefix } from './helpers/stack.js';

const run = promisify(execFile);
const cli = path.join(repoRoot, 'dist', 'cli', 'main.js');
const isRoot = process.getuid?.() === 0;

/** Poll `check` until it holds, or fail with `what` after `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await sleep(200);
  }
}

/** A port with nothing listening on it nor on port + each offset (SeaweedFS derives its ports from the S3 port). */
async function freePort(offsets: readonly number[] = [0]): Promise<number> {
  for (;;) {
    const port = 21_000 + Math.floor(Math.random() * 8_000);
    const taken = await Promise.all(offsets.map((offset) => canConnect(port + offset)));
    if (!taken.some(Boolean)) return port;
  }
}

/** A fresh folder that only root can enter (0700, like root's own home), with LONGHAUL_HOME inside it. */
function privateHome(label: string): { folder: string; home: string } {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), `longhaul-${label}-`));
  fs.chmodSync(folder, 0o700);
  return { folder, home: path.join(folder, 'checkout', '.longhaul') };
}

/** Remove a test home and, where it recorded one, its Postgres cluster in SHARED_CLUSTERS_DIR. */
function removeHome(folder: string, home: string): void {
  try {
    const dataDir = fs.readlinkSync(path.join(home, 'postgres', 'data'));
    if (dataDir.startsWith(`${SHARED_CLUSTERS_DIR}/`)) fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
  } catch {
    /* no shared cluster */
  }
  fs.rmSync(folder, { recursive: true, force: true });
}

test(
  'as root, Postgres starts, answers and stops under a LONGHAUL_HOME inside a folder others cannot enter',
  { skip: isRoot ? false : 'only root runs the cluster as another user' },
  async () => {
    const { folder, home } = privateHome('private');
    const port = await freePort();
    const settings = loadConfig({ ...process.env, DATABASE_URL: undefined, LONGHAUL_HOME: home, LONGHAUL_PG_PORT: String(port) });
    const postgres = postgresService(settings);
    try {
      assert.equal(await postgres.start(), 'launched');
      const client = new pg.Client({ connectionString: settings.postgres.url });
      await client.connect();
      try {
        const { rows } = await client.query<{ user: string }>('SELECT current_user AS user');
        assert.equal(rows[0]!.user, 'longhaul');
        const migrated = await client.query<{ present: boolean }>("SELECT to_regclass('public.trajectories') IS NOT NULL AS present");
        assert.equal(migrated.rows[0]!.present, true, 'migrations ran');
      } finally {
        await client.end();
      }
      const dataDir = fs.readlinkSync(path.join(home, 'postgres', 'data'));
      assert.ok(
        dataDir.startsWith(`${SHARED_CLUSTERS_DIR}/postgres-`),
        `the cluster lives where its user can reach it, recorded by a symlink (got ${dataDir})`,
      );
      assert.equal(fs.statSync(folder).mode & 0o777, 0o700, 'the private folder is left as it was');
      const status = await postgres.status();
      assert.ok(status.running && status.pid !== undefined, 'status finds it through the symlink');
      assert.equal(await postgres.start(), 'reused', 'a second start reuses the running cluster');

      await postgres.stop();
      assert.equal(await canConnect(port), false, 'stopped');
      assert.equal(fs.existsSync(path.join(dataDir, 'postmaster.pid')), false);
      assert.equal(await postgres.start(), 'launched', 'starts again on the same cluster');
      await postgres.stop();
    } finally {
      await postgres.stop().catch(() => undefined);
      removeHome(folder, home);
    }
  },
);

test('a failed up stops the services it had launched: their ports are free and their pid files gone', async () => {
  const { folder, home } = privateHome('failed-up');
  const s3Port = await freePort([0, 1000, 1001, 1002, 1003, 10_000, 11_000, 11_001, 11_002]);
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(s3Port, '127.0.0.1', resolve));
  const ports = { temporal: await freePort(), ui: await freePort(), postgres: await freePort() };
  const env = {
    ...process.env,
    TEMPORAL_ADDRESS: undefined,
    DATABASE_URL: undefined,
    S3_ENDPOINT: undefined,
    LONGHAUL_HOME: home,
    LONGHAUL_TEMPORAL_PORT: String(ports.temporal),
    LONGHAUL_TEMPORAL_UI_PORT: String(ports.ui),
    LONGHAUL_PG_PORT: String(ports.postgres),
    LONGHAUL_S3_PORT: String(s3Port),
  };
  try {
    const failure = await run(process.execPath, [cli, 'up', '--no-workers'], { env, timeout: 300_000 }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    assert.ok(failure, 'up fails while the S3 port is held');
    assert.equal(failure.code, 1);
    assert.match(failure.stderr, new RegExp(`port ${s3Port} \\(SeaweedFS s3\\) is in use`));
    assert.match(failure.stderr, /✓ temporal/, 'Temporal had started');
    assert.match(failure.stderr, /✓ postgres/, 'Postgres had started');
    for (const [name, port] of Object.entries(ports)) assert.equal(await canConnect(port), false, `${name} port ${port} is free again`);
    assert.deepEqual(
      fs.readdirSync(path.join(home, 'run')).filter((file) => file.endsWith('.pid')),
      [],
      'no pid file left',
    );
    assert.equal(fs.existsSync(path.join(home, 'postgres', 'data', 'postmaster.pid')), false, 'Postgres is stopped');
  } finally {
    blocker.close();
    await run(process.execPath, [cli, 'down'], { env }).catch(() => undefined);
    removeHome(folder, home);
  }
});

for (const [signal, code] of [
  ['SIGTERM', 143],
  ['SIGINT', 130],
] as const) {
  test(`${signal} stops a running \`bench async\`: exit ${code}, its learner and trajectories terminated`, async () => {
    const context = await openContext(uniquePrefix('interrupt'));
    const startedAfter = new Date();
    // Long trajectories (8 turns of 5 s for the second question) and a 10-minute train step: it runs until stopped.
    const child = spawn(
      process.execPath,
      [
        cli,
        'bench',
        'async',
        '--steps',
        '2',
        '--batch',
        '4',
        '--group',
        '2',
        '--max-inflight',
        '4',
        '--max-turns',
        '50',
        '--turn-delay-ms',
        '5000',
        '--step-seconds',
        '600',
      ],
      { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
    try {
      let learnerId = '';
      const runningChildren = async () => {
        const ids: string[] = [];
        for await (const execution of context.client.workflow.list({
          query: `ParentWorkflowId = '${learnerId}' AND ExecutionStatus = 'Running'`,
        }))
          ids.push(execution.workflowId);
        return ids;
      };
      await until('the benchmark has started its learner', async () => {
        for await (const execution of context.client.workflow.list({ query: "WorkflowType = 'learner' AND ExecutionStatus = 'Running'" })) {
          if (execution.workflowId.startsWith('bench-async-sync-') && execution.startTime >= startedAfter) learnerId = execution.workflowId;
        }
        return learnerId !== '';
      });
      let before: string[] = [];
      await until('the learner has trajectories running', async () => (before = await runningChildren()).length > 0);

      child.kill(signal);
      const exitCode = await Promise.race([exited, sleep(120_000, 'still running', { ref: false })]);
      assert.equal(exitCode, code, output);
      assert.match(output, new RegExp(`terminated workflow ${learnerId}`));
      assert.equal((await context.client.workflow.getHandle(learnerId).describe()).status.name, 'TERMINATED');
      // The second question's trajectories (8 turns of 5 s) cannot have finished by themselves.
      const statuses = await Promise.all(before.map(async (id) => (await context.client.workflow.getHandle(id).describe()).status.name));
      assert.ok(
        statuses.every((status) => status === 'TERMINATED' || status === 'COMPLETED'),
        `no trajectory left running: ${statuses.join(', ')}`,
      );
      assert.ok(statuses.includes('TERMINATED'), 'the running trajectories were terminated');
    } finally {
      child.kill('SIGKILL');
      await context.close();
    }
  });
}
