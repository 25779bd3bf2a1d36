/**
 * The demo's workflow-driving steps: synthesis runs, evaluations (held-out, reference sets, the band
 * probe) and their per-question scores and behaviour, each under a workflow id derived from the run
 * id so that `--resume` finds it again (cli/demo/manifest.ts startOrAttach).
 */
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { analyseTrajectory, behaviourByVersion, type VersionBehaviour } from '../../activities/analysis/behaviour.js';
import { loadTrajectoryView } from '../../activities/analysis/trajectory-view.js';
import { questionScores } from '../../activities/evaluation/compare.js';
import { mean, type PerQuestionScore } from '../../activities/evaluation/statistics.js';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import { questionHops } from '../../activities/question-sets/question-set.js';
import { evaluationResultSchema, type EvaluationResult } from '../../activities/ports/evaluation-result.schema.js';
import {
  evaluationKeys,
  evaluationStateQuery,
  evaluationWorkflowType,
  type EvaluationInput,
  type EvaluationOutcome,
  type EvaluationState,
} from '../../workflows/contracts/evaluation.contract.js';
import type { QuestionRow } from '../../workflows/contracts/learner.contract.js';
import {
  synthesisRunStateQuery,
  synthesisRunWorkflowType,
  type SynthesisRunResult,
  type SynthesisRunState,
} from '../../workflows/contracts/synthesis.contract.js';
import type { TrajectorySettings } from '../../workflows/contracts/trajectory.contract.js';
import { followWorkflow } from '../follow-workflow.js';
import { progressBar } from '../progress.js';
import { startOrAttach } from './manifest.js';
import type { SynthesisPlan } from './plan.js';

export interface StageContext {
  readonly client: Client;
  readonly blobs: BlobStore;
  readonly taskQueue: string;
  readonly runId: string;
  readonly commit?: string;
}

const attachNote = (how: string) =>
  how === 'started' ? '' : ` (${how === 'running' ? 're-attached to the running workflow' : 'already completed'})`;

export interface SynthesizedSet {
  readonly hops: number;
  readonly datasetId: string;
  readonly blobKey: string;
  readonly candidates: number;
  readonly accepted: number;
  readonly rejectionsByReason: Readonly<Record<string, number>>;
  readonly wallSeconds: number;
  /** Set when the dataset was made by an earlier demo run and reused (cli/demo/synthesis-cache.ts): that run's id. */
  readonly reusedFrom?: string;
}

/** One synthesisRun per hop count (`<run>-synth-h<hops>`), followed with a progress bar. */
export async function synthesize(context: StageContext, plan: SynthesisPlan): Promise<SynthesizedSet[]> {
  const sets: SynthesizedSet[] = [];
  for (const hops of plan.hops) {
    const datasetId = `${context.runId}-synth-h${hops}`;
    const { handle, how } = await startOrAttach(context.client, synthesisRunWorkflowType, {
      taskQueue: context.taskQueue,
      workflowId: `synthesis-${datasetId}`,
      staticSummary: `demo synthesis ${datasetId} (${plan.candidatesPerHop} candidates, ${hops} hops)`,
      args: [
        {
          datasetId,
          count: plan.candidatesPerHop,
          seed: plan.seed + hops,
          concurrency: plan.concurrency,
          settings: {
            targetHops: hops,
            targetFuzzes: plan.fuzzes,
            difficultySamples: plan.difficultySamples,
            difficultyThreshold: plan.difficultyThreshold,
          },
        },
      ],
    });
    const bar = progressBar(`synthesis, ${hops} hop${hops > 1 ? 's' : ''}${attachNote(how)}`, plan.candidatesPerHop);
    const result = await followWorkflow<SynthesisRunResult, SynthesisRunState>(handle, {
      query: synthesisRunStateQuery,
      onState: (state) => bar.update(state.finished, `${state.accepted} accepted · ${state.started - state.finished} in flight`),
    });
    bar.finish(`${result.accepted}/${result.candidates} accepted`);
    sets.push({
      hops,
      datasetId,
      blobKey: result.blobKey,
      candidates: result.candidates,
      accepted: result.accepted,
      rejectionsByReason: result.rejectionsByReason,
      wallSeconds: result.wallSeconds,
    });
  }
  return sets;
}

/** The question rows of a published synthesized dataset (only the fields training and evaluation read). */
export async function synthesizedRows(blobs: BlobStore, blobKey: string): Promise<QuestionRow[]> {
  return (await blobs.get(blobKey))
    .toString('utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const row = JSON.parse(line) as QuestionRow & Record<string, unknown>;
      const hops = questionHops(row);
      return {
        id: row.id,
        question: row.question,
        answers: row.answers,
        ...(row.goldTurns ? { goldTurns: row.goldTurns } : {}),
        ...(hops !== undefined ? { hops } : {}),
      };
    });
}

export const jsonl = (rows: readonly QuestionRow[]) => rows.map((row) => JSON.stringify(row)).join('\n') + '\n';

/** A question's mean EM over its samples (`score`: the pass rate, for the band probe) and mean tool calls. */
export interface QuestionScore extends PerQuestionScore {
  readonly toolCalls: number;
}

export interface StageEvaluation {
  readonly resultId: string;
  readonly dataset: string;
  readonly questions: number;
  readonly k: number;
  readonly policyVersion: number;
  readonly em: number;
  readonly emCi95: readonly [number, number];
  readonly f1: number;
  readonly passAtK: number;
  readonly meanTurns: number;
  readonly meanToolCalls: number;
  readonly seconds: number;
  readonly perQuestion: readonly QuestionScore[];
  /** Tool calls per sample → samples. */
  readonly toolCallsDistribution: Readonly<Record<string, number>>;
  /** ASearcher's expert behaviours over the samples (activities/analysis/behaviour.ts); null when no record could be read. */
  readonly behaviour: VersionBehaviour | null;
}

export interface EvaluationRequest {
  readonly resultId: string;
  readonly dataset: string;
  readonly rows: readonly QuestionRow[];
  readonly k: number;
  readonly trajectory: TrajectorySettings;
  readonly policyVersion: number;
  readonly seed: number;
  readonly concurrency: number;
  readonly label: string;
}

/** Run (or re-attach to) the evaluation workflow `evaluation-<resultId>` and read its result back per question. */
export async function evaluate(context: StageContext, request: EvaluationRequest): Promise<StageEvaluation> {
  const text = jsonl(request.rows);
  const datasetVersion = createHash('sha256').update(text).digest('hex');
  const input: EvaluationInput = {
    resultId: request.resultId,
    datasetKey: evaluationKeys.dataset(datasetVersion),
    dataset: request.dataset,
    datasetVersion,
    questions: request.rows.length,
    k: request.k,
    concurrency: request.concurrency,
    policyVersion: request.policyVersion,
    trajectory: request.trajectory,
    seed: request.seed,
    runId: context.runId,
    ...(context.commit ? { commit: context.commit } : {}),
  };
  await context.blobs.put(input.datasetKey, text, 'application/x-ndjson');
  const { handle, how } = await startOrAttach(context.client, evaluationWorkflowType, {
    taskQueue: context.taskQueue,
    workflowId: `evaluation-${request.resultId}`,
    staticSummary: `demo ${request.label}: ${request.dataset}, ${request.rows.length} questions × ${request.k}, v${request.policyVersion}`,
    args: [input],
  });
  const bar = progressBar(`${request.label}${attachNote(how)}`, request.rows.length);
  const outcome = await followWorkflow<EvaluationOutcome, EvaluationState>(handle, {
    query: evaluationStateQuery,
    onState: (state) => bar.update(state.done, `${state.inflight} trajectories running`),
  });
  bar.finish(`${outcome.seconds.toFixed(0)} s`);
  const result = evaluationResultSchema.parse(JSON.parse((await context.blobs.get(outcome.resultKey)).toString('utf8')));
  return {
    resultId: outcome.resultId,
    dataset: outcome.dataset,
    questions: outcome.questions,
    k: outcome.k,
    policyVersion: outcome.policyVersion,
    em: outcome.avgAtK.em ?? 0,
    emCi95: outcome.avgAtKCi95.em ?? [outcome.avgAtK.em ?? 0, outcome.avgAtK.em ?? 0],
    f1: outcome.avgAtK.f1_flashrag ?? 0,
    passAtK: outcome.passAtK.em ?? 0,
    meanTurns: outcome.meanTurns,
    meanToolCalls: outcome.meanToolCalls,
    seconds: outcome.seconds,
    perQuestion: perQuestionScores(result),
    toolCallsDistribution: toolCallsDistribution(result),
    behaviour: await behaviourOf(context.blobs, result),
  };
}

export function perQuestionScores(result: EvaluationResult): QuestionScore[] {
  const em = questionScores(result, 'em');
  return result.perQuestion.map((question, index) => ({
    ...em[index]!,
    toolCalls: mean(question.samples.map((sample) => sample.toolCalls)),
  }));
}

function toolCallsDistribution(result: EvaluationResult): Record<string, number> {
  const tally: Record<string, number> = {};
  for (const question of result.perQuestion)
    for (const sample of question.samples) tally[String(sample.toolCalls)] = (tally[String(sample.toolCalls)] ?? 0) + 1;
  return tally;
}

/** The behaviour measures over every sample's trajectory record (one row: a stage evaluates one version). */
async function behaviourOf(blobs: BlobStore, result: EvaluationResult): Promise<VersionBehaviour | null> {
  const ids = result.perQuestion.flatMap((question) => question.samples.map((sample) => sample.trajectoryId));
  const behaviours = [];
  for (const id of ids) {
    try {
      behaviours.push(analyseTrajectory(await loadTrajectoryView(blobs, id)));
    } catch {
      // A record that cannot be read leaves the trajectory out of the behaviour measures (the count says so).
    }
  }
  const rows = behaviourByVersion(behaviours);
  if (rows.length === 0) return null;
  if (rows.length === 1) return rows[0]!;
  // Several versions within one stage (a version published mid-evaluation): the newest stands for the stage.
  return rows.at(-1)!;
}
