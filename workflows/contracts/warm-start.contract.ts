/**
 * The warm-start workflow (`longhaul warm-start`, issue 5 item 5): supervised fine-tuning on
 * validated trajectories, through the same agent loop, buffer and engine as RL. Two sources:
 * `gold` replays each question's gold solution path (`goldTurns`) through the real agent loop with
 * teacher forcing, so the observations come from the real tools and the reward proves the path
 * (the synthesis issue's gold paths, or the demo's grounded questions); `samples` is rejection
 * sampling: G sampled trajectories per question, kept when their reward clears `minReward`.
 */
import { defineQuery } from '@temporalio/workflow';
import type { TrajectorySettings } from './trajectory.contract.js';
import type { CheckHyperparametersInput } from './learner.contract.js';

export const warmStartWorkflowType = 'warmStart';

export const warmStartSources = ['gold', 'samples'] as const;
export type WarmStartSource = (typeof warmStartSources)[number];

export interface WarmStartSettings {
  /** Where the training trajectories come from. @default "gold" */
  readonly source: WarmStartSource;
  /** Trajectories per question with source "samples" (gold paths are replayed once). @default 4 */
  readonly samplesPerQuestion: number;
  /** A trajectory is kept for training when its reward is at least this. @default 1 */
  readonly minReward: number;
  /** Questions read from the dataset at most. @default 1000 */
  readonly maxQuestions: number;
  /** Trajectories in flight at once. @default 8 */
  readonly concurrency: number;
  /** Kept trajectories per sftStep (each step publishes one version). @default 256 */
  readonly trajectoriesPerStep: number;
}

export interface WarmStartInput {
  readonly runId: string;
  /** Blob key of the questions, JSONL of {"id","question","answers","goldTurns"?}. */
  readonly datasetKey: string;
  /** Policy version to start from. @default 0 */
  readonly startVersion?: number;
  readonly settings?: Partial<WarmStartSettings>;
  readonly trajectory?: TrajectorySettings;
  /** Passed through to sftStep (the engine validates it): learningRate, epochs, batchSize, trainable… */
  readonly hyperparameters?: Record<string, unknown>;
}

export interface WarmStartStep {
  readonly step: number;
  readonly version: number;
  readonly trajectories: number;
  readonly trainSeconds: number;
  readonly metrics: Record<string, unknown>;
}

export type WarmStartPhase = 'collecting' | 'training' | 'done';

export interface WarmStartState {
  readonly runId: string;
  readonly phase: WarmStartPhase;
  readonly source: WarmStartSource;
  readonly questions: number;
  /** Trajectories started / finished / kept (reward ≥ minReward). */
  readonly started: number;
  readonly finished: number;
  readonly kept: number;
  /** Finished trajectories of source "gold" whose question had no goldTurns (skipped, not run). */
  readonly skipped: number;
  readonly version: number;
  readonly steps: readonly WarmStartStep[];
}

export interface WarmStartResult extends WarmStartState {
  readonly startVersion: number;
  readonly finalVersion: number;
  readonly meanReward: number;
  readonly wallSeconds: number;
}

/** On the gpu-train queue. */
export interface SftActivities {
  checkHyperparameters(input: CheckHyperparametersInput): Promise<void>;
  sftStep(input: {
    runId: string;
    step: number;
    trajectoryIds: readonly string[];
    baseVersion: number;
    outputVersion: number;
    hyperparameters: Record<string, unknown>;
  }): Promise<{ version: number; metrics: Record<string, unknown> }>;
}

export const warmStartStateQuery = defineQuery<WarmStartState>('state');
