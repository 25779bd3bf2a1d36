/**
 * The report as one self-contained HTML file: a pure function of the ReportModel and the chart
 * runtime (Vega, Vega-Lite, vega-embed builds, inlined: nothing is fetched when the file is viewed).
 * Each chart is a Vega-Lite spec with its data inline; the page's script embeds them and records the
 * outcome in the DOM (`data-rendered` on each chart, `#report-errors` for any error Vega or the page
 * raised, `data-box` with the chart's position), which the headless-browser test reads.
 */
import type { ChartRuntime, CountPoint, ReportModel } from './report-model.js';
import { goldMeasures, type VersionBehaviour } from '../../activities/analysis/behaviour.js';
import { transferBudgetText, transferStageOf } from '../../bench/transfer-benchmark.js';
import { advantageSummary, advantageTolerance, signalSummary } from './rl-signal.js';

export interface Chart {
  readonly id: string;
  readonly title: string;
  /** One sentence: what is plotted and how it is computed. */
  readonly description: string;
  readonly spec: Record<string, unknown>;
}

const schema = 'https://vega.github.io/schema/vega-lite/v6.json';
const width = 520;
const height = 220;

/**
 * Hours and minutes on a time axis, and seconds too over a short run: the axis puts ticks every
 * 30 s on a run of a few minutes, which %H:%M labelled twice each (a 20-minute demo's report).
 */
export function timeAxisFormat(times: readonly string[]): string {
  const stamps = times.map((time) => Date.parse(time));
  return Math.max(...stamps) - Math.min(...stamps) <= 30 * 60_000 ? '%H:%M:%S' : '%H:%M';
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** Inline script text: `</script` would end the element early. */
function inlineScript(code: string): string {
  return code.replace(/<\/script/gi, '<\\/script');
}

const fixed = (value: number | null | undefined, digits = 3) =>
  value === null || value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits);
/** Where right answers are lost (activities/analysis/behaviour.ts), when measured: [measure, share] pairs. */
function goldShares(row: VersionBehaviour): [string, number][] {
  const gold = goldMeasures(row);
  if (!gold) return [];
  return [
    ['a gold answer seen in an observation', gold.seen],
    ['a gold answer stated in its reasoning', gold.stated],
    ['stated, yet the answer is not it', gold.statedButMissed],
  ];
}

/** "seen / stated / stated but missed" as percentages, "–" where not measured. */
function goldCell(row: VersionBehaviour | null): string {
  const gold = row ? goldMeasures(row) : null;
  return gold ? [gold.seen, gold.stated, gold.statedButMissed].map(percent).join(' / ') : '–';
}

const percent = (value: number | null | undefined) => (value === null || value === undefined ? '–' : `${(value * 100).toFixed(0)} %`);

/**
 * Points with a mean and an interval per policy version, one colour per series. Series that share a
 * version are drawn side by side (each moved by a small step along the version axis, `position`): two
 * series with the same value at the same version drew one over the other, so one colour showed (the
 * demo's held-out EM and the evaluation of the same version, seen in a report in headless chromium).
 * `domain`: a fixed y range (accuracy is a share: [0, 1], also when every value is 0, where a free axis
 * collapses to one tick).
 */
function intervalChart(
  values: readonly { version: number; series: string }[],
  yTitle: string,
  domain?: readonly [number, number],
): Record<string, unknown> {
  const series = [...new Set(values.map((value) => value.series))];
  const versions = values.map((value) => value.version);
  const span = Math.max(1, Math.max(...versions) - Math.min(...versions));
  const step = series.length > 1 ? Math.min(0.25 / (series.length - 1), 0.04 * span) : 0;
  const placed = values.map((value) => ({
    ...value,
    position: value.version + step * (series.indexOf(value.series) - (series.length - 1) / 2),
  }));
  const x = {
    field: 'position',
    type: 'quantitative',
    title: 'policy version',
    scale: { domain: [Math.min(...versions) - 0.5, Math.max(...versions) + 0.5], nice: false, zero: false },
    axis: { labelAngle: 0, tickMinStep: 1, format: 'd', grid: false },
  };
  const color = { field: 'series', type: 'nominal', title: null, legend: { orient: 'bottom', columns: 2, labelLimit: 400 } };
  return {
    $schema: schema,
    width,
    height,
    data: { values: placed },
    layer: [
      {
        mark: { type: 'rule', strokeWidth: 2 },
        encoding: { x, y: { field: 'low', type: 'quantitative' }, y2: { field: 'high' }, color },
      },
      {
        mark: { type: 'line', point: { filled: true, size: 60 } },
        encoding: {
          x,
          y: { field: 'mean', type: 'quantitative', title: yTitle, scale: domain ? { domain: [...domain] } : { zero: true } },
          color,
          tooltip: [
            { field: 'series' },
            { field: 'version' },
            { field: 'mean', format: '.3f' },
            { field: 'low', format: '.3f' },
            { field: 'high', format: '.3f' },
            { field: 'n' },
          ],
        },
      },
    ],
  };
}

function histogram(values: readonly CountPoint[], xTitle: string): Record<string, unknown> {
  return {
    $schema: schema,
    width,
    height,
    data: { values },
    mark: 'bar',
    encoding: {
      x: { field: 'value', type: 'ordinal', title: xTitle, axis: { labelAngle: 0 } },
      xOffset: { field: 'group' },
      y: { field: 'count', type: 'quantitative', title: 'trajectories' },
      color: { field: 'group', type: 'nominal', title: null, legend: { orient: 'bottom' } },
      tooltip: [{ field: 'group' }, { field: 'value' }, { field: 'count' }],
    },
  };
}

/** The charts the model has data for, in page order. */
export function reportCharts(model: ReportModel): Chart[] {
  const charts: Chart[] = [];
  // Bootstrap intervals are only drawn where they exist: a rule from low to high.
  const withBounds = (points: ReportModel['trainingReward']) =>
    points.map((point) => ({ ...point, low: point.low ?? point.mean, high: point.high ?? point.mean }));
  if (model.trainingReward.length)
    charts.push({
      id: 'chart-training-reward',
      title: 'Training reward per policy version',
      description:
        'Mean reward of the training trajectories, grouped by the newest version that generated them (one series per mode in a transfer benchmark), with a 95 % bootstrap interval over trajectories.',
      spec: intervalChart(withBounds(model.trainingReward), 'mean reward'),
    });
  if (model.heldOut.length)
    charts.push({
      id: 'chart-held-out',
      title: 'Held-out accuracy per policy version',
      description:
        'Evaluation results (Avg@k with their 95 % bootstrap interval) and the run’s own held-out samples: a demo’s stages, a transfer benchmark’s start and modes, one series each (EM per trajectory, 95 % bootstrap interval over questions).',
      spec: intervalChart(withBounds(model.heldOut), 'accuracy', [0, 1]),
    });
  // Steps of several learners (a transfer benchmark's modes): side by side per step, one colour per learner.
  const stepSeries = [...new Set(model.steps.map((step) => step.series).filter((series) => series !== undefined))];
  const bySeries = stepSeries.length
    ? { xOffset: { field: 'series' }, color: { field: 'series', type: 'nominal', title: null, legend: { orient: 'bottom' } } }
    : {};
  const seriesTip = stepSeries.length ? [{ field: 'series' }] : [];
  if (model.steps.length) {
    charts.push({
      id: 'chart-staleness-steps',
      title: 'Staleness per training step',
      description: 'Largest staleness (trained version minus the oldest version in a trajectory) of each step’s batch.',
      spec: {
        $schema: schema,
        width,
        height,
        data: { values: model.steps },
        mark: { type: 'bar' },
        encoding: {
          x: { field: 'step', type: 'ordinal', title: 'training step', axis: { labelAngle: 0 } },
          // Whole versions, from 0 to at least 1: an all-zero run (every batch on-policy) otherwise gets one tick, "0.000000".
          y: {
            field: 'maxStaleness',
            type: 'quantitative',
            title: 'max staleness (versions)',
            scale: { domain: [0, Math.max(1, ...model.steps.map((step) => step.maxStaleness))] },
            axis: { tickMinStep: 1, format: 'd' },
          },
          ...bySeries,
          tooltip: [...seriesTip, { field: 'step' }, { field: 'version' }, { field: 'maxStaleness' }],
        },
      },
    });
    charts.push({
      id: 'chart-trainer-busy',
      title: 'Trainer busy fraction per step',
      description: 'Seconds the train step ran over the wall time since the previous step ended (since the run started, for the first).',
      spec: {
        $schema: schema,
        width,
        height,
        data: { values: model.steps.filter((step) => step.busyFraction !== null) },
        mark: { type: 'bar' },
        encoding: {
          x: { field: 'step', type: 'ordinal', title: 'training step', axis: { labelAngle: 0 } },
          y: { field: 'busyFraction', type: 'quantitative', title: 'busy fraction', scale: { domain: [0, 1] }, axis: { format: '%' } },
          ...bySeries,
          tooltip: [...seriesTip, { field: 'step' }, { field: 'trainSeconds', format: '.1f' }, { field: 'busyFraction', format: '.0%' }],
        },
      },
    });
  }
  // Several learners: each bar is one learner's step ("full 3").
  const phaseRows = model.steps.flatMap((step) =>
    step.phases.map((phase, order) => ({
      step: step.series === undefined ? step.step : `${step.series} ${step.step}`,
      phase: phase.phase,
      seconds: phase.seconds,
      order,
    })),
  );
  if (phaseRows.length)
    charts.push({
      id: 'chart-step-phases',
      title: 'Where each training step’s time went',
      description:
        'Seconds per phase: staging the base version, the engine’s proximal pass, update and save (with the ONNX export), the engine’s start and model load, the upload and registration of the new version, and the serving side’s switch to it (sync).',
      spec: {
        $schema: schema,
        width,
        height,
        data: { values: phaseRows },
        mark: { type: 'bar' },
        encoding: {
          x: { field: 'step', type: 'ordinal', title: 'training step', sort: null, axis: { labelAngle: 0 } },
          y: { field: 'seconds', type: 'quantitative', aggregate: 'sum', title: 'seconds', stack: 'zero' },
          color: {
            field: 'phase',
            type: 'nominal',
            title: null,
            sort: { field: 'order' },
            legend: { orient: 'bottom', columns: 3, labelLimit: 400 },
          },
          order: { field: 'order', type: 'quantitative' },
          tooltip: [{ field: 'step' }, { field: 'phase' }, { field: 'seconds', format: '.1f' }],
        },
      },
    });
  if (model.staleness.length)
    charts.push({
      id: 'chart-staleness',
      title: 'Staleness of consumed trajectories',
      description:
        'Trajectories a step trained on, by the version trained from minus the oldest version that generated any of their tokens.',
      spec: histogram(model.staleness, 'staleness (versions)'),
    });
  if (model.throughput.length)
    charts.push({
      id: 'chart-throughput',
      title: 'Samples per hour',
      description: 'Finished training trajectories per hour, in equal time buckets over the run.',
      spec: {
        $schema: schema,
        width,
        height,
        data: { values: model.throughput },
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'at', type: 'temporal', title: 'time', axis: { format: timeAxisFormat(model.throughput.map((point) => point.at)) } },
          y: { field: 'samplesPerHour', type: 'quantitative', title: 'samples / hour' },
          tooltip: [
            { field: 'at', type: 'temporal', format: '%H:%M:%S' },
            { field: 'samplesPerHour', format: '.0f' },
          ],
        },
      },
    });
  if (model.turns.length)
    charts.push({
      id: 'chart-turns',
      title: 'Turns per trajectory',
      description: 'Distribution of turns (one generation each) per trajectory.',
      spec: histogram(model.turns, 'turns'),
    });
  if (model.toolCalls.length)
    charts.push({
      id: 'chart-tool-calls',
      title: 'Tool calls per trajectory',
      description: 'Distribution of tool calls per trajectory (every tool, from the trajectory records).',
      spec: histogram(model.toolCalls, 'tool calls'),
    });
  if (model.behaviour.length) {
    const shares = model.behaviour.flatMap((row) => [
      ...(row.verifiedShare === null
        ? []
        : [{ version: row.version, measure: 'answers verified by a further search', value: row.verifiedShare }]),
      { version: row.version, measure: 'expresses uncertainty', value: row.uncertaintyShare },
      { version: row.version, measure: 'notes conflicting evidence', value: row.conflictShare },
      ...goldShares(row).map(([measure, value]) => ({ version: row.version, measure, value })),
    ]);
    const counts = model.behaviour.flatMap((row) => [
      { version: row.version, measure: 'distinct documents', value: row.meanDistinctDocuments },
      { version: row.version, measure: 'tool calls per trajectory', value: row.meanToolCalls },
      { version: row.version, measure: 'tool calls per question', value: row.meanToolCallsPerQuestion },
    ]);
    const lines = (values: object[], title: string, format: string) => ({
      $schema: schema,
      width,
      height,
      data: { values },
      mark: { type: 'line', point: { filled: true, size: 60 } },
      encoding: {
        x: { field: 'version', type: 'ordinal', title: 'policy version', axis: { labelAngle: 0 } },
        y: { field: 'value', type: 'quantitative', title, axis: { format } },
        // Vega-Lite cuts a legend label at 160 px by default ("a gold answer seen in an obs…").
        color: { field: 'measure', type: 'nominal', title: null, legend: { orient: 'bottom', columns: 1, labelLimit: 400 } },
        tooltip: [{ field: 'measure' }, { field: 'version' }, { field: 'value', format: '.2f' }],
      },
    });
    charts.push({
      id: 'chart-behaviour-shares',
      title: 'Expert behaviours across versions: shares',
      description:
        'Share of answered trajectories whose answer was checked by a further search after it first appeared; share of trajectories whose own text expresses uncertainty or notes conflicting evidence; and where right answers are lost: share of trajectories with a gold answer in an observation, with a gold answer stated in its own reasoning, and stated yet not given as the answer (versions measured before these existed have none).',
      spec: lines(shares, 'share', '%'),
    });
    charts.push({
      id: 'chart-behaviour-counts',
      title: 'Expert behaviours across versions: counts',
      description: 'Mean distinct documents drawn on, and mean tool calls per trajectory and per question.',
      spec: lines(counts, 'mean', '.1f'),
    });
  }
  if (model.dataset && model.dataset.goldTurns.length)
    charts.push({
      id: 'chart-dataset-hops',
      title: 'Training questions by gold path length',
      description: 'Questions of the training set by the number of turns of their gold path (goldTurns).',
      spec: histogram(model.dataset.goldTurns, 'gold turns'),
    });
  charts.push(...transferCharts(model));
  return charts;
}

/** The transfer benchmark's charts: held-out EM per trainable mode with its interval, and the cost of an optimizer step. */
function transferCharts(model: ReportModel): Chart[] {
  const transfer = model.transfer;
  if (!transfer) return [];
  const x = { field: 'mode', type: 'nominal', title: 'trainable mode', sort: null, axis: { labelAngle: 0 } };
  const rl = transferStageOf(transfer) === 'rl';
  const rows = transfer.modes.map((row) => ({
    mode: row.mode,
    label: row.label,
    version: row.version,
    em: row.em,
    low: row.em_ci95[0],
    high: row.em_ci95[1],
    secondsPerStep: row.update_seconds_per_step,
    trainableParameters: row.trainable_parameters,
  }));
  // RL: the start version first, the baseline every mode's gain is taken against.
  const accuracyRows = transfer.start
    ? [
        {
          mode: 'start',
          label: 'the start version, untrained',
          version: transfer.start.version,
          em: transfer.start.em,
          low: transfer.start.em_ci95[0],
          high: transfer.start.em_ci95[1],
        },
        ...rows,
      ]
    : rows;
  return [
    {
      id: 'chart-transfer-accuracy',
      title: 'Transfer: held-out EM per trainable mode',
      description: `Avg@${transfer.k} EM on the same ${transfer.heldout_questions} held-out questions after the same ${rl ? 'RL budget (and of the start version, before it)' : 'warm-start budget'}, with its 95 % bootstrap interval over questions.`,
      spec: {
        $schema: schema,
        width,
        height,
        data: { values: accuracyRows },
        layer: [
          { mark: { type: 'rule', strokeWidth: 2 }, encoding: { x, y: { field: 'low', type: 'quantitative' }, y2: { field: 'high' } } },
          {
            mark: { type: 'point', filled: true, size: 90 },
            encoding: {
              x,
              y: { field: 'em', type: 'quantitative', title: 'EM', scale: { domain: [0, 1] } },
              tooltip: [
                { field: 'mode' },
                { field: 'label' },
                { field: 'version' },
                { field: 'em', format: '.3f' },
                { field: 'low', format: '.3f' },
                { field: 'high', format: '.3f' },
              ],
            },
          },
        ],
      },
    },
    {
      id: 'chart-transfer-cost',
      title: 'Transfer: seconds per optimizer step',
      description:
        'The engine’s forward, backward and AdamW time over its optimizer steps, per trainable mode (same samples and micro-batches).',
      spec: {
        $schema: schema,
        width,
        height,
        data: { values: rows.filter((row) => row.secondsPerStep !== null) },
        mark: 'bar',
        encoding: {
          x,
          y: { field: 'secondsPerStep', type: 'quantitative', title: 'seconds / optimizer step' },
          tooltip: [{ field: 'mode' }, { field: 'secondsPerStep', format: '.2f' }, { field: 'trainableParameters', format: ',' }],
        },
      },
    },
  ];
}

/** The transfer benchmark's side-by-side table, or nothing when the run is no transfer benchmark. */
function transferSection(model: ReportModel): string {
  const transfer = model.transfer;
  if (!transfer) return '';
  const rl = transferStageOf(transfer) === 'rl';
  const signed = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(3)}`;
  const difference = (value: number | undefined, ci95: readonly [number, number] | undefined) =>
    value === undefined || !ci95 ? '–' : `${signed(value)} [${signed(ci95[0])}, ${signed(ci95[1])}]`;
  const rows = transfer.modes.map((row) => [
    escapeHtml(row.mode),
    escapeHtml(row.label),
    `v${row.start_version} → v${row.version}`,
    row.trainable_parameters === null ? '–' : row.trainable_parameters.toLocaleString('en-US'),
    fixed(row.update_seconds_per_step, 2),
    fixed(row.train_seconds, 1),
    row.peak_rss_mb === null ? '–' : `${row.peak_rss_mb.toFixed(0)} MB`,
    ...(rl
      ? [
          row.reward_first_step === undefined || row.reward_last_step === undefined
            ? '–'
            : `${fixed(row.reward_first_step)} → ${fixed(row.reward_last_step)}`,
          row.zero_advantage_group_share == null ? '–' : `${(row.zero_advantage_group_share * 100).toFixed(0)} %`,
        ]
      : []),
    `${fixed(row.em)} [${fixed(row.em_ci95[0])}, ${fixed(row.em_ci95[1])}]`,
    ...(rl ? [difference(row.em_vs_start, row.em_vs_start_ci95)] : []),
    row.mode === 'full' ? 'reference' : difference(row.em_vs_full, row.em_vs_full_ci95),
    `<code>${escapeHtml(row.evaluation)}</code>`,
  ]);
  const start = transfer.start
    ? ` The start version v${transfer.start.version}, untrained: EM ${fixed(transfer.start.em)} [${fixed(transfer.start.em_ci95[0])}, ${fixed(transfer.start.em_ci95[1])}] (<code>${escapeHtml(transfer.start.evaluation)}</code>); each mode's gain over it is paired by question too.`
    : '';
  return `<h2 id="transfer">Transfer by freezing${rl ? ': RL' : ''}</h2>
<p class="muted">From v${transfer.start_version}: ${transfer.train_questions} training questions, the same ${rl ? 'RL' : 'warm-start'} budget for every mode (${escapeHtml(transferBudgetText(transfer))}); held-out: ${transfer.heldout_questions} questions of ${escapeHtml(transfer.heldout_dataset)} × ${transfer.k}. The difference against full fine-tuning is paired by question, with a 95 % bootstrap interval.${start}</p>
${table(
  [
    'mode',
    'trained',
    'versions',
    'trainable parameters',
    's / optimizer step',
    rl ? 'trainStep seconds' : 'sftStep seconds',
    'engine peak RSS',
    ...(rl ? ['rollout reward, first → last step', 'zero-advantage groups'] : []),
    `EM Avg@${transfer.k} [95 % CI]`,
    ...(rl ? ['EM − start [95 % CI]'] : []),
    'EM − full [95 % CI]',
    'evaluation',
  ],
  rows,
)}`;
}

function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return '<p class="empty">none</p>';
  return `<table><thead><tr>${headers.map((header) => `<th>${escapeHtml(header)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((row) => `<tr>${row.map((cell) => `<td>${cell}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

const style = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d2330; background: #ffffff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
.muted, .empty { color: #667085; }
.gain { color: #067647; } .loss { color: #b42318; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 14px 0; }
.card { border: 1px solid #d0d5dd; border-radius: 6px; padding: 8px 12px; min-width: 120px; }
.card b { display: block; font-size: 18px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(600px, 1fr)); gap: 18px; }
figure { margin: 0; border: 1px solid #eaecf0; border-radius: 6px; padding: 10px; }
figcaption { font-weight: 600; } figure p { margin: 2px 0 8px; color: #667085; font-size: 12px; }
.chart { min-height: ${height + 40}px; background: #ffffff; }
table { border-collapse: collapse; font-size: 13px; } th, td { border-bottom: 1px solid #eaecf0; padding: 4px 8px; text-align: left; vertical-align: top; }
#report-errors:empty { display: none; } #report-errors { color: #b42318; border: 1px solid #b42318; padding: 8px; }
.notes li { color: #667085; }
`;

/** The page script: embeds each chart, then records outcomes and boxes in the DOM. */
const pageScript = `
(function () {
  var errors = document.getElementById('report-errors');
  function fail(where, message) {
    var item = document.createElement('div');
    item.className = 'report-error';
    item.textContent = where + ': ' + message;
    errors.appendChild(item);
  }
  window.addEventListener('error', function (event) { fail('page', event.message); });
  var consoleError = console.error;
  console.error = function () {
    fail('console', Array.prototype.map.call(arguments, String).join(' '));
    return consoleError.apply(console, arguments);
  };
  var specs = JSON.parse(document.getElementById('chart-specs').textContent);
  var pending = Object.keys(specs).map(function (id) {
    var element = document.getElementById(id);
    if (typeof vegaEmbed !== 'function') { fail(id, 'the chart runtime (vega-embed) is missing'); return Promise.resolve(); }
    return vegaEmbed(element, specs[id], { actions: false, renderer: 'svg' })
      .then(function (result) { return result.view.runAsync(); })
      .then(function () { element.setAttribute('data-rendered', 'true'); })
      .catch(function (error) { fail(id, error && error.message ? error.message : String(error)); });
  });
  Promise.all(pending).then(function () {
    Object.keys(specs).forEach(function (id) {
      var box = document.getElementById(id).getBoundingClientRect();
      document.getElementById(id).setAttribute('data-box', [box.left + window.scrollX, box.top + window.scrollY, box.width, box.height].map(Math.round).join(','));
    });
    document.body.setAttribute('data-page-height', String(Math.ceil(document.documentElement.scrollHeight)));
    document.body.setAttribute('data-charts-done', 'true');
  });
})();
`;

export function renderReport(model: ReportModel, runtime: ChartRuntime): string {
  const charts = reportCharts(model);
  const specs = Object.fromEntries(charts.map((chart) => [chart.id, chart.spec]));
  const summary = model.summary;
  const cards: [string, string][] = [
    ['training trajectories', String(summary.trainingTrajectories)],
    ['held-out trajectories', String(summary.heldOutTrajectories)],
    ['training steps', String(summary.steps)],
    ['final version', summary.finalVersion === null ? '–' : `v${summary.finalVersion}`],
    ['samples / hour', summary.samplesPerHour === null ? '–' : summary.samplesPerHour.toFixed(0)],
    ['trainer busy', percent(summary.trainerBusy)],
    ['max staleness', summary.maxStaleness === null ? '–' : String(summary.maxStaleness)],
    ['wall time', summary.wallSeconds === null ? '–' : `${Math.round(summary.wallSeconds)} s`],
  ];
  const benchmarks = table(
    ['dataset', 'version', 'k', 'questions', 'EM Avg@k [95 % CI]', 'F1 (ASearcher) Avg@k', 'Pass@k EM', 'turns', 'tool calls', 'result'],
    model.benchmarks.map((result) => [
      escapeHtml(result.dataset),
      `v${result.policyVersion}`,
      String(result.k),
      String(result.questions),
      `${fixed(result.avgAtK.em)} [${fixed(result.avgAtKCi95.em?.[0])}, ${fixed(result.avgAtKCi95.em?.[1])}]`,
      fixed(result.avgAtK.f1_asearcher),
      fixed(result.passAtK.em),
      fixed(result.meanTurns, 1),
      fixed(result.meanToolCalls, 1),
      `<code>${escapeHtml(result.resultId)}</code>`,
    ]),
  );
  const behaviour = table(
    [
      'version',
      'trajectories',
      'answered',
      'verified by a further search',
      'distinct documents',
      'uncertainty',
      'conflicting evidence',
      'tool calls / trajectory',
      'tool calls / question',
      'mean reward',
      'gold seen',
      'gold stated',
      'stated but missed',
    ],
    model.behaviour.map((row) => [
      `v${row.version}`,
      String(row.trajectories),
      String(row.answered),
      percent(row.verifiedShare),
      fixed(row.meanDistinctDocuments, 1),
      percent(row.uncertaintyShare),
      percent(row.conflictShare),
      fixed(row.meanToolCalls, 2),
      fixed(row.meanToolCallsPerQuestion, 2),
      fixed(row.meanReward),
      percent(row.goldSeenShare),
      percent(row.goldStatedShare),
      percent(row.statedButMissedShare),
    ]),
  );
  const stageRows = model.demoStages ?? [];
  const referenceNames = [...new Set(stageRows.flatMap((row) => row.references.map((set) => set.dataset)))];
  const demoStages = stageRows.length
    ? table(
        [
          'stage',
          'version',
          'held-out EM Avg@k [95 % CI]',
          'questions × k',
          'tool calls / question',
          'tool calls per sample (count: samples)',
          'verified by a further search',
          'distinct documents',
          'gold seen / stated / stated but missed',
          ...referenceNames.map((name) => `${name} EM [95 % CI]`),
        ],
        stageRows.map((row) => [
          escapeHtml(row.stage),
          `v${row.version}`,
          `${fixed(row.em)} [${fixed(row.emCi95[0])}, ${fixed(row.emCi95[1])}]`,
          `${row.questions} × ${row.k}`,
          fixed(row.meanToolCalls, 2),
          escapeHtml(
            Object.entries(row.toolCallsDistribution)
              .sort(([a], [b]) => Number(a) - Number(b))
              .map(([calls, samples]) => `${calls}: ${samples}`)
              .join(' · ') || '–',
          ),
          percent(row.behaviour?.verifiedShare ?? null),
          row.behaviour ? fixed(row.behaviour.meanDistinctDocuments, 2) : '–',
          goldCell(row.behaviour),
          ...referenceNames.map((name) => {
            const set = row.references.find((entry) => entry.dataset === name);
            return set ? `${fixed(set.em)} [${fixed(set.emCi95[0])}, ${fixed(set.emCi95[1])}]` : '–';
          }),
        ]),
      ) +
      table(
        ['paired difference (per held-out question)', 'questions', 'mean EM gain', '95 % CI (bootstrap over questions)'],
        (model.demoGains ?? []).map((gain) => [
          escapeHtml(gain.label),
          String(gain.n),
          fixed(gain.mean),
          `[${fixed(gain.ci95[0])}, ${fixed(gain.ci95[1])}]`,
        ]),
      )
    : '';
  const signalRows = model.rlSignal ?? [];
  const share = (part: number, whole: number) => (whole ? `${part} (${percent(part / whole)})` : String(part));
  const signal = signalRows.length
    ? table(
        [
          'question set',
          'hops',
          'gold path turns',
          'groups',
          'samples',
          'right (EM)',
          'groups mixing right and wrong',
          'groups with equal rewards',
        ],
        signalRows.map((row) => [
          escapeHtml(row.source),
          row.hops === null ? '–' : String(row.hops),
          row.goldTurns === null ? '–' : String(row.goldTurns),
          String(row.groups),
          String(row.samples),
          share(row.right, row.samples),
          share(row.mixed, row.groups),
          share(row.equalReward, row.groups),
        ]),
      )
    : '';
  const advantageRows = model.rlAdvantage ?? [];
  const advantage = advantageRows.length
    ? table(
        ['outcome', 'samples', 'mean reward', 'sum of advantages', 'mean advantage'],
        advantageRows.map((row) => [
          escapeHtml(row.outcome),
          String(row.samples),
          fixed(row.meanReward),
          `<span class="${row.advantage > advantageTolerance ? 'gain' : row.advantage < -advantageTolerance ? 'loss' : 'muted'}">${row.advantage.toFixed(2)}</span>`,
          (row.advantage / row.samples).toFixed(2),
        ]),
      )
    : '';
  const dataset = model.dataset
    ? table(
        ['key', 'questions', 'mean question length', 'answers per question', 'with a gold path', 'other fields'],
        [
          [
            `<code>${escapeHtml(model.dataset.key)}</code>`,
            String(model.dataset.questions),
            `${model.dataset.meanQuestionChars.toFixed(0)} characters`,
            model.dataset.meanAnswersPerQuestion.toFixed(2),
            String(model.dataset.withGoldTurns),
            escapeHtml(
              Object.entries(model.dataset.extraFields)
                .map(([field, rows]) => `${field} (${rows})`)
                .join(', ') || '–',
            ),
          ],
        ],
      )
    : '<p class="empty">no training dataset found for this run</p>';
  const trajectories = table(
    ['trajectory', 'group', 'version', 'question', 'answer', 'reward', 'turns', 'tool calls', 'stop'],
    model.trajectories.map((row) => [
      row.page ? `<a href="${escapeHtml(row.page)}">${escapeHtml(row.trajectoryId)}</a>` : escapeHtml(row.trajectoryId),
      escapeHtml(row.group),
      `v${row.version}`,
      escapeHtml(row.question.length > 120 ? `${row.question.slice(0, 117)}…` : row.question),
      row.answer === null ? '<span class="muted">none</span>' : escapeHtml(row.answer),
      fixed(row.reward),
      String(row.turns),
      row.toolCalls === null ? '–' : String(row.toolCalls),
      escapeHtml(row.stopReason),
    ]),
  );
  const tools = model.toolUse.map((use) => `${escapeHtml(use.tool)} ${use.calls}`).join(' · ');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Longhaul report ${escapeHtml(model.runId)}</title>
<style>${style}</style>
<script>${inlineScript(runtime.vega)}</script>
<script>${inlineScript(runtime.vegaLite)}</script>
<script>${inlineScript(runtime.vegaEmbed)}</script>
</head>
<body>
<h1>Longhaul report: ${escapeHtml(model.runId)}</h1>
<p class="muted">generated ${escapeHtml(model.generatedAt)} by <code>longhaul report --run ${escapeHtml(model.runId)}</code></p>
<div id="report-errors"></div>
<div class="cards">${cards.map(([label, value]) => `<div class="card"><b>${escapeHtml(value)}</b>${escapeHtml(label)}</div>`).join('')}</div>
${model.notes.length ? `<ul class="notes">${model.notes.map((note) => `<li>${escapeHtml(note)}</li>`).join('')}</ul>` : ''}
<h2>Charts</h2>
<div class="charts">
${charts
  .map(
    (chart) =>
      `<figure><figcaption>${escapeHtml(chart.title)}</figcaption><p>${escapeHtml(chart.description)}</p><div class="chart" id="${chart.id}"></div></figure>`,
  )
  .join('\n')}
</div>
${charts.length === 0 ? '<p class="empty">no data to chart for this run</p>' : ''}
${demoStages ? `<h2>Demo stages: held-out accuracy and behaviour per version</h2>\n<p class="muted">Each stage evaluated the synthesized held-out set with the evaluation workflow; the gain is paired per question (longhaul demo).</p>\n${demoStages}` : ''}
${signal ? `<h2>Where the RL signal came from</h2>\n<p class="muted">${escapeHtml(signalSummary(signalRows) ?? '')}. A group is the samples drawn for one question; equal rewards give it zero advantage, so it teaches nothing, and right answers beside wrong ones are the contrast RL learns from (cli/report/rl-signal.ts).</p>\n${signal}` : ''}
${advantage ? `<h2>Where the advantage went</h2>\n<p class="muted">${escapeHtml(advantageSummary(advantageRows) ?? '')}. Each training sample's group-normalised advantage as the run's train steps computed it ((reward − group mean) / (group std + 1e-6); reward − group mean with ppo.groupScale none), summed by what the sample ended as: the update raises the likelihood of outcomes with a positive sum and lowers the others. Wrong or missing answers with a positive sum mean the reward pays for something other than the answer.</p>\n${advantage}` : ''}
${transferSection(model)}
<h2>Benchmarks (evaluation results)</h2>
${benchmarks}
<h2>Behaviour across versions</h2>
<p class="muted">Definitions: activities/analysis/behaviour.ts. Tool use: ${tools || 'none'}.</p>
${behaviour}
<h2>Training dataset</h2>
${dataset}
<h2>Trajectories</h2>
<p class="muted">Each links to its page (turns, tool calls, observations); <code>longhaul show &lt;id&gt;</code> prints the same in a terminal.</p>
${trajectories}
<script type="application/json" id="chart-specs">${JSON.stringify(specs).replace(/</g, '\\u003c')}</script>
<script>${pageScript}</script>
</body>
</html>
`;
}
