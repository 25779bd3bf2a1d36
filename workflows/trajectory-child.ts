/**
 * The input of a trajectory child, built in one place for every parent that samples rollouts of a
 * dataset question (the learner and the warm start): question fields, the run, the version to
 * generate with, the parent's trajectory settings, and a per-sample seed so that the G samples of a
 * group differ.
 */
import type { QuestionRow } from './contracts/learner.contract.js';
import type { TrajectoryInput, TrajectorySettings } from './contracts/trajectory.contract.js';

export interface ChildTrajectoryRequest {
  readonly question: QuestionRow;
  readonly runId: string;
  readonly datasetKey: string;
  readonly policyVersion: number;
  /** Index of the sample within its group: offsets the seed. */
  readonly sample: number;
  readonly settings?: TrajectorySettings;
  /** Workflow id to signal with the finished record (the learner). */
  readonly reportTo?: string;
  /** Teacher forcing of a gold path (the warm start). */
  readonly forcedTurns?: readonly string[];
}

export function childTrajectoryInput(request: ChildTrajectoryRequest): TrajectoryInput {
  const { question, settings } = request;
  return {
    question: question.question,
    answers: question.answers,
    questionId: question.id,
    dataset: request.datasetKey,
    runId: request.runId,
    policyVersion: request.policyVersion,
    ...(request.reportTo !== undefined ? { reportTo: request.reportTo } : {}),
    ...(settings?.limits ? { limits: settings.limits } : {}),
    options: { ...(settings?.options ?? {}), seed: (settings?.options?.seed ?? 0) + request.sample },
    ...(settings?.rewardMetric ? { rewardMetric: settings.rewardMetric } : {}),
    ...(request.forcedTurns ? { forcedTurns: request.forcedTurns } : {}),
    ...(settings?.frozenObservations ? { frozenObservations: settings.frozenObservations } : {}),
  };
}

/**
 * The temperature RL rollouts sample at when the run does not set one. Greedy rollouts (T = 0) make
 * the G samples of a group the same text, so every group has zero advantage and nothing is learned;
 * the engine scores the trainer's logits at the rollout's temperature (gpu/train/samples.ts), so the
 * behaviour weights stay right at any T.
 */
export const rlRolloutTemperature = 1;

/** The run's trajectory settings with a sampling temperature: the run's own, or rlRolloutTemperature. */
export function withRolloutSampling(settings: TrajectorySettings | undefined): TrajectorySettings {
  if (settings?.options?.temperature !== undefined) return settings;
  return { ...(settings ?? {}), options: { ...(settings?.options ?? {}), temperature: rlRolloutTemperature } };
}
