/** Port: the evaluation_results rows (migration 0060); the full result is the blob at resultKey. */
import type { EvaluationSummary } from './evaluation-result.schema.js';

export interface EvaluationResultRow {
  readonly resultId: string;
  readonly dataset: string;
  readonly datasetVersion: string;
  readonly policyVersion: number;
  readonly k: number;
  readonly questions: number;
  /** '' when the evaluation belongs to no run. */
  readonly runId: string;
  /** '' when unknown. */
  readonly gitCommit: string;
  readonly summary: EvaluationSummary;
  readonly resultKey: string;
}

export interface EvaluationResultStore {
  /** Insert once; a second insert of the same id changes nothing. */
  insert(row: EvaluationResultRow): Promise<{ inserted: boolean }>;
  get(resultId: string): Promise<EvaluationResultRow | undefined>;
  /** Newest first. */
  list(filter?: { dataset?: string; runId?: string; limit?: number }): Promise<EvaluationResultRow[]>;
  /** The policy versions any evaluation measured (without reading the summaries). */
  evaluatedVersions(): Promise<number[]>;
}
