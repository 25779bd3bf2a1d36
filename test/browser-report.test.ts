/**
 * The report's charts render in a real browser (headless Chromium): every chart the model has data
 * for is drawn (ink inside its box in a screenshot) and the page records no error. The same check
 * fails on a report whose chart runtime is missing, so it can tell a drawn chart from an empty box.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { analyseTrajectory, behaviourByVersion } from '../activities/analysis/behaviour.js';
import type { TrajectoryView } from '../activities/analysis/trajectory-view.js';
import { reportCharts, renderReport } from '../cli/report/report-html.js';
import type { ReportModel } from '../cli/report/report-model.js';
import { loadChartRuntime } from '../cli/report/write-report.js';
import { checkReportInBrowser } from './helpers/chromium.js';

function view(id: string, version: number, verified: boolean): TrajectoryView {
  const call = (observation: string, documentIds: string[]) => ({
    tool: 'search',
    input: { query: 'capital' },
    ok: true,
    invalid: false,
    observation,
    documentIds,
    latencyMs: 3,
    cacheHit: false,
  });
  const turn = (index: number, text: string, calls: ReturnType<typeof call>[], answer?: string) => ({
    turn: index,
    policyVersion: version,
    tokenVersions: [version],
    text,
    action: answer ? ('answer' as const) : ('tools' as const),
    ...(answer ? { answer } : {}),
    generatedTokens: 12,
    interruptions: 0,
    toolCalls: calls,
  });
  return {
    trajectoryId: id,
    runId: 'run-browser',
    dataset: 'datasets/run-browser/train.jsonl',
    questionId: id.slice(0, 2),
    question: 'What is the capital of Peru?',
    goldAnswers: ['Lima'],
    answer: 'Lima',
    reward: verified ? 1 : 0,
    rewardMetric: 'em',
    rewardParts: { em: verified ? 1 : 0 },
    stopReason: 'answered',
    versionsUsed: [version],
    generatedTokens: 36,
    turns: [
      turn(0, 'I think I should search.', [call('Lima is the capital of Peru.', ['doc-1'])]),
      ...(verified ? [turn(1, 'Let me check again.', [call('Lima, capital.', ['doc-2'])])] : []),
      turn(verified ? 2 : 1, '<answer>Lima</answer>', [], 'Lima'),
    ],
  };
}

function syntheticModel(): ReportModel {
  const behaviours = [0, 1, 2].flatMap((version) =>
    [0, 1, 2].map((index) => analyseTrajectory(view(`q${index}-v${version}`, version, index <= version))),
  );
  const steps = [0, 1, 2].map((step) => ({
    step,
    version: step + 1,
    meanReward: 0.2 + step * 0.2,
    maxStaleness: step % 2,
    trainSeconds: 30 + step,
    syncSeconds: 1,
    finishedAtMs: Date.UTC(2026, 0, 1, 10, step * 2),
    busyFraction: 0.25 + step * 0.1,
    phases: [
      { phase: 'stage base', seconds: 1 },
      { phase: 'proximal', seconds: 12 + step },
      { phase: 'update', seconds: 8 },
      { phase: 'save and export', seconds: 6 },
      { phase: 'upload and register', seconds: 3 },
      { phase: 'sync', seconds: 1 },
    ],
  }));
  return {
    runId: 'run-browser',
    generatedAt: new Date().toISOString(),
    summary: {
      trainingTrajectories: 24,
      heldOutTrajectories: 6,
      steps: 3,
      finalVersion: 3,
      samplesPerHour: 420,
      trainerBusy: 0.4,
      maxStaleness: 1,
      wallSeconds: 360,
    },
    steps,
    trainingReward: [0, 1, 2].map((version) => ({
      version,
      series: 'training reward',
      n: 8,
      mean: 0.2 + version * 0.2,
      low: 0.1 + version * 0.2,
      high: 0.3 + version * 0.2,
    })),
    heldOut: [
      { version: 0, series: 'demo held-out EM', n: 6, mean: 0.17, low: 0, high: 0.5 },
      { version: 3, series: 'demo held-out EM', n: 6, mean: 0.5, low: 0.17, high: 0.83 },
      // The same value at the same version as the demo's series: both must still show.
      { version: 3, series: 'hotpotqa EM Avg@4', n: 20, mean: 0.5, low: 0.17, high: 0.83 },
    ],
    staleness: [
      { value: 0, group: 'consumed', count: 18 },
      { value: 1, group: 'consumed', count: 6 },
    ],
    throughput: [0, 1, 2, 3].map((index) => ({
      at: new Date(Date.UTC(2026, 0, 1, 10, index)).toISOString(),
      samplesPerHour: 300 + index * 40,
    })),
    turns: [
      { value: 2, group: 'training', count: 12 },
      { value: 3, group: 'training', count: 12 },
      { value: 2, group: 'held-out', count: 6 },
    ],
    toolCalls: [
      { value: 1, group: 'training', count: 12 },
      { value: 2, group: 'training', count: 12 },
    ],
    toolUse: [{ tool: 'search', calls: 36 }],
    benchmarks: [],
    dataset: {
      key: 'datasets/run-browser/train.jsonl',
      questions: 8,
      meanQuestionChars: 30,
      meanAnswersPerQuestion: 1,
      withGoldTurns: 8,
      goldTurns: [{ value: 2, group: 'questions', count: 8 }],
      extraFields: {},
    },
    behaviour: behaviourByVersion(behaviours),
    trajectories: [],
    notes: [],
  };
}

test('every chart of the report is drawn in headless Chromium, with no error on the page', { timeout: 240_000 }, async () => {
  const model = syntheticModel();
  const expected = reportCharts(model).map((chart) => chart.id);
  assert.equal(expected.length, 12, 'the synthetic model has data for every chart');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-report-'));
  try {
    const file = path.join(dir, 'run-browser.html');
    fs.writeFileSync(file, renderReport(model, loadChartRuntime()));
    const page = await checkReportInBrowser(file);
    assert.ok(page.done, 'the page script finished');
    assert.deepEqual(page.errors, [], 'no Vega or page error');
    assert.deepEqual(
      page.charts.map((chart) => chart.id),
      expected,
    );
    for (const chart of page.charts) {
      assert.ok(chart.rendered, `${chart.id} rendered`);
      assert.ok(chart.box && chart.box[2] > 300 && chart.box[3] > 150, `${chart.id} has a box of chart size: ${JSON.stringify(chart.box)}`);
      assert.ok(
        chart.inkShare > 0.01,
        `${chart.id} has drawn pixels in its box (${(chart.inkShare * 100).toFixed(2)} % ink; screenshot ${page.screenshot})`,
      );
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the browser check sees a report whose chart runtime is missing: errors and empty boxes', { timeout: 240_000 }, async () => {
  const model = syntheticModel();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-report-'));
  try {
    const file = path.join(dir, 'run-broken.html');
    fs.writeFileSync(file, renderReport(model, { vega: '', vegaLite: '', vegaEmbed: '' }));
    const page = await checkReportInBrowser(file);
    assert.ok(page.errors.length >= 1, 'the page records that charts could not be drawn');
    assert.match(page.errors[0]!, /vega-embed\) is missing/);
    assert.equal(page.charts.length, reportCharts(model).length, 'every chart box is on the page');
    for (const chart of page.charts) {
      assert.equal(chart.rendered, false, `${chart.id} is not rendered`);
      assert.ok(chart.inkShare < 0.01, `${chart.id} box is empty (${(chart.inkShare * 100).toFixed(2)} % ink)`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
