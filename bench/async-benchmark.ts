/**
 * `longhaul bench async`: the real learner workflow, workers and Temporal, with the policy and the
 * trainer replaced by latency models (long-tail turn counts up to 200 with a fixed per-turn delay;
 * a fixed train-step time). Runs `sync` then `async` on identical workloads, side by side.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createScriptedPolicy } from '../test/doubles/scripted-policy.js';
import { createScriptedTools } from '../test/doubles/scripted-tools.js';
import { createInProcessAgent } from '../composition/in-process-agent.js';
import type { Config } from '../infra/config.js';
import { openServices } from '../composition/services.js';
import { taskQueueName } from '../workflows/contracts/queues.js';
import { learnerTimeline } from './async-timeline.js';
import {
  learnerWorkflowType,
  type BatchSelection,
  type LearnerMode,
  type LearnerResult,
  type TrainStepInput,
} from '../workflows/contracts/learner.contract.js';

export interface AsyncBenchmarkOptions {
  readonly questions: number;
  readonly groupSize: number;
  readonly batchSize: number;
  readonly steps: number;
  /** Steps of the sync run (its samples/hour is a rate, so fewer steps measure it in less time); default `steps`. */
  readonly syncSteps?: number;
  readonly eta: number;
  readonly maxTurns: number;
  readonly turnDelayMs: number;
  readonly stepSeconds: number;
  /** Trajectories generating at once in async mode. */
  readonly maxInflight: number;
  /** How the buffer picks a batch (the learner's default when absent). */
  readonly selection?: BatchSelection;
}

/**
 * Long-tail turn counts (deterministic, golden-ratio sequence for u): T = 1 / (u^1.5 + 0.005),
 * capped at maxTurns. Median ≈ 3 turns, ~6 % of questions over 50 turns, ~2 % near 200 — the shape
 * that makes a synchronous batch wait for its slowest trajectory.
 */
export function longTailTurns(index: number, maxTurns: number): number {
  const u = ((index + 1) * 0.6180339887) % 1;
  return Math.max(1, Math.min(maxTurns, Math.round(1 / (Math.pow(u, 1.5) + 0.005))));
}

const round = (value: number, digits = 3) => Number(value.toFixed(digits));

async function runMode(config: Config, mode: LearnerMode, options: AsyncBenchmarkOptions, log: (line: string) => void) {
  const services = openServices(config, { poolSize: 8 });
  const { blobs, pool } = services;
  const prefix = `bench-async-${mode}-${randomUUID().slice(0, 8)}-`;
  const datasetKey = `bench/async/${prefix}questions.jsonl`;
  const lines = Array.from({ length: options.questions }, (_, index) =>
    JSON.stringify({
      id: `q${index}`,
      question: `script:{"turns":${longTailTurns(index, options.maxTurns)},"delayMs":${options.turnDelayMs},"answer":"a"}`,
      answers: ['a'],
    }),
  );
  await blobs.put(datasetKey, lines.join('\n'));
  let served = 0;
  const trainStep = async (input: TrainStepInput) => {
    await sleep(options.stepSeconds * 1000);
    served = input.outputVersion;
    return { version: input.outputVersion, metrics: { simulated: true } };
  };
  const client = await services.client();
  const tools = createScriptedTools();
  const workers = await createInProcessAgent({
    config,
    blobs,
    pool,
    prefix,
    backend: createScriptedPolicy({ version: () => served }),
    tools,
    // The scripted tools stand for search and document reads on the stack's Postgres: local, as those are by
    // default (without a runner every turn paid a local activity that said "not here" and then the tools queue).
    localTools: { runTools: tools.runTools, runsLocally: () => true },
    maxConcurrentActivities: 400,
    roles: ['agent', 'gpu-infer', 'tools', 'gpu-train'],
    extraActivities: {
      'gpu-train': { trainStep },
    },
  });
  const maxSteps = mode === 'sync' ? (options.syncSteps ?? options.steps) : options.steps;
  log(
    `${mode}: ${maxSteps} steps of ${options.batchSize} trajectories (G=${options.groupSize}, η=${options.eta}), ${options.stepSeconds} s per step…`,
  );
  try {
    const result = (await workers.run(() =>
      client.workflow.execute(learnerWorkflowType, {
        taskQueue: taskQueueName('agent', prefix),
        workflowId: `${prefix}learner`,
        args: [
          {
            runId: `${prefix}run`,
            datasetKey,
            settings: {
              mode,
              groupSize: options.groupSize,
              batchSize: options.batchSize,
              maxSteps,
              eta: options.eta,
              maxInflight: options.maxInflight,
              dropEqualRewardGroups: false,
              interruptOnPublish: false,
              ...(options.selection ? { selection: options.selection } : {}),
            },
            trajectory: { limits: { maxTurns: options.maxTurns, maxRepeats: 0 } },
          },
        ],
      }),
    )) as LearnerResult;
    log(`${mode}: ${result.steps} steps in ${result.wallSeconds.toFixed(0)} s, trainer busy ${(result.trainerBusy * 100).toFixed(0)} %`);
    const timeline = await learnerTimeline(client, `${prefix}learner`, options);
    log(
      `${mode}: first step at ${timeline.firstStepSeconds} s (first group settled at ${timeline.firstGroupSettledSeconds} s); ` +
        `between steps ${timeline.betweenStepsSeconds} s idle, of which ${timeline.betweenStepsBatchReadySeconds} s with a full batch settled; ` +
        `${timeline.childrenStarted} trajectories started, ${result.dropped} dropped, ${timeline.inflightMean} in flight at a step's start on average`,
    );
    return { result, timeline };
  } finally {
    // The learner ends with the trajectories of groups admitted during its last step still running; their
    // workers (in this process) are gone now, so they would stay open on the server for good.
    const leftovers = client.workflow.list({ query: `ExecutionStatus = 'Running' AND WorkflowId STARTS_WITH '${prefix}'` });
    for await (const execution of leftovers)
      await client.workflow
        .getHandle(execution.workflowId)
        .terminate('bench async finished: its in-process workers stopped')
        .catch(() => undefined);
    await services.close();
  }
}

export async function runAsyncBenchmark(config: Config, options: AsyncBenchmarkOptions, log: (line: string) => void) {
  const { result: sync, timeline: syncTimeline } = await runMode(config, 'sync', options, log);
  const { result: asyncResult, timeline: asyncTimeline } = await runMode(config, 'async', options, log);
  const figures = (result: LearnerResult, timeline: Awaited<ReturnType<typeof learnerTimeline>>) => ({
    samples_per_hour: round(result.samplesPerHour, 1),
    trainer_busy: round(result.trainerBusy),
    max_staleness: result.maxStaleness,
    wall_seconds: round(result.wallSeconds, 1),
    steps: result.steps,
    consumed: result.consumed,
    dropped: result.dropped,
    timeline,
  });
  return {
    sync: figures(sync, syncTimeline),
    async: figures(asyncResult, asyncTimeline),
    speedup: round(asyncResult.samplesPerHour / Math.max(1e-9, sync.samplesPerHour), 2),
    eta: options.eta,
    /** Steps of each run: the sync rate may be measured on fewer steps than the async one (--sync-steps). */
    sync_steps: options.syncSteps ?? options.steps,
    async_steps: options.steps,
    workload: options,
  };
}
