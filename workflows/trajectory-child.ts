/**
 * The input of a trajectory child, built in one place for every parent that samples rollouts of a
 * dataset question (the learner and the warm start): question fields, the run, the version to
 * generate with, the parent's trajectory settings, and a per-sample seed so that the G samples of a
 * group differ.
 */
import type { QuestionRow } from './contracts/learner.contract.js';
import type { TrajectoryInput, TrajectorySettings } from './contracts/trajectory.contract.js';
import { readableText } from './contracts/readable-text.js';

export interface ChildTrajectoryRequest {
  readonly question: QuestionRow;
  readonly runId: string;
  readonly datasetKey: string;
  readonly policyVersion: number;
  /** Index of the sample within its group: offsets the seed. */
  readonly sample: number;
  /**
   * Added to the seed as well: the learner's curriculum draws a question for several groups, and
   * each group must sample other seeds than the last (else a group at the same version repeats one).
   */
  readonly seedOffset?: number;
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
    options: { ...(settings?.options ?? {}), seed: (settings?.options?.seed ?? 0) + (request.seedOffset ?? 0) + request.sample },
    ...(settings?.rewardMetric ? { rewardMetric: settings.rewardMetric } : {}),
    ...(settings?.rewardFormatWeight !== undefined ? { rewardFormatWeight: settings.rewardFormatWeight } : {}),
    ...(settings?.rewardFormatCredit !== undefined ? { rewardFormatCredit: settings.rewardFormatCredit } : {}),
    ...(settings?.rewardUnanswered !== undefined ? { rewardUnanswered: settings.rewardUnanswered } : {}),
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

/** The patch behind the children's static summary and details (histories recorded before it replay without them). */
export const trajectoryMetadataPatch = 'trajectory-metadata';

/** Temporal's limit on a static summary, in bytes; the summary is clipped by characters well inside it. */
const summaryChars = 150;

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * What a trajectory is and where to look, for the Web UI (static summary: the list's one line;
 * static details: Markdown on the workflow's page). Pure, so it runs in workflow code.
 */
export function trajectoryMetadata(input: {
  readonly workflowId: string;
  readonly question: string;
  readonly questionId?: string;
  readonly dataset?: string;
  readonly runId?: string;
  readonly policyVersion?: number;
  readonly sample?: number;
  readonly answers?: readonly string[];
}): { staticSummary: string; staticDetails: string } {
  const label = input.questionId ? `${input.questionId}: ` : '';
  const staticSummary = oneLine(`${label}${input.question}`, summaryChars);
  const code = (text: string) => `\`${text.replace(/`/g, "'")}\``;
  const where = [
    input.dataset ? `dataset ${code(input.dataset)}` : null,
    input.questionId ? `question ${code(input.questionId)}` : null,
    input.sample !== undefined ? `sample ${input.sample}` : null,
    input.runId ? `run ${code(input.runId)}` : null,
    input.policyVersion !== undefined ? `started on policy v${input.policyVersion}` : null,
  ].filter((part) => part !== null);
  const filters = [
    input.runId ? `LonghaulRunId = '${input.runId}'` : null,
    input.questionId ? `LonghaulQuestionId = '${input.questionId}'` : null,
  ].filter((part) => part !== null);
  const staticDetails = [
    `**Trajectory** of the question: ${oneLine(input.question, 2000)}`,
    input.answers?.length ? `**Gold answers:** ${input.answers.map((answer) => oneLine(answer, 200)).join(' | ')}` : null,
    where.length ? where.join(' · ') : null,
    `**Read it:** ${code(`longhaul show ${input.workflowId}`)} prints every turn, tool call and observation once it has finished;` +
      (input.runId ? ` ${code(`longhaul report --run ${input.runId}`)} links its page.` : ' the run report links its page.'),
    filters.length ? `**Its siblings:** ${code(filters.join(' AND '))} in the workflow list's query box.` : null,
  ]
    .filter((line) => line !== null)
    .join('\n\n');
  // No NUL or unpaired surrogate from a question or an id reaches the server (identical for readable text).
  return { staticSummary: readableText(staticSummary), staticDetails: readableText(staticDetails) };
}
