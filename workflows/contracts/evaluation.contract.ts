/**
 * The evaluation workflow (`longhaul eval`): k trajectory children per question with bounded
 * concurrency; each finished question is scored and stored as a blob at once (resumable per item),
 * and the result (activities/ports/evaluation-result.schema.ts) is written at the end.
 */
import { defineQuery } from '@temporalio/workflow';
import type { QuestionRow } from './learner.contract.js';
import type { StopReason, TrajectorySettings } from './trajectory.contract.js';

export const evaluationWorkflowType = 'evaluation';

export interface EvaluationInput {
  /** The result's id; also the workflow id's tail and the scope of its frozen observations. */
  readonly resultId: string;
  /** Blob of the question set, JSONL of {"id","question","answers"}. */
  readonly datasetKey: string;
  /** The dataset's name, for the result and the trajectories' search attribute. */
  readonly dataset: string;
  /** sha256 of the normalised rows evaluated. */
  readonly datasetVersion: string;
  /** How many rows of the set to evaluate (the first N). */
  readonly questions: number;
  /** Samples per question. @default 1 */
  readonly k?: number;
  /** Trajectories in flight at once (at least k). @default 8 */
  readonly concurrency?: number;
  readonly policyVersion: number;
  /** Limits and options of every sample (temperature 0 = greedy). */
  readonly trajectory?: TrajectorySettings;
  /** Grade every answer with the LLM judge of the agent worker too. @default false */
  readonly judge?: boolean;
  /** Base seed: sample j of question i samples with seed + i·k + j; the bootstrap uses it too. @default 0 */
  readonly seed?: number;
  /** The run (learner, demo) the evaluation belongs to. */
  readonly runId?: string;
  /** The result this run reproduces: its frozen observations and corpus version are used. */
  readonly reproduces?: string;
  /** The corpus version to look observations up under (a reproduction passes the original's). @default the current one */
  readonly corpusVersion?: string;
  /** git commit of the code that started it. */
  readonly commit?: string;
  /** Internal: carried across continue-as-new. */
  readonly carried?: EvaluationCarried;
}

export interface EvaluationCarried {
  /** Next question index to start. */
  readonly next: number;
  /** Questions scored so far. */
  readonly done: number;
  readonly startedAtMs: number;
  readonly corpusVersion: string;
}

export interface EvaluationState {
  readonly resultId: string;
  readonly questions: number;
  readonly done: number;
  /** Trajectories running now. */
  readonly inflight: number;
}

/** One finished sample, as the workflow hands it to scoring. */
export interface EvaluationSampleOutcome {
  readonly trajectoryId: string;
  readonly answer: string | null;
  readonly turns: number;
  readonly stopReason: StopReason;
  readonly recordKey: string;
  readonly versionsUsed: readonly number[];
}

export interface ScoreQuestionInput {
  readonly resultId: string;
  readonly index: number;
  readonly question: QuestionRow;
  readonly samples: readonly EvaluationSampleOutcome[];
  readonly judge: boolean;
}

export interface EvaluationEnvironmentInput {
  readonly protocol: string;
  readonly tools: readonly string[];
  readonly judge: boolean;
}

export interface EvaluationEnvironmentResult {
  readonly corpusVersion: string;
  readonly promptTemplateHash: string;
  readonly judge?: { readonly model: string; readonly baseUrl: string; readonly promptHash: string };
}

export interface FinishEvaluationInput {
  readonly resultId: string;
  readonly dataset: string;
  readonly datasetVersion: string;
  readonly questions: number;
  readonly k: number;
  readonly policyVersion: number;
  readonly seed: number;
  readonly runId?: string;
  readonly reproduces?: string;
  readonly seconds: number;
  readonly environment: {
    readonly corpusVersion: string;
    readonly promptTemplateHash: string;
    readonly tools: unknown;
    readonly sampling: { readonly temperature: number; readonly topP: number; readonly maxNewTokens: number; readonly seed: number };
    readonly judge?: { readonly model: string; readonly baseUrl: string; readonly promptHash: string };
    readonly commit?: string;
  };
}

/** The summary the workflow returns (evaluationSummarySchema's shape). */
export interface EvaluationOutcome {
  readonly resultId: string;
  readonly dataset: string;
  readonly questions: number;
  readonly k: number;
  readonly policyVersion: number;
  readonly avgAtK: Readonly<Record<string, number>>;
  readonly avgAtKCi95: Readonly<Record<string, readonly [number, number]>>;
  readonly passAtK: Readonly<Record<string, number>>;
  readonly meanTurns: number;
  readonly meanToolCalls: number;
  readonly stopReasons: Readonly<Record<string, number>>;
  readonly seconds: number;
  readonly resultKey: string;
}

/** Agent-queue activities of the evaluation workflow. */
export interface EvaluationActivities {
  evaluationEnvironment(input: EvaluationEnvironmentInput): Promise<EvaluationEnvironmentResult>;
  /** True when question `index` was scored already (a restarted evaluation skips it). */
  evaluationQuestionDone(input: { resultId: string; index: number }): Promise<boolean>;
  /** Score a question's samples (answer metrics, the judge when asked) and store them; idempotent. */
  scoreEvaluationQuestion(input: ScoreQuestionInput): Promise<{ stored: boolean }>;
  /** Statistics over every stored question; writes the result blob and the evaluation_results row once. */
  finishEvaluation(input: FinishEvaluationInput): Promise<EvaluationOutcome>;
}

export const evaluationStateQuery = defineQuery<EvaluationState>('evaluationState');

/** The run id an evaluation's trajectories carry (they stay out of every training buffer). */
export const evaluationRunId = (resultId: string) => `eval-${resultId}`;

/**
 * The workflow (and trajectory) id of an evaluation's sample: under its own run id, so it can never be a
 * learner's or a warm start's `<run>-q<i>-s<j>` when the result is named like that run (a shared id
 * replays the other trajectory: see finishTrajectory).
 */
export const evaluationTrajectoryId = (resultId: string, index: number, sample: number) =>
  `${evaluationRunId(resultId)}-q${index}-s${sample}`;

/** Blob keys of an evaluation. */
export const evaluationKeys = {
  result: (resultId: string) => `evaluations/${resultId}/result.json`,
  question: (resultId: string, index: number) => `evaluations/${resultId}/questions/${String(index).padStart(6, '0')}.json`,
  dataset: (datasetVersion: string) => `evaluations/datasets/${datasetVersion}.jsonl`,
};
