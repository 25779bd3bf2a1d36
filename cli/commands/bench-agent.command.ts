import { config } from '../../infra/config.js';
import os from 'node:os';
import {
  inflightCapacity,
  measuredConcurrency,
  overheadVariants,
  runConcurrencyBenchmark,
  runOverheadBenchmark,
  type OverheadVariant,
} from '../../bench/agent-benchmarks.js';
import { runAsyncBenchmark } from '../../bench/async-benchmark.js';
import { batchSelections, type BatchSelection } from '../../workflows/contracts/learner.contract.js';
import { stackUp } from '../../infra/services/stack.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError } from '../command.js';

export const overheadBenchmark = {
  summary: 'per-turn cost of running the agent loop as a Temporal workflow vs a plain loop',
  usage: `longhaul bench overhead [--turns N] [--compare] [--json]

A trajectory with an instant scripted policy and instant tools, through the real workflow and
workers, against a plain in-process loop doing the same work (same activity code and blob I/O).
The main figures are those of the defaults users get (the stack's server, the workers' options).
  --turns N     turns per trajectory (default 200)
  --compare     also run the same trajectory under each variant below, after the defaults in this
                run (side by side on a noisy machine), reported under "variants":
${Object.entries(overheadVariants)
  .map(([name, what]) => `                  ${name}: ${what}`)
  .join('\n')}
  --json        last line: {"turns","per_turn_overhead_ms_p50","baseline_per_turn_ms_p50","temporal_per_turn_ms_p50","history_bytes",
                "breakdown_ms_p50","cpu_ms_per_turn" (per process; this one also by thread),"worker_start_cpu_ms","variants":{…},…}`,
  async run(args: string[]): Promise<number> {
    const { values } = parseFlags(args, { turns: { type: 'string' }, compare: { type: 'boolean' }, json: { type: 'boolean' } });
    const turns = integerFlag(values.turns, 'turns', 200, 2, 10_000);
    const compare = values.compare ? (Object.keys(overheadVariants) as OverheadVariant[]) : [];
    const settings = config();
    await stackUp(settings, { workers: false });
    const result = await runOverheadBenchmark(settings, turns, (line) => console.error(line), { compare });
    if (!values.json)
      console.log(
        `per turn p50: ${result.temporal_per_turn_ms_p50} ms through Temporal vs ${result.baseline_per_turn_ms_p50} ms in a plain loop (overhead ${result.per_turn_overhead_ms_p50} ms, ×${result.ratio_p50}); history ${result.history_events} events, ${result.history_bytes} bytes`,
      );
    for (const [name, run] of Object.entries(result.variants ?? {}))
      if (!values.json)
        console.log(`  ${name}: per turn p50 ${run.temporal_per_turn_ms_p50} ms (overhead ${run.per_turn_overhead_ms_p50} ms)`);
    console.log(JSON.stringify(result));
    return 0;
  },
};

export const concurrencyBenchmark = {
  summary: 'many trajectories in flight on one agent worker: completion and peak memory',
  usage: `longhaul bench concurrency [--inflight N] [--turns N] [--delay-ms MS] [--deadline-s S] [--json]

Starts N scripted trajectories at once (a latency-modelled policy and tools in this process) and
measures the peak RSS of the agent worker process (workers/agent.worker.js, default options) that
runs all of their workflows, and the embedded Temporal server's CPU and memory.
  --inflight N    trajectories in flight (default 200)
  --turns N       turns each (default 10)
  --delay-ms MS   modelled generation time per turn (default 200)
  --deadline-s S  stop waiting after S seconds: unfinished trajectories are terminated and counted as failed (default 1800)
  --json          last line: {"inflight","peak_inflight","completed","failed","rss_mb","seconds","server":{…},"loadavg":{…}}`,
  async run(args: string[]): Promise<number> {
    const { values } = parseFlags(args, {
      inflight: { type: 'string' },
      turns: { type: 'string' },
      'delay-ms': { type: 'string' },
      'deadline-s': { type: 'string' },
      json: { type: 'boolean' },
    });
    const inflight = integerFlag(values.inflight, 'inflight', 200, 1, 10_000);
    const turns = integerFlag(values.turns, 'turns', 10, 1, 1000);
    const delayMs = integerFlag(values['delay-ms'], 'delay-ms', 200, 0, 600_000);
    const deadlineSeconds = integerFlag(values['deadline-s'], 'deadline-s', 1800, 10, 86_400);
    const capacity = inflightCapacity(os.freemem());
    if (inflight > capacity)
      throw new UsageError(
        `--inflight ${inflight} is more than this machine can hold: with ${Math.round(os.freemem() / 2 ** 20)} MiB free the agent worker fits about ${capacity} trajectories (${measuredConcurrency.workerMbPerTrajectory} MB each over a ${measuredConcurrency.workerBaseMb} MB base, measured). Lower --inflight or free memory.`,
      );
    if (inflight > measuredConcurrency.heldInflight)
      console.error(
        `warning: --inflight ${inflight} is beyond the ${measuredConcurrency.heldInflight} measured on the 2-core development machine; the embedded server completes about one trajectory of 2 turns per second there, so a run that cannot finish within --deadline-s ${deadlineSeconds} stops then and counts the rest as failed`,
      );
    const settings = config();
    await stackUp(settings, { workers: false });
    const result = await runConcurrencyBenchmark(settings, inflight, turns, (line) => console.error(line), { delayMs, deadlineSeconds });
    if (!values.json)
      console.log(
        `${result.completed}/${result.inflight} completed (${result.peak_inflight} in flight at the peak), ${result.failed} failed in ${result.seconds} s; agent worker peak RSS ${result.rss_mb} MB; Temporal server ${result.server.cpu_seconds ?? '?'} s CPU, ${result.server.rss_mb ?? '?'} MB`,
      );
    console.log(JSON.stringify(result));
    return result.failed === 0 ? 0 : 1;
  },
};

export const asyncBenchmark = {
  summary: 'sync vs async learner on identical workloads (latency-model policy and trainer)',
  usage: `longhaul bench async [--steps N] [--sync-steps N] [--batch N] [--group N] [--eta N] [--max-inflight N] [--max-turns N]
                    [--turn-delay-ms MS] [--step-seconds S] [--selection freshest|expiring|priority] [--json]

The real learner workflow, workers and Temporal; the policy is a latency model (long-tail turn
counts up to --max-turns, --turn-delay-ms per generation) and trainStep sleeps --step-seconds.
Runs sync, then async, on the same questions. --max-inflight bounds the trajectories generating at
once in async mode (default 2 × batch; sync always generates one batch at a time).
  --sync-steps N  steps of the sync run (default --steps). Samples/hour is a rate, so a shorter sync
                  run measures it in less time (sync has no ramp to amortise: every step waits for its
                  whole batch); the output says so under "sync_steps".
  --selection     how the buffer picks a batch (default: the learner's, freshest): expiring takes first the
                  groups a step is the last able to train (stale after it), then the freshest
Each mode's "timeline" (from the learner's Temporal history) says where the wall went: seconds before
the first step, seconds the trainer waited between steps and how much of that with a full batch of
settled groups already there, trajectories started and in flight.
  --json   last line: {"sync":{"samples_per_hour","trainer_busy",…,"timeline"},"async":{…,"max_staleness"},"speedup","eta","sync_steps"}`,
  async run(args: string[]): Promise<number> {
    const { values } = parseFlags(args, {
      steps: { type: 'string' },
      'sync-steps': { type: 'string' },
      batch: { type: 'string' },
      group: { type: 'string' },
      eta: { type: 'string' },
      'max-turns': { type: 'string' },
      'max-inflight': { type: 'string' },
      'turn-delay-ms': { type: 'string' },
      'step-seconds': { type: 'string' },
      selection: { type: 'string' },
      json: { type: 'boolean' },
    });
    const selection = values.selection;
    if (selection !== undefined && !(batchSelections as readonly string[]).includes(selection))
      throw new UsageError(`--selection expects one of ${batchSelections.join(', ')}, got "${selection}"`);
    const steps = integerFlag(values.steps, 'steps', 6, 1, 10_000);
    const batchSize = integerFlag(values.batch, 'batch', 16, 1, 10_000);
    const groupSize = integerFlag(values.group, 'group', 4, 1, 256);
    const options = {
      steps,
      syncSteps: integerFlag(values['sync-steps'], 'sync-steps', steps, 1, 10_000),
      batchSize,
      groupSize,
      // Async starts more groups than it trains on (groups that outlive η versions are dropped), and a learner out of
      // questions waits with nothing to start: three times the groups the steps consume, plus a window, is plenty.
      questions: Math.ceil(((3 * steps + 8) * batchSize) / groupSize),
      eta: integerFlag(values.eta, 'eta', 4, 0, 1000),
      maxTurns: integerFlag(values['max-turns'], 'max-turns', 200, 1, 10_000),
      turnDelayMs: integerFlag(values['turn-delay-ms'], 'turn-delay-ms', 50, 0, 60_000),
      stepSeconds: integerFlag(values['step-seconds'], 'step-seconds', 20, 0, 3600),
      maxInflight: integerFlag(values['max-inflight'], 'max-inflight', 2 * batchSize, groupSize, 100_000),
      ...(selection !== undefined ? { selection: selection as BatchSelection } : {}),
    };
    const settings = config();
    await stackUp(settings, { workers: false });
    const result = await runAsyncBenchmark(settings, options, (line) => console.error(line));
    if (!values.json) {
      console.log(
        `sync:  ${result.sync.samples_per_hour} samples/h, trainer busy ${(result.sync.trainer_busy * 100).toFixed(0)} % (${result.sync_steps} steps${result.sync_steps !== steps ? `, async ran ${steps}` : ''})`,
      );
      console.log(
        `async: ${result.async.samples_per_hour} samples/h, trainer busy ${(result.async.trainer_busy * 100).toFixed(0)} %, max staleness ${result.async.max_staleness} (η=${result.eta})`,
      );
      console.log(`speed-up ×${result.speedup}`);
    }
    console.log(JSON.stringify(result));
    return 0;
  },
};
