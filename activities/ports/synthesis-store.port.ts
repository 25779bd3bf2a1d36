/** Port: where synthesis runs keep their datasets, candidates and check verdicts (Postgres). */
import type { CheckVerdict, RecordCandidateInput } from '../../workflows/contracts/synthesis.contract.js';

export interface SynthesisDatasetRow {
  readonly datasetId: string;
  readonly synthesizer: string;
  readonly seed: number;
  readonly settings: Readonly<Record<string, unknown>>;
  readonly status: 'running' | 'published';
  readonly blobKey: string | null;
  readonly contentHash: string | null;
  readonly items: number | null;
  readonly statistics: Readonly<Record<string, unknown>> | null;
}

/**
 * One task's row: the workflow's `recordCandidate` input (workflows/contracts/synthesis.contract.ts)
 * with the candidate flattened to its question, answer and JSON (chain, facts, gold path).
 */
export type SynthesisCandidateRow = Pick<
  RecordCandidateInput,
  'datasetId' | 'taskIndex' | 'workflowId' | 'accepted' | 'reason' | 'seconds' | 'tokens'
> & {
  readonly question: string | null;
  readonly answer: string | null;
  /** The candidate's chain, facts, gold path and check details, as JSON. */
  readonly candidate: Readonly<Record<string, unknown>>;
};

/** A check's verdict (the contract's CheckVerdict) with its workflow; `check` as stored (any name read back). */
export type SynthesisVerdictRow = Omit<CheckVerdict, 'check'> & { readonly workflowId: string; readonly check: string };

export interface SynthesisStore {
  /** Creates the dataset row, or leaves an existing one as it is (a retry, a resumed run). */
  beginDataset(row: Pick<SynthesisDatasetRow, 'datasetId' | 'synthesizer' | 'seed' | 'settings'>): Promise<void>;
  dataset(datasetId: string): Promise<SynthesisDatasetRow | null>;
  /** Writes a verdict; a retry overwrites it with the same verdict. */
  recordVerdict(row: SynthesisVerdictRow): Promise<void>;
  verdicts(workflowIds: readonly string[]): Promise<SynthesisVerdictRow[]>;
  /** Writes a candidate once per (dataset, task); a retry keeps the first. */
  recordCandidate(row: SynthesisCandidateRow): Promise<void>;
  candidates(datasetId: string): Promise<SynthesisCandidateRow[]>;
  /** Marks a dataset published; refuses (throws) when it was published with different content. */
  publish(
    datasetId: string,
    fields: { blobKey: string; contentHash: string; items: number; statistics: Record<string, unknown> },
  ): Promise<void>;
  /** Every dataset, newest first. */
  list(): Promise<SynthesisDatasetRow[]>;
}
