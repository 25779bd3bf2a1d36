import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Runtime } from '@temporalio/worker';
import { trajectoryWorkflowType, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import { installWorkerRuntime } from '../infra/temporal/runtime.js';
import { workerMetricBuckets, workerMetricsInterceptor } from '../composition/worker-metrics.js';
import { reportStaleness } from '../gpu/train/train-step.activities.js';
import { openContext, spawnWorker, uniquePrefix, waitUntil } from './helpers/stack.js';

/** A port nobody listens on now, and the four after it, for one base of LONGHAUL_METRICS_PORT. */
async function freeBase(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    // Below Linux's ephemeral range (32768 and up), so no outgoing connection takes one of them in the meantime.
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await Promise.all(
      [0, 1, 2, 3, 4].map(
        (offset) =>
          new Promise<boolean>((resolve) => {
            const server = net.createServer();
            server.once('error', () => resolve(false));
            server.listen(base + offset, '127.0.0.1', () => server.close(() => resolve(true)));
          }),
      ),
    );
    if (free.every(Boolean)) return base;
  }
  throw new Error('no five free consecutive ports found');
}

/** Prometheus text format → samples: `name{labels}` → value. */
async function scrape(port: number): Promise<Map<string, number>> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  assert.equal(response.status, 200);
  const samples = new Map<string, number>();
  for (const line of (await response.text()).split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const cut = line.lastIndexOf(' ');
    samples.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return samples;
}

/** Sum of the samples of one metric whose labels include every given `key="value"`. */
function total(samples: Map<string, number>, metric: string, ...labels: string[]): number {
  let sum = 0;
  for (const [key, value] of samples) {
    const name = key.split('{')[0];
    if (name === metric && labels.every((label) => key.includes(label))) sum += value;
  }
  return sum;
}

const names = (samples: Map<string, number>) => new Set([...samples.keys()].map((key) => key.split('{')[0]!));

test(
  'every worker serves the SDK runtime metrics and ours on its Prometheus endpoint during a scripted trajectory',
  { timeout: 240_000 },
  async () => {
    const prefix = uniquePrefix('metrics');
    const context = await openContext(prefix);
    const base = await freeBase();
    const env = { LONGHAUL_TASK_QUEUE_PREFIX: prefix, LONGHAUL_POLICY_BACKEND: 'scripted', LONGHAUL_METRICS_PORT: String(base) };
    const workers: ChildProcess[] = [];
    try {
      for (const role of ['agent', 'tools', 'gpu-infer'] as const) {
        const worker = spawnWorker(role, env);
        workers.push(worker);
        await worker.ready;
      }
      const ports = { agent: base, tools: base + 1, 'gpu-infer': base + 2 };
      const handle = await context.client.workflow.start(trajectoryWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}traj`,
        // localTools false: its searches go to the tools worker (whose endpoint is checked below); by default
        // the agent worker runs them as local activities (checked at the end).
        args: [
          {
            question: 'script:{"turns":4,"answer":"Lima","tokenDelayMs":5} What is the capital of Peru?',
            answers: ['Lima'],
            options: { localTools: false },
          },
        ],
      });
      // While it runs: the gpu-infer worker counts tokens as turns finish.
      await waitUntil(
        async () => total(await scrape(ports['gpu-infer']), 'longhaul_generated_tokens') > 0,
        60_000,
        'generated tokens on /metrics',
      );
      const result = (await handle.result()) as TrajectoryResult;
      assert.equal(result.stopReason, 'answered');

      const infer = await scrape(ports['gpu-infer']);
      assert.equal(total(infer, 'longhaul_generated_tokens', `task_queue="${prefix}gpu-infer"`), result.generatedTokens);
      assert.ok(total(infer, 'longhaul_generation_tokens_per_second') > 0);
      assert.equal(total(infer, 'longhaul_generation_seconds_count'), 4, 'one generation per turn');

      const tools = await scrape(ports.tools);
      assert.equal(total(tools, 'longhaul_tool_calls', 'tool="search"'), 3, 'three searches before the answer');
      assert.equal(total(tools, 'longhaul_tool_latency_seconds_count', 'tool="search"'), 3);
      assert.ok(total(tools, 'longhaul_tool_latency_seconds_sum', 'tool="search"') >= 0);

      await waitUntil(
        async () => total(await scrape(ports.agent), 'longhaul_trajectories_finished', 'stop_reason="answered"') === 1,
        30_000,
        'the finished trajectory on /metrics',
      );
      const agent = await scrape(ports.agent);
      assert.ok(total(agent, 'longhaul_rollouts_per_hour') > 0);
      assert.equal(total(agent, 'longhaul_trajectory_reward_count'), 1);
      assert.equal(total(agent, 'longhaul_trajectory_reward_sum'), result.reward);
      // Our bucket bounds (workerMetricBuckets) replace the exporter's defaults.
      assert.equal(total(agent, 'longhaul_trajectory_reward_bucket', 'le="0.9"'), result.reward === 1 ? 0 : 1);
      assert.ok([...tools.keys()].some((key) => key.startsWith('longhaul_tool_latency_seconds_bucket') && key.includes('le="0.001"')));

      // The SDK's own runtime metrics, on every endpoint.
      for (const [role, samples] of [
        ['agent', agent],
        ['tools', tools],
        ['gpu-infer', infer],
      ] as const) {
        const found = names(samples);
        for (const sdkMetric of ['temporal_worker_task_slots_available', 'temporal_activity_execution_latency_count', 'temporal_request'])
          assert.ok(
            found.has(sdkMetric),
            `${role}: ${sdkMetric} missing from ${[...found].filter((name) => name.startsWith('temporal_')).join(', ')}`,
          );
      }
      assert.ok(total(agent, 'temporal_workflow_completed') >= 1, 'the agent worker completed the workflow');
      assert.ok(total(tools, 'temporal_activity_execution_latency_count', 'activity_type="runTurnTools"') >= 3);

      // By default the searches (full-text search on the stack's Postgres) run in the agent worker as local activities.
      await context.client.workflow.execute(trajectoryWorkflowType, {
        taskQueue: context.queue('agent'),
        workflowId: `${prefix}traj-local`,
        args: [{ question: 'script:{"turns":3,"answer":"Lima"} What is the capital of Peru?', answers: ['Lima'] }],
      });
      const agentAfter = await scrape(ports.agent);
      assert.equal(total(agentAfter, 'longhaul_tool_calls', 'tool="search"'), 2, 'two searches, counted by the agent worker');
      assert.equal(total(await scrape(ports.tools), 'longhaul_tool_calls', 'tool="search"'), 3, 'none more on the tools worker');
    } finally {
      for (const worker of workers) worker.kill('SIGKILL');
      await context.close();
    }
  },
);

test('the trainer reports busy time and the batch staleness on its endpoint', { timeout: 60_000 }, async () => {
  const base = await freeBase();
  // This test process is the gpu-train worker here: its runtime serves the endpoint, the activities run in the SDK's mock environment.
  installWorkerRuntime('warn', `127.0.0.1:${base + 3}`, workerMetricBuckets);
  const environment = new MockActivityEnvironment(
    { activityType: 'trainStep', taskQueue: 'metrics-gpu-train' },
    { interceptors: [workerMetricsInterceptor()], metricMeter: Runtime.instance().metricMeter },
  );
  let release: () => void = () => undefined;
  const step = environment.run(async () => {
    reportStaleness(5, [{ turnRecords: [{ tokenVersions: [4, 3, 5] }] }, { turnRecords: [{ tokenVersions: [5] }] }]);
    await new Promise<void>((resolve) => (release = resolve));
    return { version: 6 };
  });
  await waitUntil(
    async () => total(await scrape(base + 3), 'longhaul_trainer_busy') === 1,
    10_000,
    'longhaul_trainer_busy 1 while the step runs',
  );
  assert.equal(
    total(await scrape(base + 3), 'longhaul_batch_staleness', 'task_queue="metrics-gpu-train"'),
    2,
    'base 5, oldest token version 3',
  );
  await sleep(1100);
  release();
  assert.deepEqual(await step, { version: 6 });
  const after = await scrape(base + 3);
  assert.equal(total(after, 'longhaul_trainer_busy'), 0);
  assert.ok(total(after, 'longhaul_trainer_busy_seconds') >= 1, 'the step took more than a second');
});
