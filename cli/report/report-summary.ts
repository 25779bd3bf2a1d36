/** The report's terminal summary: a few lines that say what the HTML file shows. Pure. */
import type { IntervalPoint, ReportModel } from './report-model.js';
import { goldMeasures, type VersionBehaviour } from '../../activities/analysis/behaviour.js';
import { transferStageOf } from '../../bench/transfer-benchmark.js';
import { advantageSummary, signalSummary } from './rl-signal.js';

const wholePercent = (value: number) => `${(value * 100).toFixed(0)} %`;

/** " · gold seen …, stated …, stated but missed …" when measured, else nothing. */
function goldSummary(row: VersionBehaviour): string {
  const gold = goldMeasures(row);
  return gold
    ? ` · gold seen ${wholePercent(gold.seen)}, stated ${wholePercent(gold.stated)}, stated but missed ${wholePercent(gold.statedButMissed)}`
    : '';
}

const interval = (point: IntervalPoint) =>
  `${point.mean.toFixed(3)}${point.low !== null && point.high !== null ? ` [${point.low.toFixed(3)}, ${point.high.toFixed(3)}]` : ''}`;

export function formatReportSummary(model: ReportModel): string {
  const { summary } = model;
  const lines = [
    `Longhaul report ${model.runId}`,
    `trajectories: ${summary.trainingTrajectories} training, ${summary.heldOutTrajectories} held-out · steps ${summary.steps}${summary.finalVersion === null ? '' : ` · final version v${summary.finalVersion}`}`,
  ];
  // One line per series: a transfer run's modes are lineages of their own, not one line through their versions.
  const seriesLine = (points: ReportModel['heldOut'], name: string) =>
    points
      .filter((point) => point.series === name)
      .map((point) => `v${point.version} ${interval(point)}`)
      .join(' → ');
  const rewardSeries = [...new Set(model.trainingReward.map((point) => point.series))];
  for (const name of rewardSeries)
    lines.push(
      `${rewardSeries.length > 1 ? name : 'training reward'} per version (mean [95 % CI]): ${seriesLine(model.trainingReward, name)}`,
    );
  for (const name of [...new Set(model.heldOut.map((point) => point.series))])
    lines.push(`held-out ${name}: ${seriesLine(model.heldOut, name)}`);
  const rates = [
    summary.maxStaleness === null ? null : `max staleness ${summary.maxStaleness}`,
    summary.trainerBusy === null ? null : `trainer busy ${(summary.trainerBusy * 100).toFixed(0)} %`,
    summary.samplesPerHour === null ? null : `${summary.samplesPerHour.toFixed(0)} samples/h`,
  ].filter((part) => part !== null);
  if (rates.length) lines.push(rates.join(' · '));
  for (const row of model.behaviour)
    lines.push(
      `behaviour v${row.version} (${row.trajectories}): verified ${row.verifiedShare === null ? '–' : `${(row.verifiedShare * 100).toFixed(0)} %`} · documents ${row.meanDistinctDocuments.toFixed(1)} · uncertainty ${(row.uncertaintyShare * 100).toFixed(0)} % · conflict ${(row.conflictShare * 100).toFixed(0)} % · tool calls/question ${row.meanToolCallsPerQuestion.toFixed(2)}${goldSummary(row)}`,
    );
  if (model.transfer) {
    const { start } = model.transfer;
    const gain = (row: { em_vs_start?: number }) =>
      row.em_vs_start === undefined ? '' : ` (${row.em_vs_start >= 0 ? '+' : ''}${row.em_vs_start.toFixed(3)} over the start)`;
    lines.push(
      `transfer${transferStageOf(model.transfer) === 'rl' ? ', RL' : ''} (EM Avg@${model.transfer.k} on ${model.transfer.heldout_questions} held-out questions): ${[
        ...(start
          ? [`start v${start.version} ${start.em.toFixed(3)} [${start.em_ci95[0].toFixed(3)}, ${start.em_ci95[1].toFixed(3)}]`]
          : []),
        ...model.transfer.modes.map(
          (row) => `${row.mode} ${row.em.toFixed(3)} [${row.em_ci95[0].toFixed(3)}, ${row.em_ci95[1].toFixed(3)}]${gain(row)}`,
        ),
      ].join(' · ')}`,
    );
  }
  const signal = signalSummary(model.rlSignal ?? []);
  if (signal) lines.push(signal);
  const advantage = advantageSummary(model.rlAdvantage ?? []);
  if (advantage) lines.push(advantage);
  if (model.benchmarks.length) lines.push(`evaluation results: ${model.benchmarks.length} (table in the report)`);
  if (model.dataset)
    lines.push(`training set ${model.dataset.key}: ${model.dataset.questions} questions, ${model.dataset.withGoldTurns} with a gold path`);
  for (const note of model.notes) lines.push(`note: ${note}`);
  return lines.join('\n');
}
