/**
 * Issue 5 item 4, the two resume cases learner-chaos.test does not cover:
 * 1. kill -9 of the gpu-train worker while the real PyTorch engine is inside a step: the step is
 *    retried on a fresh worker with the same batch, the optimizer state carries on, every version is
 *    registered once with the previous as parent, and every trajectory is trained on at most once;
 * 2. kill -9 and restart of the Temporal server (one of its own) while trajectories are in flight:
 *    the learner completes with the same invariants and no started trajectory is lost.
 */
import { test, type TestContext as TestContext_ } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from '@temporalio/worker';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { publishPolicyVersion } from '../gpu/infer/policy-store.js';
import { tinyModelDir } from './doubles/test-model.js';
import { checkHyperparameters } from '../gpu/train/train-step.activities.js';
import { trainingOf } from '../gpu/train/version-files.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { connectWorker, dataConverter } from '../infra/temporal/connection.js';
import { repoRoot } from '../infra/paths.js';
import {
  learnerStateQuery,
  learnerWorkflowType,
  type LearnerResult,
  type TrainStepInput,
} from '../workflows/contracts/learner.contract.js';
import type { QueueRole } from '../workflows/contracts/queues.js';
import { accepts, openContext, spawnWorker, uniquePrefix, waitUntil, type TestContext } from './helpers/stack.js';

const run = promisify(execFile);

/** Scripted questions: 2–3 turns each (one or two searches), answer "a", so every reward is 1. */
async function putQuestions(context: TestContext, key: string, count: number): Promise<void> {
  const lines = Array.from({ length: count }, (_, index) =>
    JSON.stringify({ id: `q${index}`, question: `script:{"turns":${2 + (index % 2)},"answer":"a","delayMs":100}`, answers: ['a'] }),
  );
  await context.blobs.put(key, lines.join('\n'));
}

type Spawned = ChildProcess & { ready: Promise<void> };

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * gRPC port of this file's own Temporal server: the shared one + 40 (trajectory-chaos uses + 30), or the
 * next pair up when that pair is taken (a base port in the ephemeral range can find one of them used
 * as the local end of some connection).
 */
async function ownTemporalPort(shared: number): Promise<number> {
  for (let offset = 40; offset < 50; offset += 2) {
    if ((await portFree(shared + offset)) && (await portFree(shared + offset + 1))) return shared + offset;
  }
  throw new Error(`no free pair of ports for a Temporal server between ${shared + 40} and ${shared + 49}`);
}

async function kill9(worker: ChildProcess): Promise<void> {
  if (worker.exitCode !== null || worker.signalCode !== null) return;
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  worker.kill('SIGKILL');
  await exited;
}

/** Live (not zombie) processes whose command line contains `needle`. */
function processesWith(needle: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmdline.includes(needle) && alive(Number(entry))) found.push(Number(entry));
    } catch {
      /* gone meanwhile */
    }
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

interface LearnerHistory {
  /** Trajectory children the learner started (ChildWorkflowExecutionStarted), in order. */
  readonly children: string[];
  /** attempt and last failure of each trainStep activity, in the order they were scheduled (= step order). */
  readonly trainSteps: { attempt: number; lastFailure: string | null }[];
}

/** What the learner's event history (all runs, should it continue-as-new) says about children and training attempts. */
async function learnerHistory(client: Client, workflowId: string): Promise<LearnerHistory> {
  const children: string[] = [];
  const trainSteps: { attempt: number; lastFailure: string | null }[] = [];
  let runId: string | undefined;
  for (;;) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const scheduled = new Map<string, number>();
    let next: string | undefined;
    for (const event of history.events ?? []) {
      const id = String(event.eventId);
      if (event.childWorkflowExecutionStartedEventAttributes)
        children.push(event.childWorkflowExecutionStartedEventAttributes.workflowExecution!.workflowId!);
      if (event.activityTaskScheduledEventAttributes?.activityType?.name === 'trainStep') {
        scheduled.set(id, trainSteps.length);
        trainSteps.push({ attempt: 0, lastFailure: null });
      }
      const started = event.activityTaskStartedEventAttributes;
      const index = started ? scheduled.get(String(started.scheduledEventId)) : undefined;
      if (started && index !== undefined)
        trainSteps[index] = { attempt: started.attempt ?? 0, lastFailure: started.lastFailure?.message ?? null };
      if (event.workflowExecutionContinuedAsNewEventAttributes)
        next = event.workflowExecutionContinuedAsNewEventAttributes.newExecutionRunId ?? undefined;
    }
    if (!next) return { children, trainSteps };
    runId = next;
  }
}

/** Activities of a workflow that needed more than one attempt: "type ×attempt (last failure)". */
async function retriedActivities(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const types = new Map<string, string>();
  const retried: string[] = [];
  for (const event of history.events ?? []) {
    const name = event.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name) types.set(String(event.eventId), name);
    const started = event.activityTaskStartedEventAttributes;
    if (started && (started.attempt ?? 1) > 1)
      retried.push(`${types.get(String(started.scheduledEventId))} ×${started.attempt} (${started.lastFailure?.message ?? '?'})`);
  }
  return retried;
}

interface ChildrenState {
  /** Status of each child that closed. */
  readonly closed: Map<string, string>;
  /** Children still running after the grace period: what Temporal still has pending for each. */
  readonly running: Map<string, { progressing: boolean; detail: string }>;
}

/**
 * Wait up to `graceMs` for every child to close (the learner abandons those in flight when it
 * completes). A child still running then must still be driven by Temporal: an activity or workflow
 * task pending (an activity whose task was lost in a server crash is retried only after its timeout).
 */
async function settleChildren(client: Client, ids: readonly string[], graceMs: number): Promise<ChildrenState> {
  const closed = new Map<string, string>();
  const poll = async () => {
    for (const id of ids) {
      if (closed.has(id)) continue;
      const { status } = await client.workflow.getHandle(id).describe();
      if (status.name !== 'RUNNING') closed.set(id, status.name);
    }
    return closed.size === ids.length;
  };
  await waitUntil(poll, graceMs, 'every trajectory child to close').catch(() => undefined);
  const running = new Map<string, { progressing: boolean; detail: string }>();
  for (const id of ids.filter((child) => !closed.has(child))) {
    const handle = client.workflow.getHandle(id);
    const { raw, status } = await handle.describe();
    if (status.name !== 'RUNNING') {
      closed.set(id, status.name);
      continue;
    }
    const pending = (raw.pendingActivities ?? []).map(
      (activity) =>
        `${activity.activityType?.name} (state ${activity.state}, attempt ${activity.attempt}, last started ${activity.lastStartedTime?.seconds ?? '-'})`,
    );
    const events = ((await handle.fetchHistory()).events ?? []).slice(-3).map((event) => event.eventType);
    running.set(id, {
      progressing: pending.length > 0 || Boolean(raw.pendingWorkflowTask),
      detail: `pending activities [${pending.join('; ')}], workflow task ${raw.pendingWorkflowTask ? 'pending' : 'none'}, last events ${events.join(',')}`,
    });
  }
  return { closed, running };
}

/**
 * The buffer's invariants for a run: each step's claim is in buffer_batches, every trajectory in a claim
 * is marked consumed by exactly that step, and no trajectory is in two claims. Returns the claims by step.
 */
async function checkBuffer(context: TestContext, runId: string, steps: number, batchSize: number): Promise<string[][]> {
  const batches = await context.pool.query<{ step: number; trajectory_ids: string[] }>(
    'SELECT step, trajectory_ids FROM buffer_batches WHERE run_id = $1 ORDER BY step',
    [runId],
  );
  assert.deepEqual(
    batches.rows.map((row) => row.step),
    Array.from({ length: steps }, (_, step) => step),
    'one claim per step, no claim for a step never trained',
  );
  const claims = batches.rows.map((row) => row.trajectory_ids);
  for (const claim of claims) assert.equal(claim.length, batchSize);
  const claimed = claims.flat();
  assert.equal(new Set(claimed).size, steps * batchSize, 'no trajectory in two steps');
  const uses = await context.pool.query<{ trajectory_id: string; step: number }>(
    "SELECT trajectory_id, step FROM buffer_uses WHERE run_id = $1 AND state = 'consumed'",
    [runId],
  );
  assert.deepEqual(
    uses.rows.map((row) => `${row.step}:${row.trajectory_id}`).sort(),
    claims.flatMap((claim, step) => claim.map((id) => `${step}:${id}`)).sort(),
    'exactly the claimed trajectories are consumed, each by the step that claimed it',
  );
  return claims;
}

/**
 * No trajectory lost: the learner's own counts agree with its history and the buffer (started =
 * finished + in flight, consumed and dropped = the buffer's); every child that closed has its row and
 * every row is a started child's; a child still running has work pending in Temporal.
 */
async function checkNoneLost(
  context: TestContext,
  handle: WorkflowHandle,
  runId: string,
  result: LearnerResult,
): Promise<{ started: number; notCompleted: string[] }> {
  const { children } = await learnerHistory(context.client, handle.workflowId);
  assert.equal(new Set(children).size, children.length, 'no child started twice');
  const state = await handle.query(learnerStateQuery);
  assert.equal(
    state.finished + state.inflight,
    children.length,
    `every started child reported once or is still in flight (started ${children.length}, finished ${state.finished}, in flight ${state.inflight})`,
  );
  assert.equal(state.consumed, result.consumed);
  const uses = await context.pool.query<{ state: string; n: string }>(
    'SELECT state, count(*) AS n FROM buffer_uses WHERE run_id = $1 GROUP BY state',
    [runId],
  );
  const used = Object.fromEntries(uses.rows.map((row) => [row.state, Number(row.n)]));
  assert.equal(used.consumed ?? 0, result.consumed);
  assert.equal(used.dropped ?? 0, result.dropped);
  assert.ok(state.finished >= result.consumed + result.dropped, 'only finished trajectories were trained on or dropped');
  const graceMs = 60_000;
  const { closed, running } = await settleChildren(context.client, children, graceMs);
  for (const [id, { detail }] of running) console.log(`still running ${graceMs / 1000} s after the learner completed: ${id}: ${detail}`);
  assert.deepEqual(
    [...running].filter(([, child]) => !child.progressing).map(([id, child]) => `${id}: ${child.detail}`),
    [],
    'no child stalled (each still running has work pending)',
  );
  const rows = await context.pool.query<{ trajectory_id: string }>('SELECT trajectory_id FROM trajectories WHERE run_id = $1', [runId]);
  const written = new Set(rows.rows.map((row) => row.trajectory_id));
  assert.equal(written.size, rows.rows.length);
  assert.deepEqual(
    [...written].filter((id) => !children.includes(id)),
    [],
    'no row for a trajectory the learner did not start',
  );
  assert.deepEqual(
    [...closed.keys()].filter((id) => !written.has(id)),
    [],
    'every child that closed has its finished row',
  );
  assert.ok(written.size >= state.finished, 'every child the learner heard from has its row');
  const completed = [...closed.values()].filter((status) => status === 'COMPLETED').length;
  assert.ok(
    completed >= state.finished,
    `every child the learner heard from completed (${completed} completed, ${state.finished} reported)`,
  );
  return {
    started: children.length,
    notCompleted: [...closed].filter(([, status]) => status !== 'COMPLETED').map(([id, status]) => `${id} ${status}`),
  };
}

/**
 * A child still in flight when the learner completes writes its record and completes: its report to
 * the closed learner is dropped (it used to fail the child with "Unable to signal external workflow").
 */
async function abandonedChildrenComplete(t: TestContext_, notCompleted: readonly string[]): Promise<void> {
  await t.test('every trajectory child completes, also those still in flight when the learner completed', () => {
    assert.deepEqual(notCompleted, []);
  });
}

/** Log (for diagnosis) the activities of the learner and its children that needed more than one attempt. */
async function logRetries(client: Client, workflowId: string): Promise<void> {
  const { children } = await learnerHistory(client, workflowId);
  for (const id of [workflowId, ...children]) {
    const retried = await retriedActivities(client, id).catch((error: unknown) => [`(history unreadable: ${String(error)})`]);
    if (retried.length > 0) console.log(`retried in ${id}: ${retried.join('; ')}`);
  }
}

test(
  'a learner survives kill -9 of the gpu-train worker mid-step: the real engine resumes with the same batch and optimizer state, versions stay consecutive',
  { timeout: 480_000 },
  async (t) => {
    const started = Date.now();
    const prefix = uniquePrefix('resume-train');
    const context = await openContext(prefix);
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-resume-train-'));
    const versions = createPgPolicyVersionStore(context.pool);
    // Versions are global to a database: a random base keeps this test apart from others.
    const base = 6_000_000 + 10 * Math.floor(Math.random() * 100_000);
    await publishPolicyVersion({ blobs: context.blobs, versions, modelDir: await tinyModelDir(), version: base });
    await putQuestions(context, `${prefix}q.jsonl`, 60);
    // The scripted policy tags its tokens with the base version; the gpu-train worker keeps its staging and manifests in a home of its own.
    const env = { LONGHAUL_TASK_QUEUE_PREFIX: prefix, LONGHAUL_POLICY_BACKEND: 'scripted', LONGHAUL_POLICY_VERSION: String(base) };
    const trainEnv = { ...env, LONGHAUL_HOME: home };
    const processes: Record<'agent' | 'infer' | 'tools' | 'train', Spawned> = {
      agent: spawnWorker('agent', env),
      infer: spawnWorker('gpu-infer', env),
      tools: spawnWorker('tools', env),
      train: spawnWorker('gpu-train', trainEnv),
    };
    const runId = `${prefix}run`;
    const steps = 3;
    const batchSize = 4;
    try {
      await Promise.all(Object.values(processes).map((worker) => worker.ready));
      const handle = await context.client.workflow.start(learnerWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}learner`,
        args: [
          {
            runId,
            datasetKey: `${prefix}q.jsonl`,
            startVersion: base,
            settings: {
              groupSize: 2,
              batchSize,
              maxSteps: steps,
              eta: 4,
              maxInflight: 8,
              dropEqualRewardGroups: false,
              interruptOnPublish: false,
            },
            hyperparameters: { learningRate: 1e-3, microBatchSize: 2, ppo: { maxStaleness: 4 } },
          },
        ],
      });

      // Inside step 1: its manifest is written and its engine process runs.
      const manifestPath = path.join(home, 'train', runId, 'rl-step-1', 'manifest.json');
      let engines: number[] = [];
      await waitUntil(
        async () => {
          engines = processesWith(manifestPath);
          return engines.length > 0;
        },
        240_000,
        'the engine of step 1',
      );
      const manifestBefore = JSON.parse(fs.readFileSync(manifestPath, 'utf8')) as {
        step: number;
        outputPolicyVersion: number;
        samples: { id: string }[];
      };
      assert.deepEqual([manifestBefore.step, manifestBefore.outputPolicyVersion], [1, base + 2]);
      assert.equal(await versions.get(base + 2), undefined, 'step 1 had not finished when the worker was killed');
      console.log(
        `step 1's engine running (pid ${engines.join(',')}) after ${((Date.now() - started) / 1000).toFixed(1)} s: kill -9 of the gpu-train worker`,
      );
      await kill9(processes.train);
      const killedAt = Date.now();
      processes.train = spawnWorker('gpu-train', trainEnv);
      await processes.train.ready;
      // The orphaned engine dies at its next write to the dead worker's pipe; it must be gone before the retry starts another.
      let overlapped: number[] = [];
      await waitUntil(
        async () => {
          const orphans = engines.filter((pid) => alive(pid));
          if (orphans.length > 0) overlapped = [...overlapped, ...processesWith(manifestPath).filter((pid) => !engines.includes(pid))];
          return orphans.length === 0;
        },
        100_000,
        'the orphaned engine to exit',
      );
      assert.deepEqual(overlapped, [], 'no second engine of step 1 started while the orphaned one ran');
      console.log(
        `orphaned engine gone ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill; it published ${fs.existsSync(path.join(home, 'models', 'train', `v${String(base + 2).padStart(6, '0')}`)) ? 'a folder' : 'nothing'}`,
      );

      const result = (await handle.result()) as LearnerResult;
      console.log(
        `learner done ${((Date.now() - started) / 1000).toFixed(1)} s after start (retried step ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill)`,
      );
      assert.equal(result.steps, steps);
      assert.equal(result.finalVersion, base + steps);
      assert.deepEqual(
        result.history.map((stats) => [stats.step, stats.version]),
        [
          [0, base + 1],
          [1, base + 2],
          [2, base + 3],
        ],
        'versions in order, one per step',
      );

      // The kill landed inside step 1: its trainStep needed a second attempt, after the lost one timed out; the others needed one.
      const { trainSteps } = await learnerHistory(context.client, handle.workflowId);
      assert.deepEqual(
        trainSteps.map((step) => step.attempt),
        [1, 2, 1],
        JSON.stringify(trainSteps),
      );
      assert.match(trainSteps[1]!.lastFailure ?? '', /timeout|heartbeat/i);

      // Versions: each registered once by its step, parent = the previous one, nothing past the last.
      const registered = await context.pool.query<{ version: number; parent_version: number | null }>(
        'SELECT version, parent_version FROM policy_versions WHERE version > $1 AND version <= $2 ORDER BY version',
        [base, base + 9],
      );
      assert.deepEqual(
        registered.rows.map((row) => [row.version, row.parent_version]),
        [
          [base + 1, base],
          [base + 2, base + 1],
          [base + 3, base + 2],
        ],
      );
      for (let step = 0; step < steps; step += 1) {
        const row = (await versions.get(base + step + 1))!;
        const training = trainingOf(row);
        assert.deepEqual([training?.runId, training?.step, training?.kind, training?.baseVersion], [runId, step, 'rl', base + step]);
        // Optimizer state: each version's saved state counts every optimizer step since the base, so the retried step resumed it.
        const state = JSON.parse((await context.blobs.get(`${row.blobPrefix}engine_state.json`)).toString('utf8')) as {
          policyVersion: number;
          optimizerSteps: number;
          runId: string;
          step: number;
        };
        assert.deepEqual([state.policyVersion, state.optimizerSteps, state.runId, state.step], [base + step + 1, step + 1, runId, step]);
        assert.equal(training?.metrics.optimizerResumed, step > 0, `step ${step}: optimizer resumed from the previous version`);
      }

      // Data position: step 1 after the restart trained on exactly the batch claimed before the kill.
      const claims = await checkBuffer(context, runId, steps, batchSize);
      const idsOf = (manifest: { samples: { id: string }[] }) =>
        [...new Set(manifest.samples.map((sample) => sample.id.split('#')[0]!))].sort();
      assert.deepEqual(idsOf(manifestBefore), [...claims[1]!].sort(), 'the killed attempt trained on the claim of step 1');
      const manifestAfter = JSON.parse(fs.readFileSync(manifestPath, 'utf8')) as { samples: { id: string }[] };
      assert.deepEqual(
        manifestAfter.samples.map((sample) => sample.id),
        manifestBefore.samples.map((sample) => sample.id),
        'the retry trained on the same samples',
      );
      assert.equal(trainingOf((await versions.get(base + 2))!)?.metrics.samples, manifestBefore.samples.length);

      const { started: children, notCompleted } = await checkNoneLost(context, handle, runId, result);
      console.log(`${children} trajectories, ${result.consumed} trained on; test took ${((Date.now() - started) / 1000).toFixed(1)} s`);
      await abandonedChildrenComplete(t, notCompleted);
    } finally {
      for (const worker of Object.values(processes)) worker.kill('SIGKILL');
      await context.close();
      fs.rmSync(home, { recursive: true, force: true });
    }
  },
);

test(
  'a learner survives kill -9 and restart of the Temporal server mid-run: versions stay in order and no trajectory is lost or used twice',
  { timeout: 420_000 },
  async (t) => {
    const started = Date.now();
    const prefix = uniquePrefix('resume-temporal');
    const shared = await openContext(prefix);
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-resume-temporal-'));
    // A Temporal server of its own (shared Postgres and S3), so restarting it disturbs no other test (trajectory-chaos uses +30).
    const port = await ownTemporalPort(shared.config.temporal.port);
    const env = {
      LONGHAUL_HOME: home,
      LONGHAUL_TEMPORAL_PORT: String(port),
      LONGHAUL_TEMPORAL_UI_PORT: String(port + 1),
      DATABASE_URL: shared.config.postgres.url,
      S3_ENDPOINT: shared.config.s3.endpoint,
      LONGHAUL_TASK_QUEUE_PREFIX: prefix,
      LONGHAUL_POLICY_BACKEND: 'scripted',
    };
    const cli = (...args: string[]) =>
      run(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), ...args], { env: { ...process.env, ...env } });
    await shared.close();
    const processes = new Map<QueueRole, Spawned>();
    const trained: TrainStepInput[] = [];
    let opened: TestContext | undefined;
    let trainer: Worker | undefined;
    let running: Promise<void> | undefined;
    try {
      await cli('up', '--no-workers');
      const context = await openContext(prefix, env);
      opened = context;
      await putQuestions(context, `${prefix}q.jsonl`, 120);
      // The trainer is a latency model in this process (the engine's resume is the test above).
      trainer = await Worker.create({
        connection: await connectWorker(context.config),
        namespace: context.config.temporal.namespace,
        taskQueue: context.queue('gpu-train'),
        dataConverter: dataConverter(context.config, context.blobs),
        activities: {
          checkHyperparameters,
          async trainStep(input: TrainStepInput) {
            trained.push(input);
            await sleep(1500);
            return { version: input.outputVersion, metrics: {} };
          },
        },
      });
      running = trainer.run();
      for (const role of ['agent', 'gpu-infer', 'tools'] as const) processes.set(role, spawnWorker(role, env));
      await Promise.all([...processes.values()].map((worker) => worker.ready));
      const runId = `${prefix}run`;
      const steps = 4;
      const batchSize = 4;
      const handle = await context.client.workflow.start(learnerWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}learner`,
        args: [
          {
            runId,
            datasetKey: `${prefix}q.jsonl`,
            settings: {
              groupSize: 2,
              batchSize,
              maxSteps: steps,
              eta: 4,
              maxInflight: 8,
              dropEqualRewardGroups: false,
              interruptOnPublish: false,
            },
          },
        ],
      });
      let before = await handle.query(learnerStateQuery);
      await waitUntil(
        async () => {
          before = await handle.query(learnerStateQuery);
          return before.step >= 1 && before.step < steps && before.inflight >= 4;
        },
        240_000,
        'a step done and at least 4 trajectories in flight',
      );
      console.log(
        `restarting Temporal at step ${before.step} with ${before.inflight} trajectories in flight (${((Date.now() - started) / 1000).toFixed(1)} s)`,
      );
      const pid = Number(fs.readFileSync(path.join(home, 'run', 'temporal.pid'), 'utf8').split(' ')[0]);
      process.kill(pid, 'SIGKILL');
      await waitUntil(async () => !alive(pid), 10_000, 'the Temporal server to die');
      await waitUntil(
        async () => !(await accepts(port)) && !(await accepts(port + 1)),
        30_000,
        `the killed Temporal server to release ports ${port} and ${port + 1}`,
      );
      await cli('up', '--no-workers');
      const restartedAt = Date.now();
      assert.notEqual(
        Number(fs.readFileSync(path.join(home, 'run', 'temporal.pid'), 'utf8').split(' ')[0]),
        pid,
        'a new Temporal server process',
      );
      const result = (await handle.result()) as LearnerResult;
      console.log(`learner done ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after the restart`);

      assert.equal(result.steps, steps);
      assert.equal(result.finalVersion, steps);
      assert.ok(
        result.history.length === steps && result.history.every((stats, step) => stats.step === step && stats.version === step + 1),
        'versions in order, one per step',
      );
      const completedSteps = [...new Map(trained.map((step) => [step.step, step])).values()].sort((a, b) => a.step - b.step);
      assert.deepEqual(
        completedSteps.map((step) => [step.step, step.baseVersion, step.outputVersion]),
        [
          [0, 0, 1],
          [1, 1, 2],
          [2, 2, 3],
          [3, 3, 4],
        ],
      );
      for (const step of trained)
        assert.deepEqual(step.trajectoryIds, completedSteps[step.step]!.trajectoryIds, 'a retried step trains on the same batch');
      const claims = await checkBuffer(context, runId, steps, batchSize);
      assert.deepEqual(
        claims,
        completedSteps.map((step) => step.trajectoryIds),
        'each step trained on its claim',
      );
      const { started: children, notCompleted } = await checkNoneLost(context, handle, runId, result).finally(() =>
        logRetries(context.client, handle.workflowId).catch(() => undefined),
      );
      console.log(`${children} trajectories, ${result.consumed} trained on; test took ${((Date.now() - started) / 1000).toFixed(1)} s`);
      await abandonedChildrenComplete(t, notCompleted);
    } finally {
      for (const worker of processes.values()) worker.kill('SIGKILL');
      trainer?.shutdown();
      await running?.catch(() => undefined);
      await opened?.close();
      await cli('down').catch(() => undefined);
      fs.rmSync(home, { recursive: true, force: true });
    }
  },
);
