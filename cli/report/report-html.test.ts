import { test } from 'node:test';
import assert from 'node:assert/strict';
import { analyseTrajectory } from '../../activities/analysis/behaviour.js';
import type { TrajectoryView } from '../../activities/analysis/trajectory-view.js';
import { datasetStatistics, notSummarised, stepPhases, stepPoints, throughput } from './gather-report.js';
import { renderReport, reportCharts, timeAxisFormat } from './report-html.js';
import type { ReportModel } from './report-model.js';
import { formatReportSummary } from './report-summary.js';
import { formatTrajectory, renderTrajectoryPage, trajectoryPageName } from './trajectory-format.js';
import { trajectoryMetadata } from '../../workflows/trajectory-child.js';

const runtime = { vega: 'window.vega = {};', vegaLite: 'var s = "</script>";', vegaEmbed: 'window.vegaEmbed = null;' };

/** A version's behaviour as the report reads it (without the gold measures: as stored before they existed). */
function behaviourRow(version: number) {
  return {
    version,
    trajectories: 8,
    answered: 6,
    verifiedShare: 0.5,
    meanDistinctDocuments: 2.25,
    uncertaintyShare: 0,
    conflictShare: 0,
    meanToolCalls: 3,
    meanSearches: 1.5,
    meanToolCallsPerQuestion: 3,
    meanReward: 0.5,
  };
}

function emptyModel(overrides: Partial<ReportModel> = {}): ReportModel {
  return {
    runId: 'run-1',
    generatedAt: '2026-01-01T00:00:00.000Z',
    summary: {
      trainingTrajectories: 0,
      heldOutTrajectories: 0,
      steps: 0,
      finalVersion: null,
      samplesPerHour: null,
      trainerBusy: null,
      maxStaleness: null,
      wallSeconds: null,
    },
    steps: [],
    trainingReward: [],
    heldOut: [],
    staleness: [],
    throughput: [],
    turns: [],
    toolCalls: [],
    toolUse: [],
    benchmarks: [],
    dataset: null,
    behaviour: [],
    trajectories: [],
    notes: [],
    ...overrides,
  };
}

test('a model without data has no chart box and says so', () => {
  const model = emptyModel({ notes: ['no learner statistics'] });
  assert.deepEqual(reportCharts(model), []);
  const html = renderReport(model, runtime);
  assert.doesNotMatch(html, /class="chart"/);
  assert.match(html, /no data to chart for this run/);
  assert.match(html, /<li>no learner statistics<\/li>/);
});

test('the runtime is inlined with </script> defused, and text from the data is escaped', () => {
  const model = emptyModel({
    trainingReward: [{ version: 0, series: 'training reward', n: 2, mean: 0.5, low: 0, high: 1 }],
    trajectories: [
      {
        trajectoryId: 't<1>',
        group: 'training',
        dataset: 'd',
        question: '<img src=x onerror=alert(1)>',
        answer: null,
        reward: 0,
        turns: 1,
        toolCalls: null,
        version: 0,
        stopReason: 'max_turns',
        page: 'run-1.trajectories/t_1_.html',
      },
    ],
  });
  const html = renderReport(model, runtime);
  assert.ok(html.includes('var s = "<\\/script>";'), 'a </script> inside the runtime cannot end its element');
  assert.ok(!html.includes('<img src=x'), 'question text is escaped');
  assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;'));
  assert.ok(html.includes('<a href="run-1.trajectories/t_1_.html">t&lt;1&gt;</a>'));
  assert.ok(!/<script[^>]+src=/.test(html), 'nothing is loaded from elsewhere');
  const specs = JSON.parse(/<script type="application\/json" id="chart-specs">(.*?)<\/script>/s.exec(html)![1]!) as Record<
    string,
    { data: { values: unknown[] } }
  >;
  assert.deepEqual(Object.keys(specs), ['chart-training-reward']);
  assert.equal(specs['chart-training-reward']!.data.values.length, 1);
});

test('held-out points without an interval are drawn at their mean; evaluation results fill the benchmark table', () => {
  const model = emptyModel({
    heldOut: [{ version: 2, series: 'demo held-out EM', n: 1, mean: 1, low: null, high: null }],
    benchmarks: [
      {
        resultId: 'r1',
        dataset: 'hotpotqa',
        datasetVersion: 'h',
        questions: 10,
        k: 4,
        policyVersion: 2,
        avgAtK: { em: 0.4, f1_asearcher: 0.5 },
        avgAtKCi95: { em: [0.2, 0.6] },
        passAtK: { em: 0.7 },
        meanTurns: 3,
        meanToolCalls: 2,
        stopReasons: {},
        seconds: 1,
        createdAt: '2026-01-01T00:00:00Z',
      },
    ],
  });
  const chart = reportCharts(model).find((candidate) => candidate.id === 'chart-held-out')!;
  assert.deepEqual((chart.spec.data as { values: unknown[] }).values, [
    { version: 2, series: 'demo held-out EM', n: 1, mean: 1, low: 1, high: 1, position: 2 },
  ]);
  // Accuracy keeps its [0, 1] axis (all-zero accuracies drew one tick labelled 0.000000).
  const layers = chart.spec.layer as { encoding: { y: { scale?: { domain?: number[] } } } }[];
  assert.deepEqual(layers[1]!.encoding.y.scale, { domain: [0, 1] });
  const html = renderReport(model, runtime);
  assert.match(
    html,
    /<td>hotpotqa<\/td><td>v2<\/td><td>4<\/td><td>10<\/td><td>0\.400 \[0\.200, 0\.600\]<\/td><td>0\.500<\/td><td>0\.700<\/td>/,
  );
});

test('a demo run shows its stages: held-out EM with intervals, tool calls per question, behaviour, reference sets and the paired gains', () => {
  const behaviour = behaviourRow(3);
  const stage = (name: string, version: number, em: number) => ({
    stage: name,
    version,
    questions: 8,
    k: 1,
    em,
    emCi95: [em / 2, Math.min(1, em * 1.5)] as const,
    meanToolCalls: version,
    toolCallsDistribution: { '0': 2, [String(version + 1)]: 6 },
    // The RL stage's behaviour has the gold measures; the warm stage's is shaped as stored before they existed.
    behaviour:
      version === 0
        ? null
        : version === 3
          ? { ...behaviour, version, goldSeenShare: 0.75, goldStatedShare: 0.5, statedButMissedShare: 0.25 }
          : { ...behaviour, version },
    references: [{ dataset: 'bamboogle', em: em / 4, emCi95: [0, em / 2] as const }],
  });
  const html = renderReport(
    emptyModel({
      demoStages: [stage('base', 0, 0), stage('warm', 1, 0.25), stage('rl', 3, 0.5)],
      demoGains: [{ label: 'RL − warm start', n: 8, mean: 0.25, ci95: [0.125, 0.5] }],
    }),
    runtime,
  );
  assert.match(html, /Demo stages: held-out accuracy and behaviour per version/);
  assert.match(
    html,
    /<td>rl<\/td><td>v3<\/td><td>0\.500 \[0\.250, 0\.750\]<\/td><td>8 × 1<\/td><td>3\.00<\/td><td>0: 2 · 4: 6<\/td><td>50 %<\/td><td>2\.25<\/td><td>75 % \/ 50 % \/ 25 %<\/td><td>0\.125 \[0\.000, 0\.250\]<\/td>/,
  );
  assert.match(html, /<td>warm<\/td><td>v1<\/td>.*<td>50 %<\/td><td>2\.25<\/td><td>–<\/td>/);
  assert.match(html, /<td>base<\/td><td>v0<\/td>.*<td>–<\/td><td>–<\/td><td>–<\/td>/);
  assert.match(html, /<th>bamboogle EM \[95 % CI\]<\/th>/);
  assert.match(html, /<td>RL − warm start<\/td><td>8<\/td><td>0\.250<\/td><td>\[0\.125, 0\.500\]<\/td>/);
  assert.doesNotMatch(renderReport(emptyModel(), runtime), /Demo stages/);
});

test('step points: busy fraction over the time since the previous step, unknown for the first without a start', () => {
  const history = [
    { step: 0, version: 1, meanReward: 0.5, maxStaleness: 0, trainSeconds: 10, finishedAtMs: 100_000 },
    { step: 1, version: 2, meanReward: 0.6, maxStaleness: 1, trainSeconds: 20, finishedAtMs: 180_000, syncSeconds: 2 },
  ];
  const points = stepPoints(history, null);
  assert.equal(points[0]!.busyFraction, null);
  assert.equal(points[1]!.busyFraction, 20_000 / 80_000);
  assert.equal(points[1]!.syncSeconds, 2);
  assert.equal(stepPoints(history, 60_000)[0]!.busyFraction, 10_000 / 40_000);
  assert.deepEqual(points[0]!.phases, [], 'no phases reported, none shown');
});

test("step phases: the engine's own, its start and load, the upload as the rest of the step, and the sync", () => {
  const stats = {
    step: 0,
    version: 1,
    meanReward: 0.5,
    maxStaleness: 0,
    trainSeconds: 130,
    finishedAtMs: 100_000,
    syncSeconds: 12,
    trainPhases: { stageSeconds: 2, engineSeconds: 110, proximalSeconds: 50, updateSeconds: 25, saveSeconds: 30 },
  };
  assert.deepEqual(stepPhases(stats), [
    { phase: 'stage base', seconds: 2 },
    { phase: 'proximal', seconds: 50 },
    { phase: 'update', seconds: 25 },
    { phase: 'save and export', seconds: 30 },
    { phase: 'engine start and load', seconds: 5 },
    { phase: 'upload and register', seconds: 18 },
    { phase: 'sync', seconds: 12 },
  ]);
  // A sync that reported its phases is shown by them, with what they leave as "other".
  assert.deepEqual(stepPhases({ ...stats, syncPhases: { loading: 0.001, files: 3, open: 8 } }).slice(-3), [
    { phase: 'sync: files', seconds: 3 },
    { phase: 'sync: open', seconds: 8 },
    { phase: 'sync: other', seconds: 1 },
  ]);
  // Only the engine's phases (another trainer): nothing is derived from what is missing.
  assert.deepEqual(stepPhases({ ...stats, syncSeconds: undefined, trainPhases: { proximalSeconds: 1 } }), [
    { phase: 'proximal', seconds: 1 },
  ]);
  const model = { ...emptyModel(), steps: stepPoints([stats], 0) };
  const chart = reportCharts(model).find((candidate) => candidate.id === 'chart-step-phases');
  assert.ok(chart, 'the report charts the phases');
  assert.equal((chart.spec as { data: { values: unknown[] } }).data.values.length, 7);
});

test('throughput: samples per hour in equal buckets; the partial last bucket over its elapsed part', () => {
  assert.deepEqual(throughput([new Date(0)]), []);
  const start = Date.UTC(2026, 0, 1);
  // 10 trajectories over 2 minutes, the last at +120 s: one-minute buckets [0,60) [60,120) [120,…).
  const times = [0, 10, 20, 30, 40, 70, 80, 90, 100, 120].map((seconds) => new Date(start + seconds * 1000));
  const points = throughput(times);
  assert.equal(points.length, 3);
  assert.equal(points[0]!.samplesPerHour, 5 * 60);
  assert.equal(points[1]!.samplesPerHour, 4 * 60);
  assert.equal(points[2]!.samplesPerHour, 3600, 'one sample in the one second that elapsed');
  assert.equal(points[0]!.at, new Date(start).toISOString());
});

test('dataset statistics count questions, gold paths and extra fields', () => {
  const text = [
    JSON.stringify({ id: 'a', question: 'abcd', answers: ['x', 'y'], goldTurns: ['s', 'a'], hops: 1 }),
    '',
    JSON.stringify({ id: 'b', question: 'ab', answers: ['x'], hops: 2, sources: ['d1'] }),
  ].join('\n');
  const stats = datasetStatistics('k', text);
  assert.equal(stats.questions, 2);
  assert.equal(stats.meanQuestionChars, 3);
  assert.equal(stats.meanAnswersPerQuestion, 1.5);
  assert.equal(stats.withGoldTurns, 1);
  assert.deepEqual(stats.goldTurns, [{ value: 2, group: 'questions', count: 1 }]);
  assert.deepEqual(stats.extraFields, { hops: 2, sources: 1 });
});

const view: TrajectoryView = {
  trajectoryId: 'learner-x-g0-s1',
  runId: 'x',
  dataset: 'datasets/x/train.jsonl',
  questionId: 'q0',
  question: 'What is the capital of Peru?',
  goldAnswers: ['Lima'],
  answer: 'Lima',
  reward: 1,
  rewardMetric: 'em',
  rewardParts: { em: 1, f1: 1 },
  stopReason: 'answered',
  versionsUsed: [3, 4],
  generatedTokens: 20,
  turns: [
    {
      turn: 0,
      policyVersion: 3,
      tokenVersions: [3, 4],
      text: '<search>capital of Peru</search>',
      action: 'tools',
      generatedTokens: 12,
      interruptions: 1,
      toolCalls: [
        {
          tool: 'search',
          input: { query: 'capital of Peru' },
          ok: true,
          invalid: false,
          observation: 'Lima is the capital <b>.',
          documentIds: ['doc-9'],
          latencyMs: 12.4,
          cacheHit: true,
        },
      ],
    },
    {
      turn: 1,
      policyVersion: 4,
      tokenVersions: [4],
      text: '<answer>Lima</answer>',
      action: 'answer',
      answer: 'Lima',
      generatedTokens: 8,
      interruptions: 0,
      toolCalls: [],
    },
  ],
};

test('the terminal and the HTML page show the same turns, calls, observations, versions and reward', () => {
  const behaviour = analyseTrajectory(view);
  const text = formatTrajectory(view, behaviour);
  assert.match(text, /reward {5}1\.000 \(em; em 1\.000 · f1 1\.000\) · stop: answered/);
  assert.match(text, /versions {3}v3, v4 · 2 turns · 20 generated tokens/);
  assert.match(text, /── turn 0 · asked v3 · tokens from v3, v4 · 12 tokens · interrupted 1× · tools/);
  assert.match(text, /→ search\(\{"query":"capital of Peru"\}\) — ok, 12 ms, cached · documents doc-9/);
  assert.match(text, /‹ Lima is the capital <b>\./);
  assert.match(text, /answer verified by a further search: no \(first seen in turn 0\)/);
  assert.match(formatTrajectory(view, behaviour, { observationChars: 4 }), /‹ Lima… \(24 characters\)/);
  const page = renderTrajectoryPage(view, behaviour, { reportLink: '../run.html' });
  assert.ok(page.includes('Lima is the capital &lt;b&gt;.'));
  assert.ok(page.includes('asked v3 · tokens from v3, v4 · 12 tokens · interrupted 1× · tools'));
  assert.ok(page.includes('<a href="../run.html">'));
  assert.ok(!page.includes('<script'), 'a trajectory page runs no script');
  assert.equal(trajectoryPageName('a/b c:d'), 'a_b_c_d.html');
});

test('the summary names per-version rewards with intervals, held-out series and behaviour', () => {
  const summary = formatReportSummary(
    emptyModel({
      trainingReward: [
        { version: 0, series: 'training reward', n: 4, mean: 0.25, low: 0, high: 0.5 },
        { version: 1, series: 'training reward', n: 4, mean: 0.5, low: 0.25, high: 0.75 },
      ],
      heldOut: [{ version: 1, series: 'demo held-out EM', n: 6, mean: 0.5, low: null, high: null }],
      summary: {
        trainingTrajectories: 8,
        heldOutTrajectories: 6,
        steps: 1,
        finalVersion: 1,
        samplesPerHour: 100,
        trainerBusy: 0.5,
        maxStaleness: 1,
        wallSeconds: 60,
      },
    }),
  );
  assert.match(summary, /training reward per version \(mean \[95 % CI\]\): v0 0\.250 \[0\.000, 0\.500\] → v1 0\.500 \[0\.250, 0\.750\]/);
  assert.match(summary, /held-out demo held-out EM: v1 0\.500$/m);
  assert.match(summary, /max staleness 1 · trainer busy 50 % · 100 samples\/h/);
});

test('the summary gives each training-reward series its own line (a transfer run’s modes are separate lineages)', () => {
  const summary = formatReportSummary(
    emptyModel({
      trainingReward: [
        { version: 68, series: 'training reward (freeze)', n: 4, mean: 0.25, low: 0, high: 0.5 },
        { version: 71, series: 'training reward (full)', n: 4, mean: 0.5, low: 0.25, high: 0.75 },
      ],
    }),
  );
  assert.match(summary, /^training reward \(freeze\) per version \(mean \[95 % CI\]\): v68 0\.250 \[0\.000, 0\.500\]$/m);
  assert.match(summary, /^training reward \(full\) per version \(mean \[95 % CI\]\): v71 0\.500 \[0\.250, 0\.750\]$/m);
  assert.doesNotMatch(summary, /v68 [^\n]*→ v71/, 'no line joins the two modes');
});

test('a trajectory child says in the Web UI what it is and where to read it, within the summary limit', () => {
  const metadata = trajectoryMetadata({
    workflowId: 'learner-r-g1-s0',
    question: `What is ${'very '.repeat(60)}long?`,
    questionId: 'q1',
    dataset: 'datasets/r/train.jsonl',
    runId: 'r',
    policyVersion: 2,
    sample: 0,
    answers: ['x'],
  });
  assert.ok(Buffer.byteLength(metadata.staticSummary) <= 200, 'Temporal keeps 200 bytes of summary');
  assert.match(metadata.staticSummary, /^q1: What is very/);
  assert.match(metadata.staticDetails, /`longhaul show learner-r-g1-s0`/);
  assert.match(metadata.staticDetails, /dataset `datasets\/r\/train\.jsonl` · question `q1` · sample 0 · run `r` · started on policy v2/);
  assert.match(metadata.staticDetails, /`LonghaulRunId = 'r' AND LonghaulQuestionId = 'q1'`/);
});

test('the samples-per-hour time axis shows seconds over a short run, where minute labels repeated', () => {
  const at = (minutes: number) => new Date(Date.UTC(2026, 11, 3, 23, 58) + minutes * 60_000).toISOString();
  assert.equal(timeAxisFormat([at(0), at(2), at(5)]), '%H:%M:%S');
  assert.equal(timeAxisFormat([at(0), at(45), at(120)]), '%H:%M');
});

test('series that share a version are drawn side by side, not one over the other', () => {
  const point = (version: number, series: string) => ({ version, series, n: 20, mean: 0.05, low: 0, high: 0.15 });
  const model = emptyModel({
    heldOut: [point(0, 'demo held-out EM'), point(1, 'demo held-out EM'), point(1, 'synth EM Avg@1'), point(2, 'synth EM Avg@1')],
  });
  const chart = reportCharts(model).find((candidate) => candidate.id === 'chart-held-out')!;
  const values = (chart.spec.data as { values: { version: number; series: string; position: number }[] }).values;
  const atOne = values.filter((value) => value.version === 1).map((value) => value.position);
  assert.equal(new Set(atOne).size, 2, 'two series at version 1 get two positions');
  for (const value of values)
    assert.ok(Math.abs(value.position - value.version) <= 0.25, `${value.series} v${value.version} stays by its version`);
  const layers = chart.spec.layer as { encoding: { x: { field: string; scale: { domain: number[] } } } }[];
  assert.equal(layers[1]!.encoding.x.field, 'position');
  assert.deepEqual(layers[1]!.encoding.x.scale.domain, [-0.5, 2.5]);
});

test('chart legends show whole labels: each legend allows the width of its longest series name', () => {
  const behaviour = (version: number) => ({
    ...behaviourRow(version),
    goldSeenShare: 0.75,
    goldStatedShare: 0.5,
    statedButMissedShare: 0.25,
  });
  const charts = reportCharts(emptyModel({ behaviour: [behaviour(0), behaviour(1)] }));
  const shares = charts.find((chart) => chart.id === 'chart-behaviour-shares');
  assert.ok(shares, 'the behaviour shares are charted');
  assert.match(shares.description, /gold answer/, 'the description names the gold measures it plots');
  for (const chart of charts) {
    const spec = chart.spec as {
      data?: { values: Record<string, unknown>[] };
      encoding?: { color?: { field: string; legend?: { labelLimit?: number } } };
    };
    const color = spec.encoding?.color;
    if (!color?.legend || !spec.data) continue;
    const longest = Math.max(...spec.data.values.map((value) => String(value[color.field]).length));
    // Vega-Lite's default label limit is 160 px; an 11 px label is ~6 px a character.
    assert.ok((color.legend.labelLimit ?? 160) >= longest * 6.5, `${chart.id}: a ${longest}-character label fits its legend`);
  }
});

test('held-out trajectories a stored evaluation result covers are drawn once, by that result', () => {
  const rows = ['eval-r-eval-warm-q0-s0', 'r-eval-base-q3-s0', 'eval-r-eval-rl-q1-s0', 'eval-r-eval-warm-extra-q0-s0'].map(
    (trajectoryId) => ({
      trajectoryId,
    }),
  );
  const left = notSummarised(rows, [{ resultId: 'r-eval-warm' }, { resultId: 'r-eval-base' }]).map((row) => row.trajectoryId);
  assert.deepEqual(left, ['eval-r-eval-rl-q1-s0', 'eval-r-eval-warm-extra-q0-s0'], 'only the rows no result names stay');
  assert.equal(notSummarised(rows, []).length, 4);
});

test('a run with training groups shows where the RL signal came from, in the page and the summary', () => {
  const model = emptyModel({
    rlSignal: [
      { source: 'warm-start', hops: 2, goldTurns: 7, groups: 4, samples: 16, right: 9, mixed: 3, equalReward: 1 },
      { source: 'candidate', hops: 1, goldTurns: null, groups: 2, samples: 8, right: 0, mixed: 0, equalReward: 2 },
    ],
  });
  const html = renderReport(model, runtime);
  assert.match(html, /<h2>Where the RL signal came from<\/h2>/);
  assert.match(
    html,
    /RL signal: 3 of 6 groups mixed right and wrong answers \(warm-start 3 of 4 · candidate 0 of 2\); 3 had equal rewards/,
  );
  assert.match(
    html,
    /<td>warm-start<\/td><td>2<\/td><td>7<\/td><td>4<\/td><td>16<\/td><td>9 \(56 %\)<\/td><td>3 \(75 %\)<\/td><td>1 \(25 %\)<\/td>/,
  );
  assert.match(formatReportSummary(model), /RL signal: 3 of 6 groups mixed/);
  assert.doesNotMatch(renderReport(emptyModel(), runtime), /Where the RL signal came from/);
});

test('a run with training groups shows where the advantage went, and warns when wrong answers gained', () => {
  const model = emptyModel({
    rlAdvantage: [
      { outcome: 'right', samples: 9, meanReward: 0.95, advantage: 14.2 },
      { outcome: 'wrong answer', samples: 136, meanReward: 0.1, advantage: 17.74 },
      { outcome: 'no answer: repeated a call', samples: 30, meanReward: 0.05, advantage: -38.45 },
    ],
  });
  const html = renderReport(model, runtime);
  assert.match(html, /<h2>Where the advantage went<\/h2>/);
  assert.match(html, /<td>wrong answer<\/td><td>136<\/td><td>0\.100<\/td><td><span class="gain">17\.74<\/span><\/td><td>0\.13<\/td>/);
  assert.match(html, /<span class="loss">-38\.45<\/span>/);
  const summary = formatReportSummary(model);
  assert.match(
    summary,
    /advantage by outcome: right \+14\.2 \(9\) · wrong answer \+17\.7 \(136\) · no answer: repeated a call −38\.5 \(30\); warning: wrong answer gained advantage/,
  );
  const healthy = formatReportSummary(
    emptyModel({
      rlAdvantage: [
        { outcome: 'right', samples: 9, meanReward: 0.95, advantage: 14.2 },
        { outcome: 'wrong answer', samples: 46, meanReward: 0, advantage: -19.9 },
      ],
    }),
  );
  assert.doesNotMatch(healthy, /warning/);
  assert.doesNotMatch(renderReport(emptyModel(), runtime), /Where the advantage went/);
});

test('staleness chart: whole versions from 0 to at least 1, so an all-on-policy run is not one "0.000000" tick', () => {
  const step = { step: 0, version: 1, meanReward: 0.5, maxStaleness: 0, trainSeconds: 10, finishedAtMs: 100_000 };
  const yOf = (maxStaleness: number) => {
    const model = { ...emptyModel(), steps: stepPoints([{ ...step, maxStaleness }], 0) };
    const chart = reportCharts(model).find((candidate) => candidate.id === 'chart-staleness-steps');
    assert.ok(chart, 'the report charts staleness');
    return (chart.spec as { encoding: { y: { scale: { domain: number[] }; axis: { format: string } } } }).encoding.y;
  };
  assert.deepEqual(yOf(0).scale.domain, [0, 1]);
  assert.equal(yOf(0).axis.format, 'd');
  assert.deepEqual(yOf(3).scale.domain, [0, 3]);
});
