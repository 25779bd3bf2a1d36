/**
 * Everything `longhaul report` shows, as plain data: gathered from the stores by gather-report.ts,
 * turned into HTML by report-html.ts (pure) and into the terminal summary by report-summary.ts (pure).
 */
import type { VersionBehaviour } from '../../activities/analysis/behaviour.js';
import type { EvaluationSummary } from '../../activities/ports/evaluation-result.schema.js';
import type { TransferResult } from '../../bench/transfer-benchmark.js';
import type { AdvantageRow, SignalRow } from './rl-signal.js';

export interface StepPoint {
  readonly step: number;
  readonly version: number;
  readonly meanReward: number;
  readonly maxStaleness: number;
  readonly trainSeconds: number;
  readonly syncSeconds: number | null;
  readonly finishedAtMs: number;
  /** trainSeconds over the wall time since the previous step ended (the run's start for the first); null when unknown. */
  readonly busyFraction: number | null;
  /** Where the step's time went, in order (empty when its trainer reported no phases). */
  readonly phases: readonly StepPhase[];
  /** The learner the step belongs to when a run has several (a transfer benchmark's mode: "freeze", "full"); absent for one. */
  readonly series?: string;
}

export interface StepPhase {
  readonly phase: string;
  readonly seconds: number;
}

/** A mean with its 95 % interval (null bounds: no interval known). */
export interface IntervalPoint {
  readonly version: number;
  readonly series: string;
  readonly n: number;
  readonly mean: number;
  readonly low: number | null;
  readonly high: number | null;
}

export interface CountPoint {
  readonly value: number;
  readonly group: string;
  readonly count: number;
}

export interface ThroughputPoint {
  /** ISO start of the bucket. */
  readonly at: string;
  readonly samplesPerHour: number;
}

export interface TrajectoryRow {
  readonly trajectoryId: string;
  /** "training" or "held-out". */
  readonly group: string;
  readonly dataset: string;
  readonly question: string;
  readonly answer: string | null;
  readonly reward: number;
  readonly turns: number;
  readonly toolCalls: number | null;
  readonly version: number;
  readonly stopReason: string;
  /** Relative link to the trajectory's page, when one was written. */
  readonly page: string | null;
}

export interface DatasetStatistics {
  readonly key: string;
  readonly questions: number;
  readonly meanQuestionChars: number;
  readonly meanAnswersPerQuestion: number;
  readonly withGoldTurns: number;
  /** Question rows by number of gold turns (hops of a synthesized question), when they have any. */
  readonly goldTurns: readonly CountPoint[];
  /** Fields beyond id/question/answers and how many rows carry each (a synthesized set's extra metadata). */
  readonly extraFields: Readonly<Record<string, number>>;
}

/** One stage of a demo run (base, warm start, RL): held-out accuracy and behaviour of the version it evaluated. */
export interface DemoStageRow {
  readonly stage: string;
  readonly version: number;
  readonly questions: number;
  readonly k: number;
  readonly em: number;
  readonly emCi95: readonly [number, number];
  /** Mean tool calls per question, and the samples per tool-call count. */
  readonly meanToolCalls: number;
  readonly toolCallsDistribution: Readonly<Record<string, number>>;
  readonly behaviour: VersionBehaviour | null;
  /** Outside reference sets at this stage: dataset, EM and its interval. */
  readonly references: readonly { readonly dataset: string; readonly em: number; readonly emCi95: readonly [number, number] }[];
}

export interface ReportModel {
  readonly runId: string;
  readonly generatedAt: string;
  readonly summary: {
    readonly trainingTrajectories: number;
    readonly heldOutTrajectories: number;
    readonly steps: number;
    readonly finalVersion: number | null;
    readonly samplesPerHour: number | null;
    readonly trainerBusy: number | null;
    readonly maxStaleness: number | null;
    readonly wallSeconds: number | null;
  };
  readonly steps: readonly StepPoint[];
  /** Training reward per version that generated the trajectory. */
  readonly trainingReward: readonly IntervalPoint[];
  /** Held-out accuracy per version: evaluation results (series "<dataset> EM") and the demo's evaluations. */
  readonly heldOut: readonly IntervalPoint[];
  /** Consumed trajectories by staleness (the trained version minus the oldest version in the trajectory). */
  readonly staleness: readonly CountPoint[];
  readonly throughput: readonly ThroughputPoint[];
  readonly turns: readonly CountPoint[];
  readonly toolCalls: readonly CountPoint[];
  readonly toolUse: readonly { readonly tool: string; readonly calls: number }[];
  readonly benchmarks: readonly EvaluationSummary[];
  readonly dataset: DatasetStatistics | null;
  readonly behaviour: readonly VersionBehaviour[];
  readonly trajectories: readonly TrajectoryRow[];
  /** The run's transfer benchmark (`longhaul bench transfer`, table benchmark_results), when it is one. */
  readonly transfer?: TransferResult | null;
  /** Training groups by where their question came from: how many mixed right and wrong answers, how many had equal rewards. */
  readonly rlSignal?: readonly SignalRow[];
  /** Training samples by outcome (right, partly right, wrong, no answer and why): the sum of their group-normalised advantages. */
  readonly rlAdvantage?: readonly AdvantageRow[];
  /** What could not be gathered and why (shown in the report and the summary). */
  readonly notes: readonly string[];
  /** The demo's stages from its JSON report, when the run is a demo (`longhaul demo`); paired gains beside them. */
  readonly demoStages?: readonly DemoStageRow[];
  readonly demoGains?: readonly {
    readonly label: string;
    readonly n: number;
    readonly mean: number;
    readonly ci95: readonly [number, number];
  }[];
}

/** The Vega, Vega-Lite and vega-embed browser builds, inlined into the report. */
export interface ChartRuntime {
  readonly vega: string;
  readonly vegaLite: string;
  readonly vegaEmbed: string;
}
