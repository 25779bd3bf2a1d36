/**
 * `longhaul chaos`: many faults, at random, during real work, with the promise checked at the end.
 *
 * It starts a stack of its own (Temporal dev server, Postgres, SeaweedFS under a fresh home and
 * ports, the blob store's data on a size-limited tmpfs when it may mount one), the four worker kinds
 * as processes (bench/chaos/chaos-worker.ts), and a workload; then, from a seeded random sequence,
 * it kills workers of every kind with SIGKILL (some tools-worker kills aimed between the ledger
 * tool's side effect and its completion), restarts the Temporal server, Postgres and the S3 server,
 * and fills the blob store's disk once. Then the workload finishes and its invariants are checked.
 *
 * Workloads plug in through `ChaosWorkload`: today the learner (async RL with trajectory children);
 * the synthesis and evaluation workflows can be added as further workloads running side by side,
 * each bringing its own start, finish and invariant checks.
 */
import { seededRandom } from '../../activities/evaluation/statistics.js';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { openServices, type Services } from '../../composition/services.js';
import { loadConfig, type Config } from '../../infra/config.js';
import { repoRoot } from '../../infra/paths.js';
import { postgresService } from '../../infra/services/postgres.service.js';
import { s3Service } from '../../infra/services/s3.service.js';
import { temporalService } from '../../infra/services/temporal.service.js';
import type { Service } from '../../infra/services/service.js';
import { queueRoles, type QueueRole } from '../../workflows/contracts/queues.js';
import { ledgerSchema } from './ledger-tool.js';
import { learnerWorkload } from './learner-workload.js';

export interface ChaosOptions {
  /** Faults to inject (kills, server restarts, the disk fill). */
  readonly faults: number;
  readonly seed: number;
  /** First of the stack's ports: Temporal, its UI, Postgres, S3 (+1000…+1003 and +10000 for SeaweedFS's own). */
  readonly portBase: number;
  readonly toolsDir: string;
  /** Seconds between faults: a random pause in [min, max]. */
  readonly pauseSeconds: readonly [number, number];
  /** Keep the stack's home (logs, data) after the run. */
  readonly keep?: boolean;
  readonly log: (line: string) => void;
  /** Registers a teardown to run if the process is interrupted (the CLI's onInterrupt); returns its unregister. */
  readonly onInterrupt?: (description: string, cleanup: () => Promise<void>) => () => void;
}

export type FaultKind = `kill ${QueueRole}` | 'restart temporal' | 'restart postgres' | 'restart s3' | 'fill disk';

export interface FaultRecord {
  readonly index: number;
  readonly kind: FaultKind;
  readonly atSeconds: number;
  readonly detail?: string;
}

export interface ChaosSummary {
  readonly kills: number;
  readonly server_restarts: number;
  readonly disk_fills: number;
  /** Tools-worker kills that landed after the ledger tool's side effect and before its completion. */
  readonly mid_effect_kills: number;
  readonly trajectories: number;
  readonly completed: number;
  /** Still running at the end, and resumable (a worker will pick them up). */
  readonly resumable: number;
  readonly steps: number;
  readonly violations: number;
  readonly seed: number;
  readonly seconds: number;
  readonly violationDetails: readonly string[];
  readonly faults: readonly FaultRecord[];
  readonly notes: readonly string[];
}

/** What a workload gives the suite: the context it runs in. */
export interface ChaosContext {
  readonly config: Config;
  readonly services: Services;
  readonly client: Client;
  readonly pool: pg.Pool;
  readonly random: () => number;
  readonly log: (line: string) => void;
}

/** Work to break: started before the faults, finished after them, then checked. */
export interface ChaosWorkload {
  readonly name: string;
  start(context: ChaosContext): Promise<void>;
  /** One line on how far it got, for the progress log. */
  progress(context: ChaosContext): Promise<string>;
  /** Whether it is still doing work (faults only make sense meanwhile). */
  running(context: ChaosContext): Promise<boolean>;
  /** Wind down after the faults and wait for the work in flight. */
  finish(context: ChaosContext): Promise<void>;
  /** Invariant violations, each one line, and counts for the summary. */
  check(
    context: ChaosContext,
  ): Promise<{ violations: string[]; trajectories: number; completed: number; resumable: number; steps: number }>;
}

const everyKind: readonly FaultKind[] = [
  ...queueRoles.map((role) => `kill ${role}` as const),
  'restart temporal',
  'restart postgres',
  'restart s3',
  'fill disk',
];

/** The fault sequence: every kind once first (shuffled, so even a short run covers them all), then random kills and restarts (kills 3× as often). */
export function faultPlan(faults: number, random: () => number): FaultKind[] {
  const first = [...everyKind];
  for (let index = first.length - 1; index > 0; index -= 1) {
    const other = Math.floor(random() * (index + 1));
    [first[index], first[other]] = [first[other]!, first[index]!];
  }
  const later: FaultKind[] = [
    ...queueRoles.flatMap((role) => Array<FaultKind>(3).fill(`kill ${role}`)),
    'restart temporal',
    'restart postgres',
    'restart s3',
  ];
  const plan = first.slice(0, faults);
  while (plan.length < faults) plan.push(later[Math.floor(random() * later.length)]!);
  return plan;
}

/** Workers as processes, restarted when they die (as a process supervisor would); `kill` is ours. */
class WorkerSupervisor {
  private readonly processes = new Map<QueueRole, ChildProcess>();
  private stopping = false;

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly logDir: string,
    private readonly log: (line: string) => void,
  ) {}

  pid(role: QueueRole): number | undefined {
    return this.processes.get(role)?.pid;
  }

  start(role: QueueRole): Promise<void> {
    const out = fs.openSync(path.join(this.logDir, `chaos-${role}.log`), 'a');
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist', 'bench', 'chaos', 'chaos-worker.js'), role], {
      env: this.env,
      stdio: ['ignore', 'pipe', out],
    });
    fs.closeSync(out);
    this.processes.set(role, child);
    child.once('exit', (code, signal) => {
      if (this.stopping || this.processes.get(role) !== child || signal === 'SIGKILL') return;
      this.log(`  ${role} worker exited (${code ?? signal}); restarting it`);
      setTimeout(() => void this.start(role), 1000);
    });
    return new Promise((resolve) => {
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('polling task queue')) resolve();
      });
      child.once('exit', () => resolve());
    });
  }

  async kill(role: QueueRole): Promise<void> {
    const child = this.processes.get(role);
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    await this.start(role);
  }

  async stopAll(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.processes.values()].map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }),
    );
  }
}

/** Retry an operation through outages (a restart in progress) until it succeeds or time runs out. */
export async function persist<T>(what: string, operation: () => Promise<T>, timeoutMs = 180_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await operation();
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(error as Error).message}`);
      await sleep(500);
    }
  }
}

function cleanEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name.startsWith('TEMPORAL_') || name === 'DATABASE_URL' || name === 'S3_ENDPOINT' || name.startsWith('LONGHAUL_')) continue;
    env[name] = value;
  }
  return env;
}

export async function runChaos(options: ChaosOptions, workload: ChaosWorkload = learnerWorkload()): Promise<ChaosSummary> {
  const { log } = options;
  const startedAt = Date.now();
  const random = seededRandom(options.seed);
  const plan = faultPlan(options.faults, random);
  const home = path.join(os.tmpdir(), `longhaul-chaos-${options.seed}-${process.pid}`);
  const env: NodeJS.ProcessEnv = {
    ...cleanEnvironment(),
    LONGHAUL_HOME: home,
    LONGHAUL_TOOLS_DIR: options.toolsDir,
    LONGHAUL_TEMPORAL_PORT: String(options.portBase),
    LONGHAUL_TEMPORAL_UI_PORT: String(options.portBase + 1),
    LONGHAUL_PG_PORT: String(options.portBase + 2),
    LONGHAUL_S3_PORT: String(options.portBase + 3),
    LONGHAUL_TASK_QUEUE_PREFIX: 'chaos-',
    LONGHAUL_POLICY_BACKEND: 'scripted',
    LONGHAUL_LOG_LEVEL: 'warn',
  };
  const config = loadConfig(env);
  fs.mkdirSync(home, { recursive: true, mode: 0o755 });
  const notes: string[] = [];
  const s3Data = path.join(home, 's3', 'data');
  const mounted = mountSmallDisk(s3Data, notes);
  const servers: Record<'temporal' | 'postgres' | 's3', Service> = {
    temporal: temporalService(config),
    postgres: postgresService(config),
    s3: s3Service(config),
  };
  const logDir = path.join(home, 'logs');
  fs.mkdirSync(logDir, { recursive: true });
  const workers = new WorkerSupervisor(env, logDir, log);
  const services = openServices(config, { poolSize: 4 });
  const faults: FaultRecord[] = [];
  let kills = 0;
  let restarts = 0;
  let fills = 0;
  let midEffectKills = 0;
  let tornDown = false;
  const teardown = async () => {
    if (tornDown) return;
    tornDown = true;
    await workers.stopAll();
    await services.close().catch(() => undefined);
    for (const server of [servers.temporal, servers.s3, servers.postgres]) await server.stop().catch(() => undefined);
    if (mounted) unmount(s3Data);
    if (options.keep) log(`kept ${home}`);
    else removeHome(home);
  };
  const unregister = options.onInterrupt?.('stopping the chaos stack and removing its home', teardown);
  try {
    log(`seed ${options.seed}: ${options.faults} faults planned; stack under ${home} (ports from ${options.portBase})`);
    await Promise.all(Object.values(servers).map((server) => server.start()));
    const { pool } = services;
    await pool.query(ledgerSchema);
    const client = await services.client();
    const context: ChaosContext = { config, services, client, pool, random, log };
    await Promise.all(queueRoles.map((role) => workers.start(role)));
    await workload.start(context);
    log(`workload "${workload.name}" started; faults begin`);

    for (const [index, kind] of plan.entries()) {
      const [low, high] = options.pauseSeconds;
      await sleep((low + random() * (high - low)) * 1000);
      if (!(await workload.running(context).catch(() => true))) {
        notes.push(`the workload finished after ${index} faults, before the plan's ${plan.length}`);
        break;
      }
      let detail: string | undefined;
      if (kind.startsWith('kill ')) {
        const role = kind.slice('kill '.length) as QueueRole;
        if (role === 'tools' && random() < 0.5) {
          const pid = workers.pid(role);
          const inWindow = await waitForEffectWindow(pool, pid ?? -1, 5000);
          if (inWindow) midEffectKills += 1;
          detail = inWindow ? 'between a side effect and its completion' : 'aimed at a side effect, none in flight within 5 s';
        }
        await workers.kill(role);
        kills += 1;
      } else if (kind === 'fill disk') {
        if (!mounted) {
          detail = 'skipped: no size-limited disk (needs root to mount a tmpfs)';
        } else {
          detail = await fillDisk(s3Data, 8000);
          fills += 1;
        }
      } else {
        const name = kind.slice('restart '.length) as keyof typeof servers;
        await servers[name].stop();
        await persist(`restarting ${name}`, () => servers[name].start());
        restarts += 1;
      }
      // A fault may take a server down with it (the S3 server on a full disk): bring back what is down.
      for (const [name, server] of Object.entries(servers)) {
        if (!(await server.status()).running) {
          log(`  ${name} is down after the fault; starting it`);
          await persist(`starting ${name}`, () => server.start());
        }
      }
      const record: FaultRecord = { index, kind, atSeconds: (Date.now() - startedAt) / 1000, ...(detail ? { detail } : {}) };
      faults.push(record);
      const progress = await workload.progress(context).catch((error: Error) => `(no progress: ${error.message})`);
      log(`fault ${index + 1}/${plan.length}: ${kind}${detail ? ` (${detail})` : ''} · ${progress}`);
    }

    log('faults done; letting the workload finish');
    await workload.finish(context);
    log('checking invariants');
    const checked = await workload.check(context);
    const ledger = await checkLedger(pool);
    const violationDetails = [...checked.violations, ...ledger];
    return {
      kills,
      server_restarts: restarts,
      disk_fills: fills,
      mid_effect_kills: midEffectKills,
      trajectories: checked.trajectories,
      completed: checked.completed,
      resumable: checked.resumable,
      steps: checked.steps,
      violations: violationDetails.length,
      seed: options.seed,
      seconds: Math.round((Date.now() - startedAt) / 1000),
      violationDetails,
      faults,
      notes,
    };
  } finally {
    unregister?.();
    await teardown();
  }
}

/** No side effect applied twice: the ledger has at most one row per idempotency key. */
export async function checkLedger(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ effect_key: string; n: string }>(
    'SELECT effect_key, count(*) AS n FROM chaos_side_effects GROUP BY effect_key HAVING count(*) > 1 ORDER BY effect_key',
  );
  return rows.map((row) => `side effect ${row.effect_key} applied ${row.n} times (a non-idempotent tool ran twice)`);
}

async function waitForEffectWindow(pool: pg.Pool, pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const found = await pool
      .query('SELECT 1 FROM chaos_tool_attempts WHERE pid = $1 AND effect_done AND NOT completed LIMIT 1', [pid])
      .then((result) => (result.rowCount ?? 0) > 0)
      .catch(() => false);
    if (found) return true;
    await sleep(20);
  }
  return false;
}

/** The blob store's data folder on a 256 MiB tmpfs, so it can be filled (root only). */
function mountSmallDisk(dir: string, notes: string[]): boolean {
  fs.mkdirSync(dir, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256m,mode=0755', 'longhaul-chaos', dir], { stdio: 'pipe' });
    return true;
  } catch (error) {
    notes.push(
      `no size-limited disk for the blob store (mount tmpfs: ${(error as Error).message.split('\n')[0]}); the disk fill is skipped`,
    );
    return false;
  }
}

function unmount(dir: string): void {
  try {
    execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
  } catch {
    /* already gone */
  }
}

/** Fill the disk to the last byte, hold it full for `holdMs` while the work goes on, then free it. */
async function fillDisk(dir: string, holdMs: number): Promise<string> {
  const filler = path.join(dir, 'chaos-filler');
  const chunk = Buffer.alloc(1024 * 1024, 7);
  const descriptor = fs.openSync(filler, 'w');
  let written = 0;
  try {
    for (;;) {
      try {
        written += fs.writeSync(descriptor, chunk.length > 0 ? chunk : Buffer.alloc(0));
      } catch {
        // ENOSPC: write what still fits, byte-sized, until nothing does.
        try {
          for (;;) written += fs.writeSync(descriptor, Buffer.alloc(1));
        } catch {
          break;
        }
      }
    }
  } finally {
    fs.closeSync(descriptor);
  }
  await sleep(holdMs);
  fs.rmSync(filler, { force: true });
  return `${(written / 1024 / 1024).toFixed(0)} MiB written until full, held ${holdMs / 1000} s`;
}

function removeHome(home: string): void {
  // As root, a cluster may live outside the home behind a symlink (infra/services/postgres.service.ts).
  try {
    const target = fs.readlinkSync(path.join(home, 'postgres', 'data'));
    fs.rmSync(path.dirname(target), { recursive: true, force: true });
  } catch {
    /* the cluster was inside the home */
  }
  fs.rmSync(home, { recursive: true, force: true });
}
