/**
 * `longhaul bench transfer` on real workers with the tiny test model: the same gold paths and budget
 * go through the warm-start workflow and the real engine once per trainable mode (the last layer and
 * the final norm with the rest frozen, LoRA, full), giving three new versions with three different
 * trainable-parameter counts, each evaluated by the evaluation workflow on the same held-out
 * questions; the result is stored in benchmark_results and `longhaul report` draws its section (table and charts, in headless Chromium).
 * The RL stage the same way: a real learner step per mode (freeze, full) from its own copy of the
 * start version, the start version evaluated too, each mode compared with it and with full.
 * Bad flags and the pure parts: test/transfer-cli.test.ts.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runTransferBenchmark, transferModes, type TransferResult } from '../bench/transfer-benchmark.js';
import { gatherReport } from '../cli/report/gather-report.js';
import { formatReportSummary } from '../cli/report/report-summary.js';
import { renderReport, reportCharts } from '../cli/report/report-html.js';
import { loadChartRuntime } from '../cli/report/write-report.js';
import { publishPolicyVersion } from '../gpu/infer/policy-store.js';
import { createPgBenchmarkResultStore } from '../infra/postgres/benchmark-result-store.pg.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { createPgReportSource } from '../infra/postgres/report-source.pg.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { evaluationResultSchema } from '../activities/ports/evaluation-result.schema.js';
import { evaluationKeys } from '../workflows/contracts/evaluation.contract.js';
import { tinyModelDir } from './doubles/test-model.js';
import { checkReportInBrowser } from './helpers/chromium.js';
import { openContext, spawnWorker, uniquePrefix, type TestContext } from './helpers/stack.js';

const gold = (answer: string) => [
  `<think>I will look up ${answer}.</think>\n<search>capital ${answer}</search>`,
  `<think>Found it.</think>\n<answer>${answer}</answer>`,
];

describe('the transfer benchmark', () => {
  const prefix = uniquePrefix('transfer');
  let context: TestContext;
  let base: number;
  let inference: ReturnType<typeof spawnWorker> | undefined;
  const workers: ReturnType<typeof spawnWorker>[] = [];
  const served: number[] = [];
  const env = (version: number) => ({
    LONGHAUL_TASK_QUEUE_PREFIX: prefix,
    LONGHAUL_POLICY_BACKEND: 'onnx',
    LONGHAUL_POLICY_VERSION: String(version),
    LONGHAUL_ONNX_THREADS: '1',
  });
  async function serve(version: number): Promise<void> {
    if (inference && inference.exitCode === null) {
      const exited = new Promise((resolve) => inference!.once('exit', resolve));
      inference.kill('SIGTERM');
      await exited; // a second poller on the queue could serve the old version
    }
    inference = spawnWorker('gpu-infer', env(version));
    await inference.ready;
    served.push(version);
  }

  /** What `longhaul report --run <id>` gathers for the run. */
  async function reportModel(runId: string, home: string) {
    const sources = {
      source: createPgReportSource(context.pool),
      blobs: context.blobs,
      client: context.client,
      home,
      benchmarks: createPgBenchmarkResultStore(context.pool),
    };
    return (await gatherReport(sources, { runId })).model;
  }

  /**
   * Each evaluation answered its own held-out questions. Its result is named like the mode's run
   * (<run>-<mode>), whose warm-start replays and rollouts are <run>-<mode>-q<i>-s<j>: samples once named
   * the same replayed those training trajectories and scored their answers against the held-out gold.
   */
  async function assertOwnSamples(resultIds: readonly string[], heldOut: readonly { id: string }[]): Promise<void> {
    const trajectories = createPgTrajectoryStore(context.pool);
    for (const resultId of resultIds) {
      const stored = evaluationResultSchema.parse(JSON.parse((await context.blobs.get(evaluationKeys.result(resultId))).toString()));
      assert.equal(stored.perQuestion.length, heldOut.length);
      for (const [index, question] of stored.perQuestion.entries()) {
        assert.equal(question.questionId, heldOut[index]!.id);
        for (const sample of question.samples) {
          assert.ok(sample.trajectoryId.startsWith(`eval-${resultId}-q`), `${sample.trajectoryId}: the evaluation's own id`);
          const row = await trajectories.get(sample.trajectoryId);
          assert.deepEqual([row?.runId, row?.questionId], [`eval-${resultId}`, heldOut[index]!.id], sample.trajectoryId);
        }
      }
    }
  }

  before(async () => {
    context = await openContext(prefix);
    base = 5_000_000 + 10 * Math.floor(Math.random() * 100_000); // versions are global: keep apart from other tests
    await publishPolicyVersion({
      blobs: context.blobs,
      versions: createPgPolicyVersionStore(context.pool),
      modelDir: await tinyModelDir(),
      version: base,
    });
    for (const role of ['agent', 'tools', 'gpu-train'] as const) workers.push(spawnWorker(role, env(base)));
    await Promise.all(workers.map((worker) => worker.ready));
  });
  after(async () => {
    for (const worker of [...workers, ...(inference ? [inference] : [])]) worker.kill('SIGTERM');
    await context.close();
  });

  it(
    'trains freeze, LoRA and full through the same path into three versions, evaluates them alike and reports them side by side',
    { timeout: 600_000 },
    async () => {
      const train = ['Fredville', 'Sylvan City', 'Strelsau', 'Tomainia'].map((answer, index) => ({
        id: `t${index}`,
        question: `What is the capital of country ${index}?`,
        answers: [answer],
        goldTurns: gold(answer),
      }));
      const heldOut = ['Lima', 'Quito', 'Bogota'].map((answer, index) => ({
        id: `h${index}`,
        question: `What is the capital of place ${index}?`,
        answers: [answer],
      }));
      const runId = `${prefix}run`;
      const modes = transferModes(2, 1, 2);
      const lines: string[] = [];
      const result = await runTransferBenchmark(
        {
          client: context.client,
          queue: context.queue,
          blobs: context.blobs,
          versions: createPgPolicyVersionStore(context.pool),
          results: createPgBenchmarkResultStore(context.pool),
          serveVersion: serve,
          log: (line) => {
            lines.push(line);
            console.error(line); // progress in the test output
          },
        },
        {
          runId,
          startVersion: base,
          train,
          heldOut: { name: 'tiny-heldout', rows: heldOut },
          modes,
          budget: { epochs: 2, batch: 2, microBatch: 2, learningRate: 1e-3, seed: 0 },
          trajectory: { limits: { maxTurns: 2, maxNewTokensPerTurn: 8 }, options: { maxObservationChars: 300 }, rewardMetric: 'em' },
          k: 1,
          concurrency: 3,
          args: ['--test'],
        },
      );

      assert.deepEqual(
        result.modes.map((row) => row.mode),
        ['freeze', 'lora', 'full'],
      );
      const versions = result.modes.map((row) => row.version);
      assert.equal(new Set(versions).size, 3, `three new versions: ${versions.join(', ')}`);
      const store = createPgPolicyVersionStore(context.pool);
      for (const row of result.modes) {
        // Each mode trained its own registered copy of the start version (same files), one sft step.
        assert.equal(row.version, row.start_version + 1);
        const start = await store.get(row.start_version);
        assert.ok(
          row.start_version === base || start?.parentVersion === base,
          `v${row.start_version} is the start version or a copy of it`,
        );
        assert.equal((await store.get(row.version))?.parentVersion, row.start_version);
        assert.equal(row.kept_trajectories, 4, `${row.mode}: the same four gold paths`);
        assert.equal(row.optimizer_steps, 4, `${row.mode}: 2 epochs × 2 batches of 2`);
        assert.equal(row.evaluation, `${runId}-${row.mode}`);
        assert.ok(row.em >= row.em_ci95[0] && row.em <= row.em_ci95[1]);
        assert.ok(row.peak_rss_mb !== null && row.peak_rss_mb > 0, `${row.mode}: the engine's peak RSS`);
      }
      const counts = Object.fromEntries(result.modes.map((row) => [row.mode, row.trainable_parameters!]));
      assert.equal(new Set(Object.values(counts)).size, 3, `three different trainable-parameter counts: ${JSON.stringify(counts)}`);
      assert.ok(counts.lora! < counts.freeze! && counts.freeze! < counts.full!, JSON.stringify(counts));
      const full = result.modes.find((row) => row.mode === 'full')!;
      assert.deepEqual([full.em_vs_full, ...full.em_vs_full_ci95], [0, 0, 0]);
      // The start version served the gold replays, then each trained version its evaluation, in order.
      assert.deepEqual(served, [base, ...versions]);
      // Progress: the lines each phase always prints (the polled in-between lines depend on timing).
      assert.ok(
        lines.some((line) => /freeze → v\d+: \d+ trainable parameters/.test(line)) && lines.some((line) => /freeze: EM Avg@1/.test(line)),
      );

      const stored = await createPgBenchmarkResultStore(context.pool).get(runId);
      assert.equal(stored?.benchmark, 'transfer');
      assert.deepEqual(
        (stored!.result as unknown as TransferResult).modes.map((row) => row.version),
        versions,
      );

      await assertOwnSamples(
        result.modes.map((row) => row.evaluation),
        heldOut,
      );

      // `longhaul report --run <id>` finds the result and draws it.
      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-transfer-report-'));
      try {
        const model = await reportModel(runId, home);
        // The header counts the modes' gold replays (runs <run>-<mode>) and the evaluations' samples.
        assert.deepEqual([model.summary.trainingTrajectories, model.summary.heldOutTrajectories], [3 * 4, 3 * heldOut.length]);
        assert.deepEqual(
          model.transfer?.modes.map((row) => row.version),
          versions,
        );
        const transferCharts = reportCharts(model)
          .map((chart) => chart.id)
          .filter((id) => id.startsWith('chart-transfer'));
        assert.deepEqual(transferCharts, ['chart-transfer-accuracy', 'chart-transfer-cost']);
        const file = path.join(home, 'transfer.html');
        const html = renderReport(model, loadChartRuntime());
        assert.match(html, /<h2 id="transfer">Transfer by freezing<\/h2>/);
        for (const row of result.modes) assert.match(html, new RegExp(`v${row.start_version} → v${row.version}`));
        fs.writeFileSync(file, html);
        const page = await checkReportInBrowser(file);
        assert.deepEqual(page.errors, [], 'no Vega or page error');
        for (const id of transferCharts) {
          const chart = page.charts.find((entry) => entry.id === id);
          assert.ok(chart?.rendered, `${id} rendered`);
          assert.ok(chart.inkShare > 0.01, `${id} has drawn pixels (${(chart.inkShare * 100).toFixed(2)} % ink; ${page.screenshot})`);
        }
      } finally {
        fs.rmSync(home, { recursive: true, force: true });
      }
    },
  );
  it(
    'RL stage: a learner step per mode from its own copy of the start version, the start evaluated too, gains paired against it',
    { timeout: 600_000 },
    async () => {
      served.length = 0;
      const train = ['Fredville', 'Sylvan City', 'Strelsau', 'Tomainia'].map((answer, index) => ({
        id: `r${index}`,
        question: `What is the capital of country ${index}?`,
        answers: [answer],
      }));
      const heldOut = ['Lima', 'Quito'].map((answer, index) => ({
        id: `h${index}`,
        question: `What is the capital of place ${index}?`,
        answers: [answer],
      }));
      const runId = `${prefix}rl`;
      const lines: string[] = [];
      const cancelled: string[] = [];
      const versions = createPgPolicyVersionStore(context.pool);
      const result = await runTransferBenchmark(
        {
          client: context.client,
          queue: context.queue,
          blobs: context.blobs,
          versions,
          results: createPgBenchmarkResultStore(context.pool),
          serveVersion: serve,
          cancelLeftoverRollouts: async (learnerRunId) => {
            cancelled.push(learnerRunId);
            return 0;
          },
          log: (line) => {
            lines.push(line);
            console.error(line);
          },
        },
        {
          runId,
          stage: 'rl',
          startVersion: base,
          train,
          heldOut: { name: 'tiny-heldout', rows: heldOut },
          modes: transferModes(2, 1, 2).filter((mode) => mode.mode !== 'lora'),
          budget: { epochs: 1, batch: 4, microBatch: 2, learningRate: 1e-3, seed: 0 },
          // A random model earns no reward: equal groups are kept so that the step has its batch.
          rl: { steps: 1, group: 2, eta: 1, temperature: 0.7, reward: 'f1_format', keepEqualGroups: true },
          trajectory: { limits: { maxTurns: 2, maxNewTokensPerTurn: 8 }, options: { maxObservationChars: 300 } },
          k: 1,
          concurrency: 2,
          args: ['--test', '--stage', 'rl'],
        },
      );

      assert.equal(result.stage, 'rl');
      assert.deepEqual(
        result.modes.map((row) => row.mode),
        ['freeze', 'full'],
      );
      assert.deepEqual(
        [result.budget.steps, result.budget.group, result.budget.temperature, result.budget.reward, result.budget.epochs],
        [1, 2, 0.7, 'f1_format', undefined],
      );
      for (const row of result.modes) {
        // One learner step trained the mode's own copy of the start version: start + 1, its parent.
        assert.equal(row.version, row.start_version + 1, `${row.mode}: one step`);
        assert.equal((await versions.get(row.version))?.parentVersion, row.start_version);
        const training = (await versions.get(row.version))?.manifest.training as { kind?: string; runId?: string } | undefined;
        assert.deepEqual([training?.kind, training?.runId], ['rl', `${runId}-${row.mode}`]);
        assert.equal(row.optimizer_steps, 1, `${row.mode}: one optimizer step (one minibatch)`);
        assert.ok(row.kept_trajectories >= 4, `${row.mode}: the step consumed its batch of 4`);
        assert.ok(row.trainer_busy !== undefined && row.reward_first_step !== undefined, `${row.mode}: learner statistics`);
        assert.ok(row.em_vs_start !== undefined && row.em_vs_start_ci95 !== undefined, `${row.mode}: the gain over the start`);
        assert.ok(row.em_vs_start! >= row.em_vs_start_ci95![0] && row.em_vs_start! <= row.em_vs_start_ci95![1]);
      }
      const [freeze, full] = result.modes;
      assert.ok(freeze!.trainable_parameters! < full!.trainable_parameters!, 'freeze trains fewer parameters than full');
      assert.deepEqual(cancelled, [`${runId}-freeze`, `${runId}-full`], 'leftover rollouts cancelled after each learner');
      // The start evaluated like the modes; each learner's copy served before it, then start, freeze, full for their evaluations.
      assert.deepEqual([result.start?.version, result.start?.evaluation], [base, `${runId}-start`]);
      assert.deepEqual(served, [freeze!.start_version, full!.start_version, base, freeze!.version, full!.version]);
      assert.ok(lines.some((line) => /freeze → v\d+: 1 step, rollout reward/.test(line)));
      await assertOwnSamples([`${runId}-start`, `${runId}-freeze`, `${runId}-full`], heldOut);

      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-transfer-rl-report-'));
      try {
        const model = await reportModel(runId, home);
        assert.equal(model.transfer?.stage, 'rl');
        // The header counts the modes' rollouts (runs <run>-<mode>) and the three evaluations' samples.
        assert.ok(model.summary.trainingTrajectories >= 8, `training trajectories: ${model.summary.trainingTrajectories}`);
        assert.equal(model.summary.heldOutTrajectories, 3 * heldOut.length);
        // Each mode's learner is its own lineage: its steps, its training reward and its held-out samples.
        assert.deepEqual(
          model.steps.map((step) => [step.series, step.step]),
          [
            ['freeze', 0],
            ['full', 0],
          ],
        );
        assert.equal(model.summary.steps, 2, 'the header counts both learners’ steps');
        assert.ok(model.summary.trainerBusy !== null && model.summary.maxStaleness !== null, 'the learners’ busy share and staleness');
        assert.deepEqual([...new Set(model.trainingReward.map((point) => point.series))].sort(), [
          'training reward (freeze)',
          'training reward (full)',
        ]);
        assert.deepEqual(
          [...new Set(model.heldOut.map((point) => point.series).filter((series) => series.startsWith('held-out EM')))].sort(),
          ['held-out EM (freeze)', 'held-out EM (full)', 'held-out EM (start)'],
        );
        assert.match(formatReportSummary(model), /transfer, RL \(EM Avg@1 on 2 held-out questions\): start v\d+ /);
        const html = renderReport(model, loadChartRuntime());
        assert.match(html, /<h2 id="transfer">Transfer by freezing: RL<\/h2>/);
        assert.match(html, /EM − start \[95 % CI\]/);
        assert.match(html, /1 step of 4 \(G = 2, T = 0.7, reward f1_format\)/);
        const file = path.join(home, 'transfer-rl.html');
        fs.writeFileSync(file, html);
        const page = await checkReportInBrowser(file);
        assert.deepEqual(page.errors, [], 'no Vega or page error');
        const accuracy = page.charts.find((entry) => entry.id === 'chart-transfer-accuracy');
        assert.ok(accuracy?.rendered && accuracy.inkShare > 0.01, `the accuracy chart is drawn (${page.screenshot})`);
        for (const id of ['chart-training-reward', 'chart-staleness-steps', 'chart-trainer-busy']) {
          const chart = page.charts.find((entry) => entry.id === id);
          assert.ok(chart?.rendered && chart.inkShare > 0.005, `${id} is drawn, per mode (${page.screenshot})`);
        }
      } finally {
        fs.rmSync(home, { recursive: true, force: true });
      }
    },
  );
});
