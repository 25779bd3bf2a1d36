/**
 * Benchmarks of the trajectory loop itself (DESIGN §5 contracts):
 *  - overhead: a 200-turn trajectory with an instant scripted policy and tools, through Temporal,
 *    against a plain in-process loop doing the same work (same activity code, same blob I/O).
 *  - concurrency: N trajectories in flight on one agent worker process; its peak RSS.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import type pg from 'pg';
import { createTurnGenerator, createTurnToolActivities } from '../activities/agent/agent-turn.activities.js';
import { createFinishActivities } from '../activities/agent/finish.activities.js';
import { createScriptedPolicy } from '../test/doubles/scripted-policy.js';
import { createScriptedTools } from '../test/doubles/scripted-tools.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import type { Config } from '../infra/config.js';
import { openServices } from '../composition/services.js';
import { repoRoot } from '../infra/paths.js';
import { runningPid } from '../infra/services/processes.js';
import { taskQueueName } from '../workflows/contracts/queues.js';
import { trajectoryWorkflowType } from '../workflows/contracts/trajectory.contract.js';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { BlobStore } from '../activities/ports/blob-store.port.js';
import type { PolicyBackend } from '../activities/ports/policy.port.js';
import type { LocalToolRunner, ToolActivities } from '../workflows/contracts/tools.contract.js';
import { connectClient } from '../infra/temporal/connection.js';
import { temporalService } from '../infra/services/temporal.service.js';
import proto from '@temporalio/proto';
import type { GenerateTurnInput } from '../workflows/contracts/agent-turn.contract.js';

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};
const round = (value: number, digits = 2) => Number(value.toFixed(digits));

/** One trajectory through Temporal: its per-turn times, history and where the time went. */
export interface TemporalRun {
  temporal_per_turn_ms_p50: number;
  temporal_per_turn_ms_p95: number;
  per_turn_overhead_ms_p50: number;
  history_bytes: number;
  history_events: number;
  /** Where a turn's time goes: p50 ms of each step between consecutive history events (DESIGN §5). */
  breakdown_ms_p50: Record<string, number>;
  workflow_tasks_per_turn: number;
  /** CPU milliseconds per turn of each process on the path, from the workers' start to the trajectory's end. */
  cpu_ms_per_turn: CpuPerTurn;
  /** CPU ms this process spent creating the workers (loading the workflow bundle in the workflow thread): once per run, not per turn. */
  worker_start_cpu_ms: number;
}

/** What `--compare` runs beside the defaults, in the same invocation (docs/BENCHMARKS.md). */
export const overheadVariants = {
  tools_queue:
    "the stack's server, every turn's tools on the tools queue (trajectory option localTools: false): the path before local tools",
  stock_server:
    "a throwaway dev server with Temporal's stock dynamic config (history.transferProcessorMaxPollRPS 20), otherwise as `longhaul up` starts it, and tools on the tools queue: the path before both changes",
} as const;
export type OverheadVariant = keyof typeof overheadVariants;

export interface OverheadResult {
  turns: number;
  per_turn_overhead_ms_p50: number;
  baseline_per_turn_ms_p50: number;
  temporal_per_turn_ms_p50: number;
  temporal_per_turn_ms_p95: number;
  ratio_p50: number;
  history_bytes: number;
  history_events: number;
  /** Where a turn's time goes: p50 ms of each step between consecutive history events (DESIGN §5). */
  breakdown_ms_p50: Record<string, number>;
  workflow_tasks_per_turn: number;
  /** CPU milliseconds per turn of each process on the path, baseline and Temporal phases apart. */
  cpu_ms_per_turn: { baseline: CpuPerTurn; temporal: CpuPerTurn };
  /** CPU ms this process spent creating the workers, once per run (not in cpu_ms_per_turn). */
  worker_start_cpu_ms: number;
  /** With --compare: the same trajectory under each variant, run after the defaults in this invocation. */
  variants?: Partial<Record<OverheadVariant, TemporalRun>>;
  /** /proc/loadavg when the run started: a loaded machine inflates every figure. */
  loadavg: string;
}

interface CpuPerTurn {
  /** This process: workers, activities, payload codec (and the plain loop itself). */
  benchmark: number;
  /**
   * The same, by thread (Linux /proc/self/task; null elsewhere): `main` (activities, S3 client, the SDK's
   * worker loop and payload conversion), `workflow_threads` (threads started during the run: the SDK's
   * workflow sandbox thread), `sdk_core` (SDK Core's tokio threads: gRPC, state machines), `other` (V8's
   * GC and compiler threads, libuv's pool).
   */
  benchmark_threads: Record<'main' | 'workflow_threads' | 'sdk_core' | 'other', number> | null;
  temporal_server: number | null;
  blob_store: number | null;
}

/** CPU ms so far of each thread of this process, by thread id, with its name (null where /proc is missing). */
function threadCpu(): Map<string, { name: string; ms: number }> | null {
  try {
    const threads = new Map<string, { name: string; ms: number }>();
    for (const tid of fs.readdirSync('/proc/self/task')) {
      try {
        const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
        threads.set(tid, { name, ms: (Number(fields[11]) + Number(fields[12])) * 10 });
      } catch {
        // the thread ended between the listing and the read
      }
    }
    return threads;
  } catch {
    return null;
  }
}

/**
 * CPU time so far (ms) of this process and of the stack's Temporal server and blob store, when they
 * run here; `serverHome` is the home of the Temporal server measured (another one for a variant's).
 */
function cpuSnapshot(home: string, serverHome = home) {
  const ofPid = (name: string, where = home) => {
    const pid = runningPid(where, name);
    if (pid === undefined) return null;
    try {
      const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in clock ticks of 10 ms
    } catch {
      return null;
    }
  };
  const own = process.cpuUsage();
  return {
    benchmark: (own.user + own.system) / 1000,
    threads: threadCpu(),
    temporal_server: ofPid('temporal', serverHome),
    blob_store: ofPid('s3'),
  };
}

/** Per-thread CPU between two snapshots, grouped (see CpuPerTurn.benchmark_threads); threads that ended are not counted. */
function threadsPerTurn(
  before: ReturnType<typeof threadCpu>,
  after: ReturnType<typeof threadCpu>,
  turns: number,
  /** Threads that ran before the workers were created (the others are the workers' own). */
  existing: ReturnType<typeof threadCpu> = before,
) {
  if (!before || !after || !existing) return null;
  const groups = { main: 0, workflow_threads: 0, sdk_core: 0, other: 0 };
  for (const [tid, { name, ms }] of after) {
    const earlier = before.get(tid);
    const spent = ms - (earlier?.ms ?? 0);
    const group =
      tid === String(process.pid) ? 'main' : name.startsWith('tokio') ? 'sdk_core' : existing.has(tid) ? 'other' : 'workflow_threads';
    groups[group] += spent;
  }
  return {
    main: round(groups.main / turns, 1),
    workflow_threads: round(groups.workflow_threads / turns, 1),
    sdk_core: round(groups.sdk_core / turns, 1),
    other: round(groups.other / turns, 1),
  };
}

function cpuPerTurn(
  before: ReturnType<typeof cpuSnapshot>,
  after: ReturnType<typeof cpuSnapshot>,
  turns: number,
  existingThreads: ReturnType<typeof threadCpu> = before.threads,
): CpuPerTurn {
  const per = (a: number | null, b: number | null) => (a === null || b === null ? null : round((b - a) / turns, 1));
  return {
    benchmark: round((after.benchmark - before.benchmark) / turns, 1),
    benchmark_threads: threadsPerTurn(before.threads, after.threads, turns, existingThreads),
    temporal_server: per(before.temporal_server, after.temporal_server),
    blob_store: per(before.blob_store, after.blob_store),
  };
}

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

const eventMs = (event: HistoryEvent) => Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
const eventKind = (event: HistoryEvent) => {
  const name = String(proto.temporal.api.enums.v1.EventType[event.eventType ?? 0] ?? event.eventType).replace(/^EVENT_TYPE_/, '');
  return name.toLowerCase().replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
};

/**
 * The p50 time between each pair of consecutive history events (e.g. "workflowTaskScheduled →
 * workflowTaskStarted" is the workflow task's schedule-to-start), over the turns' events: the
 * instrument that says whether a turn waits on the server's dispatch, the worker or the activity.
 */
export function historyBreakdown(events: readonly HistoryEvent[]): { breakdown: Record<string, number>; workflowTasks: number } {
  const steps = new Map<string, number[]>();
  let workflowTasks = 0;
  for (let index = 1; index < events.length; index += 1) {
    const previous = events[index - 1]!;
    const current = events[index]!;
    if (eventKind(current) === 'workflowTaskCompleted') workflowTasks += 1;
    const label = `${eventKind(previous)} → ${eventKind(current)}`;
    steps.set(label, [...(steps.get(label) ?? []), eventMs(current) - eventMs(previous)]);
  }
  const breakdown: Record<string, number> = {};
  for (const [label, values] of [...steps].sort((a, b) => b[1].length - a[1].length)) {
    if (values.length >= 3) breakdown[`${label} (×${values.length})`] = round(percentile(values, 50));
  }
  return { breakdown, workflowTasks };
}

export interface OverheadOptions {
  /** Variants to run after the defaults, side by side in this invocation. */
  readonly compare?: readonly OverheadVariant[];
}

export async function runOverheadBenchmark(
  config: Config,
  turns: number,
  log: (line: string) => void,
  options: OverheadOptions = {},
): Promise<OverheadResult> {
  const services = openServices(config, { poolSize: 4 });
  const { blobs, pool } = services;
  const prefix = `bench-overhead-${randomUUID().slice(0, 8)}-`;
  const question = `script:{"turns":${turns},"answer":"done"}`;
  const policy = createScriptedPolicy();
  const tools = createScriptedTools();
  try {
    // Baseline: the same activity code in a plain loop, no Temporal.
    log(`baseline: ${turns} turns in a plain loop…`);
    const generate = createTurnGenerator({ blobs, backend: policy });
    const { runTurnTools } = createTurnToolActivities({ blobs, tools });
    const { finishTrajectory } = createFinishActivities({ blobs, trajectories: services.trajectories });
    const baselineId = `${prefix}baseline`;
    const baseline: number[] = [];
    const loadavg = fs.readFileSync('/proc/loadavg', 'utf8').trim();
    const baselineCpu = cpuSnapshot(config.home);
    const prompt: GenerateTurnInput['prompt'] = {
      protocol: 'tags',
      contextMode: 'full',
      recentChars: 25_000,
      tools: ['search', 'access', 'answer'],
      template: 'chatml',
    };
    for (let turn = 0; turn < turns; turn += 1) {
      const startedAt = performance.now();
      const result = await generate(
        {
          trajectoryId: baselineId,
          turn,
          question,
          prompt,
          maxNewTokens: 512,
          maxCallsPerTurn: 1,
          temperature: 0,
          seed: 0,
          policyVersion: 0,
        },
        { heartbeat: () => undefined },
      );
      if (result.action.kind === 'tools') await runTurnTools({ trajectoryId: baselineId, turn, maxObservationChars: 5000 });
      baseline.push(performance.now() - startedAt);
    }
    const baselineCpuEnd = cpuSnapshot(config.home);
    await finishTrajectory({
      trajectoryId: baselineId,
      question,
      answers: ['done'],
      questionId: '',
      dataset: 'bench',
      runId: '',
      turns,
      stopReason: 'answered',
      answer: 'done',
      invalidSteps: 0,
      generatedTokens: 0,
      versionsUsed: [0],
      rewardMetric: 'f1',
    });

    const baselineP50 = percentile(baseline, 50);
    const client = await services.client();
    // The scripted tools stand for search and document reads on the stack's Postgres: local, as those are by default.
    const localTools = { runTools: tools.runTools, runsLocally: () => true };
    const trajectoryOnce = (target: Config, targetClient: Client, name: string, local: boolean) =>
      runTrajectoryThroughTemporal({
        config: target,
        stackHome: config.home,
        client: targetClient,
        blobs,
        pool,
        policy,
        tools,
        localTools: local ? localTools : undefined,
        prefix: `${prefix}${name}-`,
        question,
        turns,
        baselineP50,
        log,
      });
    const main = await trajectoryOnce(config, client, 'temporal', true);
    const variants: Partial<Record<OverheadVariant, TemporalRun>> = {};
    for (const variant of options.compare ?? []) {
      log(`variant ${variant}: ${overheadVariants[variant]}`);
      if (variant === 'tools_queue') variants[variant] = await trajectoryOnce(config, client, variant, false);
      else {
        const stock = await startStockServer(config);
        try {
          const stockClient = await connectClient(stock.config, blobs);
          try {
            variants[variant] = await trajectoryOnce(stock.config, stockClient, variant, false);
          } finally {
            await stockClient.connection.close();
          }
        } finally {
          await stock.stop();
        }
      }
    }
    return {
      turns,
      baseline_per_turn_ms_p50: round(baselineP50),
      temporal_per_turn_ms_p50: main.temporal_per_turn_ms_p50,
      temporal_per_turn_ms_p95: main.temporal_per_turn_ms_p95,
      per_turn_overhead_ms_p50: main.per_turn_overhead_ms_p50,
      ratio_p50: round(main.temporal_per_turn_ms_p50 / baselineP50),
      history_bytes: main.history_bytes,
      history_events: main.history_events,
      breakdown_ms_p50: main.breakdown_ms_p50,
      workflow_tasks_per_turn: main.workflow_tasks_per_turn,
      cpu_ms_per_turn: { baseline: cpuPerTurn(baselineCpu, baselineCpuEnd, turns), temporal: main.cpu_ms_per_turn },
      worker_start_cpu_ms: main.worker_start_cpu_ms,
      ...(options.compare?.length ? { variants } : {}),
      loadavg,
    };
  } finally {
    await services.close();
  }
}

interface TrajectoryRunInput {
  /** The Temporal server to run on (the stack's, or a variant's). */
  readonly config: Config;
  /** LONGHAUL_HOME of the stack (its blob store's CPU is measured). */
  readonly stackHome: string;
  readonly client: Client;
  readonly blobs: BlobStore;
  readonly pool: pg.Pool;
  readonly policy: PolicyBackend;
  readonly tools: Pick<ToolActivities, 'runTools'>;
  /** The agent worker's local tools; absent: the trajectory keeps every turn on the tools queue (localTools: false). */
  readonly localTools: LocalToolRunner | undefined;
  readonly prefix: string;
  readonly question: string;
  readonly turns: number;
  readonly baselineP50: number;
  readonly log: (line: string) => void;
}

/** One scripted trajectory through the real workflow and in-process workers on `config`'s server, read back from its history. */
async function runTrajectoryThroughTemporal(run: TrajectoryRunInput): Promise<TemporalRun> {
  const { config, client, prefix, turns } = run;
  run.log(`temporal: ${turns} turns through the trajectory workflow at ${config.temporal.address}…`);
  const beforeStart = cpuSnapshot(run.stackHome, config.home);
  const agent = await createInProcessAgent({
    config,
    blobs: run.blobs,
    pool: run.pool,
    backend: run.policy,
    tools: run.tools,
    ...(run.localTools ? { localTools: run.localTools } : {}),
    prefix,
  });
  // Per-turn CPU counts from here: creating the workers (the workflow thread loading the bundle) is a one-off, reported apart.
  const before = cpuSnapshot(run.stackHome, config.home);
  const workflowId = `${prefix}trajectory`;
  let after = before;
  await agent.run(async () => {
    await client.workflow.execute(trajectoryWorkflowType, {
      taskQueue: taskQueueName('agent', prefix),
      workflowId,
      args: [
        {
          question: run.question,
          answers: ['done'],
          dataset: 'bench',
          limits: { maxTurns: turns },
          options: { localTools: run.localTools !== undefined },
        },
      ],
    });
    // Before the workers stop: their threads' CPU is gone once they end.
    after = cpuSnapshot(run.stackHome, config.home);
  });
  const handle = client.workflow.getHandle(workflowId);
  const history = await handle.fetchHistory();
  const described = await handle.describe();
  const { breakdown, workflowTasks } = historyBreakdown(history.events ?? []);
  const scheduled = (history.events ?? [])
    .filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'generateTurn')
    .map(eventMs);
  const perTurn = scheduled.slice(1).map((time, index) => time - scheduled[index]!);
  const p50 = percentile(perTurn, 50);
  return {
    temporal_per_turn_ms_p50: round(p50),
    temporal_per_turn_ms_p95: round(percentile(perTurn, 95)),
    per_turn_overhead_ms_p50: round(p50 - run.baselineP50),
    history_bytes: described.historySize ?? 0,
    history_events: described.historyLength,
    breakdown_ms_p50: breakdown,
    workflow_tasks_per_turn: round(workflowTasks / turns),
    cpu_ms_per_turn: cpuPerTurn(before, after, turns, beforeStart.threads),
    worker_start_cpu_ms: round(before.benchmark - beforeStart.benchmark, 0),
  };
}

/**
 * A second embedded dev server, started for this run only, with Temporal's stock dynamic config and
 * otherwise the flags `longhaul up` gives (SQLite file with WAL, search attributes), on free ports,
 * under its own home inside LONGHAUL_HOME; stop() removes it again.
 */
async function startStockServer(config: Config): Promise<{ config: Config; stop: () => Promise<void> }> {
  const home = path.join(config.home, 'bench-stock-server');
  fs.rmSync(home, { recursive: true, force: true });
  const [port, uiPort] = [await freePort(), await freePort()];
  const stockConfig: Config = {
    ...config,
    home,
    temporal: { ...config.temporal, embedded: true, port, uiPort, address: `127.0.0.1:${port}` },
  };
  const service = temporalService(stockConfig, { dynamicConfig: {} });
  try {
    await service.start();
  } catch (error) {
    fs.rmSync(home, { recursive: true, force: true });
    throw error;
  }
  return {
    config: stockConfig,
    stop: async () => {
      await service.stop();
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface ConcurrencyResult {
  inflight: number;
  /** Trajectories open at once at the peak: started, not yet finished, when the last start returned. */
  peak_inflight: number;
  completed: number;
  failed: number;
  /** Peak RSS of the agent worker process (all the workflows), MB. */
  rss_mb: number;
  /** @deprecated the same figure under its first name */
  rss_mb_max: number;
  seconds: number;
  turns_per_second: number;
  /** The embedded Temporal server's CPU seconds during the run and its peak RSS (null against an external server). */
  server: { cpu_seconds: number | null; rss_mb: number | null };
  loadavg: { before: string; after: string };
}

function peakRssMb(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return null;
  }
}

/**
 * What `bench concurrency` measured on the 2-core development machine (docs/BENCHMARKS.md): the agent
 * worker's memory (a fixed base plus its share per cached trajectory workflow) and the most
 * trajectories held in flight at once.
 */
export const measuredConcurrency = { workerBaseMb: 200, workerMbPerTrajectory: 0.5, heldInflight: 1000 } as const;

/**
 * How many trajectories this machine can hold in flight on one agent worker: the agent worker may use
 * half of the memory free now. Beyond it the run would swap or be killed, so the command refuses.
 */
export function inflightCapacity(freeMemoryBytes: number): number {
  const usableMb = freeMemoryBytes / 2 / 1024 / 1024;
  return Math.max(0, Math.floor((usableMb - measuredConcurrency.workerBaseMb) / measuredConcurrency.workerMbPerTrajectory));
}

const loadAverage = () => fs.readFileSync('/proc/loadavg', 'utf8').trim();

/**
 * N trajectories at once; the agent worker runs as its own process (workers/agent.worker.js, the
 * options users get) so its memory is measured alone. Never hangs: after `deadlineSeconds` it reports
 * what finished and counts the rest as failed.
 */
export async function runConcurrencyBenchmark(
  config: Config,
  inflight: number,
  turns: number,
  log: (line: string) => void,
  options: { delayMs?: number; deadlineSeconds?: number } = {},
): Promise<ConcurrencyResult> {
  const services = openServices(config, { poolSize: 8 });
  const { blobs, pool } = services;
  const prefix = `bench-concurrency-${randomUUID().slice(0, 8)}-`;
  const delayMs = options.delayMs ?? 200;
  const deadlineSeconds = options.deadlineSeconds ?? 1800;
  const worker = spawn(process.execPath, [path.join(repoRoot, 'dist', 'workers', 'agent.worker.js')], {
    env: { ...process.env, LONGHAUL_TASK_QUEUE_PREFIX: prefix },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    worker.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('polling')) resolve();
    });
    worker.once('exit', (code) => reject(new Error(`agent worker exited with ${code}`)));
  });
  let rssMax = 0;
  const sampler = setInterval(() => {
    rssMax = Math.max(rssMax, peakRssMb(worker.pid) ?? 0);
  }, 500);
  const serverPid = config.temporal.embedded ? runningPid(config.home, 'temporal') : undefined;
  const serverCpu = () => cpuSnapshot(config.home).temporal_server;
  const client = await services.client();
  const helpers = await createInProcessAgent({
    config,
    blobs,
    pool,
    prefix,
    roles: ['gpu-infer', 'tools'],
    backend: createScriptedPolicy(),
    tools: createScriptedTools(),
    maxConcurrentActivities: inflight * 2,
  });
  const loadBefore = loadAverage();
  const serverCpuBefore = serverPid === undefined ? null : serverCpu();
  const startedAt = Date.now();
  let completed = 0;
  let failed = 0;
  const progress = setInterval(
    () =>
      log(
        `${completed} completed, ${failed} failed, ${inflight - completed - failed} in flight (${Math.round((Date.now() - startedAt) / 1000)} s)`,
      ),
    10_000,
  );
  try {
    let peak = 0;
    await helpers.run(async () => {
      log(`starting ${inflight} trajectories of ${turns} turns (${delayMs} ms per generation)…`);
      const handles = await Promise.all(
        Array.from({ length: inflight }, (_, index) =>
          client.workflow.start(trajectoryWorkflowType, {
            taskQueue: taskQueueName('agent', prefix),
            workflowId: `${prefix}${index}`,
            args: [{ question: `script:{"turns":${turns},"answer":"done","delayMs":${delayMs}}`, answers: ['done'], dataset: 'bench' }],
          }),
        ),
      );
      // Outcomes are counted on the server: a thousand result() long polls at once fail on the client
      // (under load 154 of the first 347 did) while their workflows run on and complete.
      const countOf = async (condition: string) =>
        (await client.workflow.count(`WorkflowId STARTS_WITH "${prefix}" AND ${condition}`)).count;
      const tally = async () => {
        completed = await countOf('ExecutionStatus = "Completed"');
        failed = await countOf('ExecutionStatus != "Completed" AND ExecutionStatus != "Running"');
      };
      await tally();
      peak = inflight - completed - failed;
      log(`all ${inflight} started in ${Math.round((Date.now() - startedAt) / 1000)} s; ${peak} in flight`);
      while (completed + failed < inflight && Date.now() - startedAt < deadlineSeconds * 1000) {
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        await tally();
      }
      if (completed + failed < inflight) {
        log(
          `deadline of ${deadlineSeconds} s passed with ${inflight - completed - failed} unfinished: counted as failed, terminating them`,
        );
        await Promise.allSettled(handles.map((handle) => handle.terminate('bench concurrency deadline')));
      }
    });
    rssMax = Math.max(rssMax, peakRssMb(worker.pid) ?? 0);
    const seconds = (Date.now() - startedAt) / 1000;
    const serverCpuAfter = serverPid === undefined ? null : serverCpu();
    return {
      inflight,
      peak_inflight: peak,
      completed,
      failed: inflight - completed,
      rss_mb: round(rssMax, 1),
      rss_mb_max: round(rssMax, 1),
      seconds: round(seconds, 1),
      turns_per_second: round((completed * turns) / seconds, 1),
      server: {
        cpu_seconds: serverCpuBefore === null || serverCpuAfter === null ? null : round((serverCpuAfter - serverCpuBefore) / 1000, 1),
        rss_mb: peakRssMb(serverPid) === null ? null : round(peakRssMb(serverPid)!, 1),
      },
      loadavg: { before: loadBefore, after: loadAverage() },
    };
  } finally {
    clearInterval(progress);
    clearInterval(sampler);
    worker.kill('SIGTERM');
    await services.close();
  }
}
