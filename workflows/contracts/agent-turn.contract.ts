/** Inputs and outputs of the per-turn activities the trajectory workflow calls. Small by design. */
import type {
  ContextMode,
  ForkLineage,
  FrozenObservations,
  ParsedAction,
  Protocol,
  RewardFormatCredit,
  RewardMetric,
  StopReason,
} from './trajectory.contract.js';

export interface PromptSettings {
  readonly protocol: Protocol;
  readonly contextMode: ContextMode;
  readonly recentChars: number;
  readonly tools: readonly string[];
  readonly template: 'chatml' | 'plain';
}

export interface GenerateTurnInput {
  readonly trajectoryId: string;
  readonly turn: number;
  readonly question: string;
  readonly prompt: PromptSettings;
  readonly maxNewTokens: number;
  readonly maxCallsPerTurn: number;
  readonly temperature: number;
  readonly seed: number;
  /** Version the workflow wants; the backend reports the version it actually used per token. */
  readonly policyVersion: number;
  /** Teacher forcing: this turn's output is this text, scored by the policy instead of sampled. */
  readonly forcedText?: string;
  /** With forcedText: take it as the output without the policy (no token ids, no logprobs: untrainable). */
  readonly forcedUnscored?: boolean;
}

export interface GenerateTurnResult {
  /** The parsed action, with long tool inputs clipped (the full text is in the generation blob). */
  readonly action: ParsedAction;
  readonly actionKey: string;
  readonly generatedTokens: number;
  readonly promptTokens: number;
  readonly policyVersion: number;
  /** Distinct policy versions among this turn's tokens (more than one after an interruption). */
  readonly versions: readonly number[];
  readonly finishReason: string;
  readonly interruptions: number;
}

export interface RunTurnToolsInput {
  readonly trajectoryId: string;
  readonly turn: number;
  readonly maxObservationChars: number;
  /** Look each call's observation up in (and record it to) the frozen observations of an evaluation. */
  readonly frozen?: FrozenObservations;
}

/**
 * What the agent worker's local activity did with a turn's calls: ran them (every call was local:
 * its tool declared it cheap and on this machine), or left them for the tools queue.
 */
export type LocalTurnToolsResult = { readonly local: true; readonly results: readonly ToolCallSummary[] } | { readonly local: false };

export interface ToolCallSummary {
  readonly tool: string;
  readonly ok: boolean;
  readonly invalid: boolean;
  readonly truncated: boolean;
  readonly latencyMs: number;
  readonly cacheHit: boolean;
  readonly documentIds: readonly string[];
}

export interface FinishTrajectoryInput {
  readonly trajectoryId: string;
  readonly question: string;
  readonly answers: readonly string[];
  readonly questionId: string;
  readonly dataset: string;
  readonly runId: string;
  readonly turns: number;
  readonly stopReason: StopReason;
  readonly answer: string | null;
  readonly invalidSteps: number;
  readonly generatedTokens: number;
  readonly versionsUsed: readonly number[];
  readonly rewardMetric: RewardMetric;
  /** The format term's weight when rewardMetric is "f1_format" or "em_format" (only sent then, so other histories are unchanged). @default 0.1 */
  readonly rewardFormatWeight?: number;
  /** Which trajectories earn the format term (only sent with a format metric and when not the default "when-scored"). @default "when-scored" */
  readonly rewardFormatCredit?: RewardFormatCredit;
  /** The reward of a trajectory without an answer (only sent when not the default 0). @default 0 */
  readonly rewardUnanswered?: number;
  /** A fork's parent and branch turn, kept in the record. */
  readonly forkOf?: ForkLineage;
}

export interface FinishTrajectoryResult {
  readonly reward: number;
  readonly rewardParts: Readonly<Record<string, number>>;
  readonly recordKey: string;
  /** False when a retry found the record already written. */
  readonly written: boolean;
}
