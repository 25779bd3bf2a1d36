/**
 * Gathers a run's ReportModel from where each fact lives: the learner workflow (its result, or its
 * `state` query while it runs) for step statistics, the demo's JSON report when the learner is gone,
 * Postgres for trajectories, consumed batches and evaluation results, and the blob store for the
 * trajectory records, their observations and the training set. Everything computed here is counted
 * from those; what is missing becomes a note, never a zero.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { analyseTrajectory, behaviourByVersion, type TrajectoryBehaviour } from '../../activities/analysis/behaviour.js';
import { meanWithInterval } from '../../activities/analysis/interval.js';
import { loadTrajectoryView, type TrajectoryView } from '../../activities/analysis/trajectory-view.js';
import { evaluationSummarySchema, type EvaluationSummary } from '../../activities/ports/evaluation-result.schema.js';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import type { BenchmarkResultStore } from '../../activities/ports/benchmark-result-store.port.js';
import { readTransferResult, transferBenchmarkName, type TransferResult } from '../../bench/transfer-benchmark.js';
import { evaluationRunId } from '../../workflows/contracts/evaluation.contract.js';
import { groupScales, type GroupScale } from '../../workflows/contracts/trajectory.contract.js';
import { manifestPath } from '../demo/manifest.js';
import { advantageByOutcome, questionOrigins, rlSignal, type QuestionOrigin } from './rl-signal.js';
import type { ReportSource, ReportTrajectoryRow } from '../../infra/postgres/report-source.pg.js';
import {
  learnerStateQuery,
  shownSyncPhases,
  type LearnerResult,
  type LearnerState,
  type StepStats,
} from '../../workflows/contracts/learner.contract.js';
import type {
  CountPoint,
  DatasetStatistics,
  DemoStageRow,
  IntervalPoint,
  ReportModel,
  StepPhase,
  StepPoint,
  ThroughputPoint,
  TrajectoryRow,
} from './report-model.js';

export interface ReportSources {
  readonly source: ReportSource;
  readonly blobs: BlobStore;
  /** null: Temporal is not reachable; the demo report's copy of the step statistics is used. */
  readonly client: Client | null;
  /** LONGHAUL_HOME: the demo's JSON reports are in <home>/reports. */
  readonly home: string;
  /** Stored benchmark results: a transfer benchmark's row has the run's id. */
  readonly benchmarks?: BenchmarkResultStore;
}

export interface GatherOptions {
  readonly runId: string;
  /** Trajectories read at most (rows and records). @default 2000 */
  readonly maxTrajectories?: number;
  readonly onProgress?: (done: number, total: number) => void;
}

export interface GatheredReport {
  readonly model: ReportModel;
  /** The trajectories whose records were read, with their behaviour, for the per-trajectory pages. */
  readonly views: readonly { view: TrajectoryView; behaviour: TrajectoryBehaviour }[];
}

/**
 * The demo's held-out evaluations (result ids `<run>-eval-<stage>`): their trajectories are named
 * `eval-<run>-eval-<stage>-q<i>-s<j>` (evaluationTrajectoryId), and `<run>-eval-<stage>-…` in demos before it.
 */
export const demoEvaluationPrefixes = (runId: string) => [`${runId}-eval-`, evaluationRunId(`${runId}-eval-`)];

interface LearnerFacts {
  readonly history: readonly StepStats[];
  readonly startedAtMs: number | null;
  readonly samplesPerHour: number | null;
  readonly trainerBusy: number | null;
  readonly maxStaleness: number | null;
  readonly wallSeconds: number | null;
  readonly finalVersion: number | null;
}

interface DemoStageRecord {
  readonly stage: string;
  readonly version: number;
  readonly heldOut: DemoEvaluationRecord;
  readonly references?: readonly DemoEvaluationRecord[];
}

interface DemoEvaluationRecord {
  /** Absent in reports written before it was kept. */
  readonly resultId?: string;
  readonly dataset: string;
  readonly questions: number;
  readonly k: number;
  readonly em: number;
  readonly emCi95: readonly [number, number];
  readonly meanToolCalls: number;
  readonly toolCallsDistribution?: Readonly<Record<string, number>>;
  readonly behaviour?: DemoStageRow['behaviour'];
}

interface DemoGainRecord {
  readonly n: number;
  readonly mean: number;
  readonly ci95: readonly [number, number];
}

interface DemoReportFile {
  learning?: Partial<LearnerResult>;
  /** The blobs the split wrote (or, with --rl-from, the run's it took over). */
  split?: { keys?: { warmStart?: string; candidates?: string } };
  seconds?: number;
  stages?: readonly DemoStageRecord[];
  rlGain?: DemoGainRecord;
  warmGain?: DemoGainRecord | null;
  /** An --rl-continue run: the run whose RL it continued, and its gain over that RL's policy. */
  continued?: { run?: string; version?: number };
  continuedGain?: DemoGainRecord;
  /** --validation: the versions evaluated on the validation questions, the one kept, and its held-out gain. */
  validation?: { questions?: number; versions?: readonly { version: number; em: number }[]; best?: number };
  bestGain?: DemoGainRecord;
}

/** The demo's JSON report (cli/commands/demo.command.ts), read loosely: `learning`, `seconds`, and its stages and gains. */
function demoReport(home: string, runId: string): DemoReportFile | null {
  const file = path.join(home, 'reports', `${runId}.json`);
  if (!fs.existsSync(file)) return null;
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as DemoReportFile;
  } catch {
    return null;
  }
}

/**
 * How the run's train steps scaled a group's centred rewards (`ppo.groupScale`), for "Where the advantage went": the
 * demo's stored plan says; a run that is no demo (or a plan without it) trained with the default, std.
 */
function runGroupScale(home: string, runId: string): GroupScale {
  try {
    const manifest = JSON.parse(fs.readFileSync(manifestPath(home, runId), 'utf8')) as {
      plan?: { rl?: { hyperparameters?: { ppo?: { groupScale?: unknown } } } };
    };
    const scale = manifest.plan?.rl?.hyperparameters?.ppo?.groupScale;
    return (groupScales as readonly unknown[]).includes(scale) ? (scale as GroupScale) : 'std';
  } catch {
    return 'std';
  }
}

/** The demo's stages and paired gains, as the report shows them; undefined for a run that is no demo. */
function demoStages(home: string, runId: string): Pick<ReportModel, 'demoStages' | 'demoGains'> {
  const demo = demoReport(home, runId);
  if (!demo?.stages?.length) return {};
  const stages: DemoStageRow[] = demo.stages.map((stage) => ({
    stage: stage.stage,
    version: stage.version,
    questions: stage.heldOut.questions,
    k: stage.heldOut.k,
    em: stage.heldOut.em,
    emCi95: stage.heldOut.emCi95,
    meanToolCalls: stage.heldOut.meanToolCalls,
    toolCallsDistribution: stage.heldOut.toolCallsDistribution ?? {},
    behaviour: stage.heldOut.behaviour ?? null,
    references: (stage.references ?? []).map((set) => ({ dataset: set.dataset, em: set.em, emCi95: set.emCi95 })),
  }));
  const gains = [
    ...(demo.warmGain ? [{ label: 'warm start − base', ...demo.warmGain }] : []),
    ...(demo.rlGain ? [{ label: `RL − ${demo.warmGain ? 'warm start' : 'base'}`, ...demo.rlGain }] : []),
    ...(demo.continuedGain
      ? [
          {
            label: `RL − RL start (${demo.continued?.run ?? 'the run continued'}, v${demo.continued?.version ?? '?'})`,
            ...demo.continuedGain,
          },
        ]
      : []),
    ...(demo.bestGain
      ? [
          {
            label: `RL best by validation (v${demo.validation?.best ?? '?'}, of ${(demo.validation?.versions ?? []).map((row) => `v${row.version} ${(row.em * 100).toFixed(1)}`).join(', ')} on ${demo.validation?.questions ?? '?'} validation questions) − ${demo.warmGain ? 'warm start' : 'base'}`,
            ...demo.bestGain,
          },
        ]
      : []),
  ];
  return { demoStages: stages, demoGains: gains };
}

async function learnerFacts(client: Client | null, home: string, runId: string, notes: string[]): Promise<LearnerFacts | null> {
  if (client) {
    const handle = client.workflow.getHandle(`learner-${runId}`);
    try {
      const description = await handle.describe();
      const startedAtMs = description.startTime.getTime();
      if (description.status.name === 'COMPLETED') {
        const result = (await handle.result()) as LearnerResult;
        return {
          history: result.history,
          startedAtMs,
          samplesPerHour: result.samplesPerHour,
          trainerBusy: result.trainerBusy,
          maxStaleness: result.maxStaleness,
          wallSeconds: result.wallSeconds,
          finalVersion: result.finalVersion,
        };
      }
      // A running learner answers its state query; so does one that ended otherwise (terminated by Ctrl-C, failed,
      // timed out): a worker replays its history, so an interrupted run still shows the steps it made.
      const running = description.status.name === 'RUNNING';
      const state = (await handle.query(learnerStateQuery).catch((error: Error) => {
        notes.push(
          `the learner workflow learner-${runId} ended ${description.status.name.toLowerCase()}; its state could not be read (${error.message})`,
        );
        return null;
      })) as LearnerState | null;
      if (state) {
        const ended = description.closeTime ? description.closeTime.getTime() : Date.now();
        notes.push(
          running
            ? `the learner is still running (step ${state.step}, v${state.version}): statistics so far`
            : `the learner workflow learner-${runId} ended ${description.status.name.toLowerCase()} after ${state.history.length} steps (v${state.version}): its statistics up to then`,
        );
        return {
          history: state.history,
          startedAtMs,
          samplesPerHour: null,
          trainerBusy: state.trainerBusy,
          maxStaleness: state.history.length ? Math.max(...state.history.map((step) => step.maxStaleness)) : null,
          wallSeconds: (ended - startedAtMs) / 1000,
          finalVersion: state.version,
        };
      }
    } catch (error) {
      if ((error as Error).name !== 'WorkflowNotFoundError') notes.push(`learner-${runId}: ${(error as Error).message}`);
    }
  }
  const demo = demoReport(home, runId);
  const learning = demo?.learning;
  if (learning?.history)
    return {
      history: learning.history,
      startedAtMs: null,
      samplesPerHour: learning.samplesPerHour ?? null,
      trainerBusy: learning.trainerBusy ?? null,
      maxStaleness: learning.maxStaleness ?? null,
      wallSeconds: null,
      finalVersion: learning.history.at(-1)?.version ?? null,
    };
  return null;
}

/**
 * The held-out trajectories no stored evaluation result covers. An evaluation's samples are named
 * `eval-<result>-q<i>-s<j>` (older ones `<result>-q<i>-s<j>`), and its result row already draws them with
 * the bootstrap interval: drawing them again from the rows put every demo stage on the chart twice. (A
 * transfer benchmark keeps its rows: they are what names each mode's lineage on the chart.)
 */
export function notSummarised<Row extends { readonly trajectoryId: string }>(
  rows: readonly Row[],
  evaluations: readonly Pick<EvaluationSummary, 'resultId'>[],
): Row[] {
  const prefixes = evaluations.flatMap((result) => [`${evaluationRunId(result.resultId)}-q`, `${result.resultId}-q`]);
  return rows.filter((row) => !prefixes.some((prefix) => row.trajectoryId.startsWith(prefix)));
}

/** busy fraction of each step: its train seconds over the wall time since the previous step ended. */
export function stepPoints(history: readonly StepStats[], startedAtMs: number | null): StepPoint[] {
  return history.map((stats, index) => {
    const since = index > 0 ? history[index - 1]!.finishedAtMs : startedAtMs;
    const wall = since === null ? 0 : stats.finishedAtMs - since;
    return {
      step: stats.step,
      version: stats.version,
      meanReward: stats.meanReward,
      maxStaleness: stats.maxStaleness,
      trainSeconds: stats.trainSeconds,
      syncSeconds: stats.syncSeconds ?? null,
      finishedAtMs: stats.finishedAtMs,
      busyFraction: wall > 0 ? Math.min(1, (stats.trainSeconds * 1000) / wall) : null,
      phases: stepPhases(stats),
    };
  });
}

/**
 * A step's time by phase: staging the base, the engine's proximal pass, update and save (with the ONNX
 * export), the rest of the engine process (start, model load), the upload and registration (the rest of
 * the train step) and the serving side's sync. Phases a step did not report are left out.
 */
export function stepPhases(stats: StepStats): StepPhase[] {
  const phases = stats.trainPhases;
  if (!phases) return [];
  const inner = (phases.proximalSeconds ?? 0) + (phases.updateSeconds ?? 0) + (phases.saveSeconds ?? 0);
  const entries: [string, number | undefined][] = [
    ['stage base', phases.stageSeconds],
    ['proximal', phases.proximalSeconds],
    ['update', phases.updateSeconds],
    ['save and export', phases.saveSeconds],
    ['engine start and load', phases.engineSeconds === undefined ? undefined : phases.engineSeconds - inner],
    [
      'upload and register',
      phases.engineSeconds === undefined ? undefined : stats.trainSeconds - (phases.stageSeconds ?? 0) - phases.engineSeconds,
    ],
    ...syncEntries(stats),
  ];
  return entries
    .filter((entry): entry is [string, number] => entry[1] !== undefined && Number.isFinite(entry[1]))
    .map(([phase, seconds]) => ({ phase, seconds: Math.max(0, seconds) }));
}

/** The sync as one phase, or by the phases it reported ("sync: files", "sync: open", …) with any rest as "sync: other". */
function syncEntries(stats: StepStats): [string, number | undefined][] {
  const parts = shownSyncPhases(stats.syncPhases);
  if (stats.syncSeconds === undefined || parts.length === 0) return [['sync', stats.syncSeconds]];
  const rest = stats.syncSeconds - parts.reduce((sum, [, seconds]) => sum + seconds, 0);
  return [
    ...parts.map(([name, seconds]): [string, number] => [`sync: ${name}`, seconds]),
    ...(rest >= 0.05 ? [['sync: other', rest] as [string, number]] : []),
  ];
}

function counts(values: readonly number[], group: string): CountPoint[] {
  const tally = new Map<number, number>();
  for (const value of values) tally.set(value, (tally.get(value) ?? 0) + 1);
  return [...tally.entries()].sort(([a], [b]) => a - b).map(([value, count]) => ({ value, group, count }));
}

/** Finished trajectories per hour in up to 20 equal buckets (at least one minute each) over their span. */
export function throughput(finishedAt: readonly Date[]): ThroughputPoint[] {
  if (finishedAt.length < 2) return [];
  const times = finishedAt.map((date) => date.getTime()).sort((a, b) => a - b);
  const first = times[0]!;
  const span = times.at(-1)! - first;
  const bucketMs = Math.max(60_000, Math.ceil(span / 20));
  const buckets = Math.floor(span / bucketMs) + 1;
  const tally = new Array<number>(buckets).fill(0);
  for (const time of times) tally[Math.floor((time - first) / bucketMs)]! += 1;
  // The last bucket is usually partial: its rate is over the part that elapsed (at least a second).
  return tally.map((count, index) => {
    const width = index === buckets - 1 ? Math.max(1000, span - index * bucketMs) : bucketMs;
    return { at: new Date(first + index * bucketMs).toISOString(), samplesPerHour: (count * 3_600_000) / width };
  });
}

/** Mean and 95 % bootstrap interval per series and version, in series order of first appearance, then by version. */
function seriesIntervalPoints(rows: readonly { version: number; value: number; series: string }[]): IntervalPoint[] {
  const bySeries = new Map<string, Map<number, number[]>>();
  for (const row of rows) {
    const byVersion = bySeries.get(row.series) ?? new Map<number, number[]>();
    byVersion.set(row.version, [...(byVersion.get(row.version) ?? []), row.value]);
    bySeries.set(row.series, byVersion);
  }
  return [...bySeries.entries()].flatMap(([series, byVersion]) =>
    [...byVersion.entries()]
      .sort(([a], [b]) => a - b)
      .map(([version, values]) => {
        const interval = meanWithInterval(values, { seed: version + 1 });
        return { version, series, n: interval.n, mean: interval.mean, low: interval.low, high: interval.high };
      }),
  );
}

/** Statistics of a JSONL question set (id, question, answers, optional goldTurns and other fields). */
export function datasetStatistics(key: string, text: string): DatasetStatistics {
  const rows = text
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const extra: Record<string, number> = {};
  for (const row of rows)
    for (const field of Object.keys(row))
      if (!['id', 'question', 'answers', 'goldTurns'].includes(field)) extra[field] = (extra[field] ?? 0) + 1;
  const gold = rows.filter((row) => Array.isArray(row.goldTurns)).map((row) => (row.goldTurns as unknown[]).length);
  const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0);
  return {
    key,
    questions: rows.length,
    meanQuestionChars: mean(rows.map((row) => String(row.question ?? '').length)),
    meanAnswersPerQuestion: mean(rows.map((row) => (Array.isArray(row.answers) ? row.answers.length : 0))),
    withGoldTurns: gold.length,
    goldTurns: counts(gold, 'questions'),
    extraFields: extra,
  };
}

async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
  onDone?: (done: number) => void,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index]!);
        onDone?.(++done);
      }
    }),
  );
  return results;
}

/** The run's transfer benchmark result, if the run is one (a row of benchmark "transfer" with its id). */
async function transferOf(store: BenchmarkResultStore | undefined, runId: string, notes: string[]): Promise<TransferResult | null> {
  const record = store ? await store.get(runId) : undefined;
  if (!record || record.benchmark !== transferBenchmarkName) return null;
  const result = readTransferResult(record.result);
  if (!result) notes.push(`benchmark result ${runId} is not a transfer result of the expected shape: left out`);
  return result;
}

/**
 * A transfer benchmark's RL learners (`learner-<run>-<mode>`), each mode's steps labelled with the mode, and the
 * header's facts over all of them: steps and samples summed, trainer busy weighted by each learner's wall time.
 */
async function transferLearners(
  sources: ReportSources,
  runId: string,
  transfer: TransferResult,
  notes: string[],
): Promise<{ steps: StepPoint[]; facts: LearnerFacts } | null> {
  if (transfer.stage !== 'rl') return null;
  const modes = await Promise.all(
    transfer.modes.map(async ({ mode }) => ({ mode, facts: await learnerFacts(sources.client, sources.home, `${runId}-${mode}`, notes) })),
  );
  const found = modes.flatMap(({ mode, facts }) => (facts ? [{ mode, facts }] : []));
  if (!found.length) return null;
  const steps = found.flatMap(({ mode, facts }) => stepPoints(facts.history, facts.startedAtMs).map((step) => ({ ...step, series: mode })));
  const sum = (values: readonly (number | null)[]) => (values.every((value) => value !== null) ? values.reduce((a, b) => a + b!, 0) : null);
  const wall = sum(found.map(({ facts }) => facts.wallSeconds));
  const busy = sum(
    found.map(({ facts }) => (facts.trainerBusy === null || facts.wallSeconds === null ? null : facts.trainerBusy * facts.wallSeconds)),
  );
  const samples = sum(
    found.map(({ facts }) =>
      facts.samplesPerHour === null || facts.wallSeconds === null ? null : (facts.samplesPerHour * facts.wallSeconds) / 3600,
    ),
  );
  const staleness = found.map(({ facts }) => facts.maxStaleness).filter((value) => value !== null);
  const finals = found.map(({ facts }) => facts.finalVersion).filter((value) => value !== null);
  return {
    steps,
    facts: {
      history: found.flatMap(({ facts }) => facts.history),
      startedAtMs: null,
      samplesPerHour: samples !== null && wall ? (samples * 3600) / wall : null,
      trainerBusy: busy !== null && wall ? busy / wall : null,
      maxStaleness: staleness.length ? Math.max(...staleness) : null,
      wallSeconds: wall,
      finalVersion: finals.length ? Math.max(...finals) : null,
    },
  };
}

/**
 * A transfer run's lineages: the start and each mode, named `<run>-<name>` like the mode's own run and the
 * evaluation of each. A trajectory belongs to one by its run, by its evaluation's sample ids
 * (`eval-<run>-<name>-…`), or by ids from before those began with eval- (`<run>-<name>-…`).
 */
function transferLineages(runId: string, transfer: TransferResult | null) {
  const lineages = transfer
    ? [...transfer.modes.map((mode) => mode.mode as string), 'start'].map((name) => {
        const run = `${runId}-${name}`;
        return { name, run, evaluationPrefix: `${evaluationRunId(run)}-`, ownPrefix: `${run}-` };
      })
    : [];
  return {
    lineages,
    /** The lineage a trajectory belongs to, or null (no transfer run, or none of its lineages). */
    of(trajectoryId: string, trajectoryRunId: string): string | null {
      const found = lineages.find(
        (lineage) =>
          trajectoryRunId === lineage.run ||
          trajectoryId.startsWith(lineage.evaluationPrefix) ||
          trajectoryId.startsWith(lineage.ownPrefix),
      );
      return found?.name ?? null;
    },
  };
}

const signalSample = (row: ReportTrajectoryRow) => ({
  trajectoryId: row.trajectoryId,
  questionId: row.questionId,
  reward: row.reward,
  em: row.rewardParts.em ?? 0,
  f1: row.rewardParts.f1 ?? 0,
  answered: row.answer !== null,
  stopReason: row.stopReason,
});

/**
 * Where each training question came from: a demo's warm-start questions and training candidates (the split's blobs,
 * named in its JSON report), else the run's training set. A set that cannot be read becomes a note.
 */
async function trainingOrigins(
  blobs: BlobStore,
  keys: { warmStart?: string; candidates?: string } | undefined,
  datasetText: string | null,
  notes: string[],
): Promise<Map<string, QuestionOrigin>> {
  const origins = new Map<string, QuestionOrigin>();
  for (const [source, key] of [
    ['warm-start', keys?.warmStart],
    ['candidate', keys?.candidates],
  ] as const) {
    if (!key) continue;
    try {
      for (const [id, origin] of questionOrigins((await blobs.get(key)).toString('utf8'), source)) origins.set(id, origin);
    } catch (error) {
      notes.push(`the demo's ${source} questions (${key}) could not be read: ${(error as Error).message}`);
    }
  }
  if (datasetText) for (const [id, origin] of questionOrigins(datasetText, 'training set')) if (!origins.has(id)) origins.set(id, origin);
  return origins;
}

export async function gatherReport(sources: ReportSources, options: GatherOptions): Promise<GatheredReport> {
  const { runId } = options;
  const limit = options.maxTrajectories ?? 2000;
  const notes: string[] = [];
  const transfer = await transferOf(sources.benchmarks, runId, notes);
  // A transfer benchmark's trajectories are its modes' (runs <run>-<mode>, warm start or learner) and its evaluations'.
  const modeRuns = new Set(transfer?.modes.map((mode) => `${runId}-${mode.mode}`) ?? []);
  // Its evaluations are named like its modes' runs, and the start's `<run>-start`.
  const lineages = transferLineages(runId, transfer);
  // A demo run with --rl-from took its base and warm-start evaluations over from another run: their trajectories too.
  const demo = demoReport(sources.home, runId);
  const reusedEvaluations = (demo?.stages ?? []).flatMap((stage) =>
    stage.heldOut.resultId && !stage.heldOut.resultId.startsWith(`${runId}-eval-`) ? [`${evaluationRunId(stage.heldOut.resultId)}-`] : [],
  );
  const evaluationPrefixes = [
    ...demoEvaluationPrefixes(runId),
    ...reusedEvaluations,
    ...lineages.lineages.map((lineage) => lineage.evaluationPrefix),
  ];
  // `<run>-<mode>-…` and `<run>-start-…`: the modes' own trajectories, and evaluations stored before their ids began with eval-.
  const prefixes = [...evaluationPrefixes, ...lineages.lineages.map((lineage) => lineage.ownPrefix)];
  const [rows, total, consumed, ownLearner, modeLearners] = await Promise.all([
    sources.source.trajectories(runId, prefixes, limit),
    sources.source.countTrajectories(runId, prefixes),
    sources.source.consumed(runId),
    learnerFacts(sources.client, sources.home, runId, notes),
    transfer ? transferLearners(sources, runId, transfer, notes) : null,
  ]);
  const learner = ownLearner ?? modeLearners?.facts ?? null;
  // A transfer run's trajectories and steps are drawn per mode (and the start): one line per lineage.
  const labelled = (label: string, row: ReportTrajectoryRow) => {
    const lineage = lineages.of(row.trajectoryId, row.runId);
    return lineage ? `${label} (${lineage})` : label;
  };
  if (total > rows.length) notes.push(`${total} trajectories; the report reads the first ${rows.length} (--max-trajectories)`);
  if (!learner && !transfer) notes.push('no learner statistics: no learner workflow and no demo report for this run');
  const isTraining = (row: ReportTrajectoryRow) =>
    (row.runId === runId || modeRuns.has(row.runId)) && !evaluationPrefixes.some((prefix) => row.trajectoryId.startsWith(prefix));
  const versionOf = (row: ReportTrajectoryRow) => (row.versions.length ? Math.max(...row.versions) : 0);

  const loaded = await mapLimited(
    rows,
    8,
    async (row) => {
      try {
        const view = await loadTrajectoryView(sources.blobs, row.trajectoryId);
        return { view, behaviour: analyseTrajectory(view) };
      } catch {
        return null;
      }
    },
    (done) => options.onProgress?.(done, rows.length),
  );
  const views = loaded.filter((entry) => entry !== null);
  if (views.length < rows.length)
    notes.push(`${rows.length - views.length} trajectories have no readable record (tool calls and behaviour leave them out)`);
  const viewById = new Map(views.map((entry) => [entry.view.trajectoryId, entry]));

  const training = rows.filter(isTraining);
  const heldOut = rows.filter((row) => !isTraining(row));
  const versions = [...new Set([...rows.map(versionOf), ...(learner?.history.map((step) => step.version) ?? [])])];
  const evaluations: EvaluationSummary[] = [];
  for (const summary of await sources.source.evaluationSummaries(runId, versions, 500)) {
    const parsed = evaluationSummarySchema.safeParse(summary);
    if (parsed.success) evaluations.push(parsed.data);
    else
      notes.push(`an evaluation_results row does not match evaluationSummarySchema (${parsed.error.issues[0]?.path.join('.')}): left out`);
  }

  let dataset: DatasetStatistics | null = null;
  let datasetText: string | null = null;
  const datasetKeys = [...new Set(training.map((row) => row.dataset).filter(Boolean))];
  if (datasetKeys.length) {
    const key = datasetKeys[0]!;
    try {
      if (await sources.blobs.exists(key)) {
        datasetText = (await sources.blobs.get(key)).toString('utf8');
        dataset = datasetStatistics(key, datasetText);
      }
    } catch (error) {
      notes.push(`training set ${key} could not be read: ${(error as Error).message}`);
    }
  }
  const trainingSamples = training.map(signalSample);
  const signal = trainingSamples.length
    ? rlSignal(trainingSamples, await trainingOrigins(sources.blobs, demo?.split?.keys, datasetText, notes))
    : [];
  const advantage = advantageByOutcome(trainingSamples, runGroupScale(sources.home, runId));

  const toolTally = new Map<string, number>();
  for (const { view } of views)
    for (const turn of view.turns) for (const call of turn.toolCalls) toolTally.set(call.tool, (toolTally.get(call.tool) ?? 0) + 1);
  const toolCallsOf = (row: ReportTrajectoryRow) => viewById.get(row.trajectoryId)?.behaviour.toolCalls;
  const groups = [
    ['training', training],
    ['held-out', heldOut],
  ] as const;
  const heldOutPoints = [
    ...seriesIntervalPoints(
      (transfer ? heldOut : notSummarised(heldOut, evaluations)).map((row) => ({
        version: versionOf(row),
        value: row.rewardParts.em ?? 0,
        series: labelled(transfer ? 'held-out EM' : 'demo held-out EM', row),
      })),
    ),
    ...evaluations.flatMap((result) =>
      result.avgAtK.em === undefined
        ? []
        : [
            {
              version: result.policyVersion,
              series: `${result.dataset} EM Avg@${result.k}`,
              n: result.questions,
              mean: result.avgAtK.em,
              low: result.avgAtKCi95.em?.[0] ?? null,
              high: result.avgAtKCi95.em?.[1] ?? null,
            },
          ],
    ),
  ];
  const steps = ownLearner ? stepPoints(ownLearner.history, ownLearner.startedAtMs) : (modeLearners?.steps ?? []);
  const trainingTimes = training.map((row) => row.createdAt);
  const spanHours =
    trainingTimes.length > 1 ? (Math.max(...trainingTimes.map(Number)) - Math.min(...trainingTimes.map(Number))) / 3_600_000 : 0;
  const model: ReportModel = {
    runId,
    generatedAt: new Date().toISOString(),
    summary: {
      trainingTrajectories: training.length,
      heldOutTrajectories: heldOut.length,
      steps: steps.length,
      finalVersion: learner?.finalVersion ?? (versions.length ? Math.max(...versions) : null),
      samplesPerHour: learner?.samplesPerHour ?? (spanHours > 0 ? training.length / spanHours : null),
      trainerBusy: learner?.trainerBusy ?? null,
      maxStaleness: learner?.maxStaleness ?? null,
      wallSeconds: learner?.wallSeconds ?? demo?.seconds ?? null,
    },
    steps,
    trainingReward: seriesIntervalPoints(
      training.map((row) => ({ version: versionOf(row), value: row.reward, series: labelled('training reward', row) })),
    ),
    heldOut: heldOutPoints,
    staleness: counts(
      consumed.map((row) => Math.max(0, row.currentVersion - (row.versions.length ? Math.min(...row.versions) : row.currentVersion))),
      'consumed',
    ),
    throughput: throughput(trainingTimes),
    turns: groups.flatMap(([group, list]) =>
      counts(
        list.map((row) => row.turns),
        group,
      ),
    ),
    toolCalls: groups.flatMap(([group, list]) =>
      counts(
        list.map(toolCallsOf).filter((value) => value !== undefined),
        group,
      ),
    ),
    toolUse: [...toolTally.entries()].sort(([, a], [, b]) => b - a).map(([tool, calls]) => ({ tool, calls })),
    benchmarks: evaluations,
    dataset,
    behaviour: behaviourByVersion(views.map((entry) => entry.behaviour)),
    trajectories: rows.map((row): TrajectoryRow => ({
      trajectoryId: row.trajectoryId,
      group: isTraining(row) ? 'training' : 'held-out',
      dataset: row.dataset,
      question: row.question,
      answer: row.answer,
      reward: row.reward,
      turns: row.turns,
      toolCalls: toolCallsOf(row) ?? null,
      version: versionOf(row),
      stopReason: row.stopReason,
      page: null,
    })),
    transfer,
    notes,
    ...(signal.length ? { rlSignal: signal } : {}),
    ...(advantage.length ? { rlAdvantage: advantage } : {}),
    ...demoStages(sources.home, runId),
  };
  return { model, views };
}
