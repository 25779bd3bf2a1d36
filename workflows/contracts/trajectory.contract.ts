/**
 * The trajectory workflow: one search-agent episode. Generate → parse → run tools → observe →
 * repeat, until an answer or a limit. Texts, token ids and logprobs live in the blob store; the
 * workflow holds counters and references only.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ToolCall } from './tools.contract.js';

export const trajectoryWorkflowType = 'trajectory';

/** How the prompt is assembled from history (ASearcher's two agent modes). */
export const contextModes = ['full', 'recent'] as const;
export type ContextMode = (typeof contextModes)[number];
/** Tool-call protocol: ASearcher's tags, or JSON function calls inside <tool_call>…</tool_call>. */
export const protocols = ['tags', 'json'] as const;
export type Protocol = (typeof protocols)[number];
/** What an invalid step does: the agent sees an error observation and goes on, or the trajectory stops. */
export const invalidPolicies = ['continue', 'stop'] as const;
export type InvalidPolicy = (typeof invalidPolicies)[number];
/**
 * What a finished trajectory's reward is (activities/reward): exact match, token F1, cover exact match,
 * a judge model's score, or an answer's credit with a format term (`f1_format` = (1 − w)·F1 + w·format,
 * `em_format` = (1 − w)·EM + w·format, w = `rewardFormatWeight`, default 0.1).
 */
export const rewardMetrics = ['em', 'f1', 'cover_em', 'judge', 'f1_format', 'em_format'] as const;
export type RewardMetric = (typeof rewardMetrics)[number];
/** The reward metrics with a format term, whose weight is `rewardFormatWeight`. */
export const formatRewardMetrics: readonly RewardMetric[] = ['f1_format', 'em_format'];
/**
 * Which trajectories earn the format term of `f1_format` and `em_format`: `when-scored`, only one whose answer scores
 * above 0 (F1 or EM), so a wrong answer, no answer and a run out of turns all earn 0 and a group with no right answer
 * has no advantage (docs/BENCHMARKS.md, session 39: with `always`, such groups taught the policy to answer anything one
 * step early); `always`, every trajectory (the rule of sessions up to 39).
 */
export const rewardFormatCredits = ['when-scored', 'always'] as const;
export type RewardFormatCredit = (typeof rewardFormatCredits)[number];
export const defaultRewardFormatCredit: RewardFormatCredit = 'when-scored';
/**
 * How a group's centred rewards become advantages (the train step's `ppo.groupScale`, with `ppo.groupNormalise`):
 * `std` divides reward − group mean by the group's std (GRPO: every group that differs pushes with unit size, however
 * small its reward gap), `none` keeps reward − group mean (Dr. GRPO: a small gap, such as `rewardUnanswered`'s,
 * stays a small push).
 */
export const groupScales = ['std', 'none'] as const;
export type GroupScale = (typeof groupScales)[number];

export interface TrajectoryLimits {
  /** Maximum tool-call turns. @default 200 */
  readonly maxTurns: number;
  /** Maximum generated tokens over the whole trajectory. @default 200000 */
  readonly maxTotalTokens: number;
  /** Maximum new tokens per generation. @default 512 */
  readonly maxNewTokensPerTurn: number;
  /** Wall-clock budget in seconds (workflow time). @default 3600 */
  readonly maxWallSeconds: number;
  /** Stop when the same action repeats this many times in a row (0 = never). @default 3 */
  readonly maxRepeats: number;
  /** Stop after this many invalid steps in total. @default 5 */
  readonly maxInvalidSteps: number;
}

export interface TrajectoryOptions {
  readonly protocol: Protocol;
  readonly contextMode: ContextMode;
  /** In `recent` mode: characters of most recent history kept. @default 25000 */
  readonly recentChars: number;
  /** Observations are cut to this many characters (ASearcher: 5,000 per document). @default 5000 */
  readonly maxObservationChars: number;
  /** Tool calls allowed in one turn (run in parallel). @default 1 */
  readonly maxCallsPerTurn: number;
  /** What an invalid step does: keep going (with an error observation) or end the trajectory. @default "continue" */
  readonly onInvalid: InvalidPolicy;
  /** Tools offered to the agent. @default ["search","access","answer"] */
  readonly tools: readonly string[];
  /** 0 = greedy. @default 0 */
  readonly temperature: number;
  /** Sampling seed; with temperature 0 the policy is deterministic anyway. @default 0 */
  readonly seed: number;
  /**
   * Run a turn whose every tool call is local (search and document reads on the stack's Postgres) as
   * a local activity in the agent worker: one task-queue round trip and one workflow task fewer per
   * turn. false: every turn on the tools queue. @default true
   */
  readonly localTools: boolean;
}

export interface TrajectoryInput {
  readonly question: string;
  /** Gold answers, for the reward. Empty = unscored. */
  readonly answers?: readonly string[];
  readonly questionId?: string;
  readonly dataset?: string;
  /** Learner run this trajectory belongs to (empty for single runs). */
  readonly runId?: string;
  /** Policy version to start generating with. @default 0 */
  readonly policyVersion?: number;
  /** Workflow id of a learner to signal with the finished record. */
  readonly reportTo?: string;
  readonly limits?: Partial<TrajectoryLimits>;
  readonly options?: Partial<TrajectoryOptions>;
  /** Reward: which metric is "the" reward. @default "f1" */
  readonly rewardMetric?: RewardMetric;
  /** Weight w of the format term of rewardMetric "f1_format" or "em_format", in [0, 1]: (1 − w)·F1 (or EM) + w·format. @default 0.1 */
  readonly rewardFormatWeight?: number;
  /** Which trajectories earn the format term of "f1_format" or "em_format" (see `rewardFormatCredits`). @default "when-scored" */
  readonly rewardFormatCredit?: RewardFormatCredit;
  /**
   * The reward of a trajectory that ends without an answer (it repeated a call, ran out of turns, broke the format),
   * in [−1, 0], whatever the metric: below a wrong answer's 0 makes answering worth more than giving up. With
   * group-std advantages (the default `ppo.groupScale`) any gap is scaled to unit size, so a small value here is only
   * small with `groupScale` "none". @default 0
   */
  readonly rewardUnanswered?: number;
  /**
   * Teacher forcing (a gold solution path for the warm start): turn i's output is forcedTurns[i],
   * scored by the policy instead of sampled; turns after the list are generated as usual.
   */
  readonly forcedTurns?: readonly string[];
  /**
   * Whether the policy scores the forced turns (token ids and behaviour logprobs under the serving
   * version, one forward pass each). False: the forced text is taken as the turn's output without
   * asking the policy (the record has no token ids: the trajectory cannot be trained on); the
   * synthesizer's solvability replay needs only the tool observations and the answer. @default true
   */
  readonly scoreForcedTurns?: boolean;
  /**
   * Frozen tool observations (evaluations): each call's observation is looked up by (scope, tool,
   * normalised input, corpus version) and stored on first sight, so a reproduction that names the
   * same scope sees exactly the observations of the original.
   */
  readonly frozenObservations?: FrozenObservations;
  /**
   * Lineage of a fork (`longhaul fork`): the trajectory whose first `turn` turns this one replays as
   * `forcedTurns`. Kept in the record so a browser can draw forks as a tree.
   */
  readonly forkOf?: ForkLineage;
  /** Internal: carried across continue-as-new. */
  readonly carried?: CarriedState;
}

export interface FrozenObservations {
  /** Whose observations: the evaluation result that first recorded them. */
  readonly scope: string;
  readonly corpusVersion: string;
}

/** Where a forked trajectory comes from: its parent and the turn it branched at (turns 0..turn-1 replayed). */
export interface ForkLineage {
  readonly trajectoryId: string;
  readonly turn: number;
}

/** What a parent workflow (learner, warm start) passes through to every trajectory child it starts. */
export interface TrajectorySettings {
  readonly limits?: Partial<TrajectoryLimits>;
  readonly options?: Partial<TrajectoryOptions>;
  readonly rewardMetric?: TrajectoryInput['rewardMetric'];
  readonly rewardFormatWeight?: TrajectoryInput['rewardFormatWeight'];
  readonly rewardFormatCredit?: TrajectoryInput['rewardFormatCredit'];
  readonly rewardUnanswered?: TrajectoryInput['rewardUnanswered'];
  readonly frozenObservations?: FrozenObservations;
}

/** Counters that survive continue-as-new. Small by construction. */
export interface CarriedState {
  readonly turn: number;
  readonly generatedTokens: number;
  readonly invalidSteps: number;
  readonly repeats: number;
  readonly lastActionKey: string;
  readonly startedAtMs: number;
  readonly versionsUsed: readonly number[];
  readonly policyVersion: number;
}

/** What a parsed model output asks for. */
export type ParsedAction =
  | { readonly kind: 'tools'; readonly calls: readonly ToolCall[] }
  | { readonly kind: 'answer'; readonly answer: string }
  | { readonly kind: 'invalid'; readonly reason: string };

export const stopReasons = [
  'answered',
  'max_turns',
  'max_tokens',
  'max_wall_time',
  'repeated',
  'invalid',
  'no_action',
  'cancelled',
] as const;
export type StopReason = (typeof stopReasons)[number];

export interface TrajectoryState {
  readonly trajectoryId: string;
  readonly turn: number;
  readonly status: 'running' | 'completed' | 'cancelled' | 'failed';
  readonly lastAction: string;
  readonly generatedTokens: number;
  readonly invalidSteps: number;
  readonly policyVersion: number;
  readonly versionsUsed: readonly number[];
  readonly generating: boolean;
}

export interface TrajectoryResult {
  readonly trajectoryId: string;
  readonly turns: number;
  readonly stopReason: StopReason;
  readonly answer: string | null;
  readonly reward: number;
  readonly rewardParts: Readonly<Record<string, number>>;
  /** Blob key of the full record (DESIGN §5). */
  readonly recordKey: string;
  readonly generatedTokens: number;
  readonly versionsUsed: readonly number[];
}

export const trajectoryStateQuery = defineQuery<TrajectoryState>('state');
/** Sets the policy version used from the next generation on; returns the version now in force. */
export const setPolicyVersionUpdate = defineUpdate<number, [number]>('setPolicyVersion');
/** Interrupts a generation in flight; it is resubmitted under the current version with the text so far. */
export const interruptSignal = defineSignal<[]>('interrupt');

/** Signal a finished trajectory sends to the workflow named in `reportTo` (the learner). */
/** What a finished trajectory tells the learner it reports to. */
export type TrajectoryReport = TrajectoryResult & { runId: string; questionId: string };

export const trajectoryFinishedSignal = defineSignal<[TrajectoryReport]>('trajectoryFinished');

/** A child that failed for good (a non-retryable activity failure, bad input): no record, no reward. */
export interface TrajectoryFailureReport {
  readonly trajectoryId: string;
  readonly runId?: string;
  /** The failure's message, clipped. */
  readonly message: string;
}

/** Sent by a failing trajectory to its `reportTo` workflow, so the learner's group settles without it. */
export const trajectoryFailedSignal = defineSignal<[TrajectoryFailureReport]>('trajectoryFailed');
