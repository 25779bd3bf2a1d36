/**
 * The learner workflow (`longhaul train`): keeps a bounded window of trajectory children in
 * flight, admits new rollouts by AReaL's staleness rule, trains on batches from the Postgres
 * buffer, publishes versions, and continues-as-new as it grows. Children report by signal, so
 * nothing is lost across continue-as-new.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { ScheduledEvaluationInput } from './schedules.contract.js';
import type { TrajectorySettings } from './trajectory.contract.js';

export const learnerWorkflowType = 'learner';

/** async: rollouts go on while a step trains (AReaL); sync: a whole batch is generated first. */
export const learnerModes = ['async', 'sync'] as const;
export type LearnerMode = (typeof learnerModes)[number];
/** How the buffer picks a batch (activities/ports/buffer.port.ts). */
export const batchSelections = ['freshest', 'priority', 'expiring'] as const;
export type BatchSelection = (typeof batchSelections)[number];

export interface LearnerSettings {
  /** Samples per question (GRPO group). @default 4 */
  readonly groupSize: number;
  /** Trajectories per training step. @default 16 */
  readonly batchSize: number;
  /** Training steps to run. @default 10 */
  readonly maxSteps: number;
  /** Maximum staleness η in policy versions. @default 4 */
  readonly eta: number;
  /** Trajectories in flight at most. @default 2 × batchSize */
  readonly maxInflight: number;
  readonly mode: LearnerMode;
  /** Drop groups whose rewards are all equal (no learning signal). @default true */
  readonly dropEqualRewardGroups: boolean;
  /**
   * How the buffer picks a batch (activities/ports/buffer.port.ts). @default 'expiring': with freshest
   * (the default before session 20) the claim passed settled groups over until they went stale — 64 of
   * 252 started trajectories dropped vs 28 of 220, at the same samples/hour (docs/BENCHMARKS.md).
   */
  readonly selection: BatchSelection;
  /** Interrupt in-flight generations when a new version is published (AReaL). @default true */
  readonly interruptOnPublish: boolean;
}

export interface LearnerInput {
  readonly runId: string;
  /** Blob key of the training questions, JSONL of {"id","question","answers"}. */
  readonly datasetKey: string;
  readonly settings?: Partial<LearnerSettings>;
  readonly trajectory?: TrajectorySettings;
  /** Passed through to trainStep (the engine validates it). */
  readonly hyperparameters?: Record<string, unknown>;
  /** Policy version to start from. @default 0 */
  readonly startVersion?: number;
  /** Evaluate every N-th published version without waiting for it (absent: never). */
  readonly evaluation?: LearnerEvaluationRequest;
  /**
   * Draw questions from an active set that refreshes as the policy masters them (absent: every
   * question once, in dataset order). See LearnerCurriculum and workflows/learner-curriculum.ts.
   */
  readonly curriculum?: Partial<LearnerCurriculum>;
  /**
   * Continue-as-new after this many training steps in one execution, besides whenever Temporal
   * suggests it (absent: only then). Bounds the history; the tests use it to cross continue-as-new.
   */
  readonly stepsPerExecution?: number;
  /** Internal: carried across continue-as-new. */
  readonly carried?: LearnerCarried;
}

/**
 * A curriculum: the learner samples groups from an active set of questions (at first the dataset's
 * first `activeSize`), always the active question with the fewest groups in flight, then the one
 * drawn least recently. Each settled group of an active question has a pass rate: the share of its
 * samples whose reward is at least `passReward`. A question whose last `masteredAfter` settled groups
 * all had a pass rate ≥ `upper` leaves as mastered; one whose last `tooHardAfter` groups were all
 * ≤ `lower` leaves as too hard (set aside); each leaver is replaced by the next question of the
 * dataset not used yet. Groups with a failed child do not count; groups of a question that has left
 * still train but no longer count. Because a question is sampled again and again, each group's
 * trajectories carry question id `<id>/g<n>` (n = the question's n-th group), since the buffer and the
 * trainer group samples by question id.
 */
export interface LearnerCurriculum {
  /** Questions in the active set at once. @default 8 */
  readonly activeSize: number;
  /** A group with a pass rate at or below this counts toward "too hard". In [0, 1], below upper. @default 0 */
  readonly lower: number;
  /** A group with a pass rate at or above this counts toward "mastered". In [0, 1], above lower. @default 1 */
  readonly upper: number;
  /** Consecutive settled groups at or above `upper` after which a question leaves as mastered. @default 2 */
  readonly masteredAfter: number;
  /** Consecutive settled groups at or below `lower` after which a question leaves as too hard. @default 2 */
  readonly tooHardAfter: number;
  /** A sample passes when its reward is at least this (rewards are in [0, 1]). @default 0.5 */
  readonly passReward: number;
}

/** One question of the active set (carried across continue-as-new). */
export interface CurriculumQuestion {
  /** Its line in the dataset. */
  readonly index: number;
  readonly id: string;
  /** Groups started of it so far: the next group is `<id>/g<groups>`. */
  readonly groups: number;
  /** Draw number of its latest group (−1: not drawn yet). */
  readonly lastDrawn: number;
  /** Consecutive settled groups with a pass rate ≥ upper, and ≤ lower. */
  readonly highStreak: number;
  readonly lowStreak: number;
}

/** The curriculum's state, carried across continue-as-new (small: the active set and counters). */
export interface CurriculumState {
  readonly active: readonly CurriculumQuestion[];
  /** Groups drawn so far (the draw number of the next). */
  readonly draws: number;
  /** Questions that entered the active set so far (the first fill included). */
  readonly entered: number;
  /** Questions that left as mastered, and as too hard, so far. */
  readonly mastered: number;
  readonly tooHard: number;
  /** The dataset has no unused question left. */
  readonly exhausted: boolean;
}

/** The curriculum's counts at a moment (a step, a query, the end). */
export interface CurriculumCounts {
  /** Questions in the active set now. */
  readonly active: number;
  readonly entered: number;
  readonly mastered: number;
  readonly tooHard: number;
}

/** The counts and which questions are active now (the state query and the result). */
export interface CurriculumReport extends CurriculumCounts {
  readonly activeQuestionIds: readonly string[];
}

/**
 * An evaluation the learner starts after publishing each version that is a multiple of
 * `everyVersions`: an `evaluation` child workflow it abandons (ParentClosePolicy.ABANDON), so
 * training goes on while it runs and it outlives the learner. Its result id is
 * `<runId>-v<version>` and its run id the learner's.
 */
export interface LearnerEvaluationRequest extends Omit<ScheduledEvaluationInput, 'runId' | 'commit'> {
  readonly everyVersions: number;
}

export interface GroupState {
  readonly groupId: string;
  readonly questionIndex: number;
  readonly children: readonly string[];
  readonly rewards: readonly (number | null)[];
  /** Children that failed for good (their reward slot holds 0); the group is dropped when it settles. */
  readonly failed?: readonly string[];
}

export interface StepStats {
  readonly step: number;
  readonly version: number;
  readonly meanReward: number;
  readonly maxStaleness: number;
  readonly trainSeconds: number;
  /** Time the serving side took to pick the version up (syncWeights); absent in runs started before weight sync. */
  readonly syncSeconds?: number;
  /** Where syncSeconds went (SyncWeightsResult.phases); absent in runs recorded before it was kept. */
  readonly syncPhases?: Readonly<Record<string, number>>;
  readonly finishedAtMs: number;
  /**
   * Of the groups that settled since the previous step, the share whose rewards were all equal (zero
   * advantage: no learning signal), and how many settled. Absent in runs recorded before it was kept.
   */
  readonly zeroAdvantageGroupShare?: number;
  readonly groupsSettled?: number;
  /** The curriculum's counts when the step finished (runs with a curriculum only). */
  readonly curriculum?: CurriculumCounts;
  /** Where trainSeconds went, from the step's metrics (the phases it reported; absent for a trainer that reports none). */
  readonly trainPhases?: TrainPhases;
}

/**
 * A training step's wall time by phase, seconds: staging the base version (a download unless cached), the
 * engine process whole, and within it the proximal pass, the update and saving (weights, optimizer, ONNX export).
 * The rest of trainSeconds is the upload and registration of the new version.
 */
export interface TrainPhases {
  readonly stageSeconds?: number;
  readonly engineSeconds?: number;
  readonly proximalSeconds?: number;
  readonly updateSeconds?: number;
  readonly saveSeconds?: number;
}

/** The sync phases worth showing (≥ 0.05 s), in the order reported: the train step line and the report's step phases. */
export function shownSyncPhases(phases: Readonly<Record<string, number>> | undefined): [string, number][] {
  return Object.entries(phases ?? {}).filter(([, seconds]) => seconds >= 0.05);
}

const trainPhaseNames = ['stageSeconds', 'engineSeconds', 'proximalSeconds', 'updateSeconds', 'saveSeconds'] as const;

/** The phases a step's metrics report (finite numbers only), or undefined when none. */
export function trainPhasesOf(metrics: Readonly<Record<string, unknown>>): TrainPhases | undefined {
  const phases: Record<string, number> = {};
  for (const name of trainPhaseNames) {
    const value = metrics[name];
    if (typeof value === 'number' && Number.isFinite(value)) phases[name] = value;
  }
  return Object.keys(phases).length > 0 ? phases : undefined;
}

export interface LearnerCarried {
  readonly version: number;
  readonly step: number;
  readonly started: number;
  readonly nextQuestion: number;
  readonly finished: number;
  readonly dropped: number;
  readonly consumed: number;
  readonly groups: readonly GroupState[];
  readonly busyMs: number;
  readonly startedAtMs: number;
  readonly history: readonly StepStats[];
  readonly paused: boolean;
  readonly settings: LearnerSettings;
  /** Oldest policy version in each finished, not yet consumed trajectory (for staleness). */
  readonly oldestVersions: Readonly<Record<string, number>>;
  /** Reward of each finished, not yet consumed trajectory (for the mean reward of the batch a step trains on). */
  readonly rewards?: Readonly<Record<string, number>>;
  /** Trajectories of settled groups, kept and not yet consumed. */
  readonly ready: number;
  /** Groups settled since the last step, and how many of them had all-equal rewards (zero advantage). */
  readonly groupsSinceStep?: { readonly settled: number; readonly equal: number };
  /** The same over the whole run. */
  readonly groupsTotal?: { readonly settled: number; readonly equal: number };
  /** Children that failed for good (absent in runs started before the learner heard of failures). */
  readonly failed?: number;
  /** The curriculum (runs with one only). */
  readonly curriculum?: CurriculumState;
}

export interface LearnerState {
  readonly runId: string;
  readonly mode: LearnerMode;
  readonly version: number;
  readonly step: number;
  readonly inflight: number;
  readonly finished: number;
  readonly ready: number;
  readonly dropped: number;
  readonly consumed: number;
  /** Children that failed for good (no record); their groups were dropped, and they count in `dropped` too. */
  readonly failed: number;
  readonly paused: boolean;
  readonly training: boolean;
  readonly trainerBusy: number;
  readonly history: readonly StepStats[];
  /** The curriculum now (runs with one only). */
  readonly curriculum?: CurriculumReport;
}

export interface LearnerResult {
  readonly runId: string;
  readonly mode: LearnerMode;
  readonly steps: number;
  readonly finalVersion: number;
  readonly consumed: number;
  readonly dropped: number;
  /** Children that failed for good (no record); their groups were dropped, and they count in `dropped` too. */
  readonly failed: number;
  readonly samplesPerHour: number;
  readonly trainerBusy: number;
  readonly maxStaleness: number;
  readonly wallSeconds: number;
  readonly history: readonly StepStats[];
  /** Share of all settled groups whose rewards were all equal (zero advantage). */
  readonly zeroAdvantageGroupShare?: number;
  /** The curriculum at the end (runs with one only). */
  readonly curriculum?: CurriculumReport;
}

export interface QuestionRow {
  readonly id: string;
  readonly question: string;
  readonly answers: readonly string[];
  /** A gold solution path (one text per turn) for the warm start's teacher forcing; RL ignores it. */
  readonly goldTurns?: readonly string[];
  /** The hop count of a synthesized question (its provenance), for choosing training questions by it; RL ignores it. */
  readonly hops?: number;
}

/** Activities the learner calls (agent queue unless noted). */
export interface LearnerActivities {
  loadQuestion(input: { datasetKey: string; index: number }): Promise<QuestionRow | null>;
  claimBatch(input: {
    runId: string;
    step: number;
    batchSize: number;
    currentVersion: number;
    eta: number;
    selection: BatchSelection;
    minGroupSize: number;
  }): Promise<{ trajectoryIds: string[] }>;
  dropTrajectories(input: { runId: string; trajectoryIds: readonly string[]; reason: string }): Promise<{ dropped: number }>;
  releaseStaleTrajectories(input: { runId: string; currentVersion: number; eta: number }): Promise<{ dropped: number }>;
}

export interface TrainStepInput {
  readonly runId: string;
  readonly step: number;
  readonly trajectoryIds: readonly string[];
  readonly baseVersion: number;
  readonly outputVersion: number;
  readonly groupSize: number;
  /**
   * The learner's η (settings.eta): the one staleness bound, used by the buffer's claim and by every
   * check of the train step (it overrides hyperparameters.ppo.maxStaleness, which must then be absent
   * or equal). Absent only in steps scheduled by learners that predate it.
   */
  readonly eta?: number;
  readonly hyperparameters: Record<string, unknown>;
}

export interface TrainStepResult {
  readonly version: number;
  readonly metrics: Record<string, unknown>;
}

/** What `checkHyperparameters` checks: the learner's (`rl`, with its group size) or the warm start's (`sft`) hyperparameters. */
export type CheckHyperparametersInput =
  | { readonly kind: 'rl'; readonly groupSize?: number; readonly eta?: number; readonly hyperparameters: Record<string, unknown> }
  | { readonly kind: 'sft'; readonly hyperparameters: Record<string, unknown> };

/** On the gpu-train queue. */
export interface TrainActivities {
  trainStep(input: TrainStepInput): Promise<TrainStepResult>;
  /** Refuses (non-retryable LonghaulInvalidInput naming the field) hyperparameters that trainStep would refuse; cheap, no model touched. */
  checkHyperparameters(input: CheckHyperparametersInput): Promise<void>;
}

export interface SyncWeightsInput {
  readonly runId: string;
  /** The version trainStep just registered. */
  readonly version: number;
}

export interface SyncWeightsResult {
  /** The adapter that ran (LONGHAUL_WEIGHT_SYNC of the gpu-infer worker). */
  readonly adapter: 'onnx' | 'sglang' | 'vllm' | 'none';
  readonly version: number;
  readonly seconds: number;
  /** Seconds per phase the adapter reported (onnx: waiting behind an earlier reload, files, open); absent when none. */
  readonly phases?: Readonly<Record<string, number>>;
}

/** On the gpu-infer queue: make the serving side use a newly trained version. */
export interface WeightSyncActivities {
  syncWeights(input: SyncWeightsInput): Promise<SyncWeightsResult>;
}

export const learnerStateQuery = defineQuery<LearnerState>('state');
export const pauseUpdate = defineUpdate<LearnerState, []>('pause');
export const resumeUpdate = defineUpdate<LearnerState, []>('resume');
export const setConfigUpdate = defineUpdate<
  LearnerState,
  [Partial<Pick<LearnerSettings, 'eta' | 'maxInflight' | 'maxSteps' | 'dropEqualRewardGroups' | 'interruptOnPublish'>>]
>('setConfig');
