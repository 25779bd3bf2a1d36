/**
 * Whether a question overlaps an evaluation set (issue 10's contamination check). The index behind it
 * is `ContaminationIndex` (activities/question-sets/contamination.ts), built by
 * `composition/question-sets.ts` from the evaluation sets under the data root.
 */
export interface ContaminationVerdict {
  readonly contaminated: boolean;
  /** Which test matched: the SQuAD-normalised question text is equal, or enough word n-grams are shared. */
  readonly reason?: 'normalised-text' | 'ngram';
  /** The evaluation set of the closest item (as the index was given it, e.g. `r1searcher_eval_set/bamboogle.jsonl`). */
  readonly set?: string;
  readonly itemId?: string;
  /** The evaluation question matched. */
  readonly question?: string;
  /** The share of the evaluation question's word n-grams found in the question checked (1 for equal text). */
  readonly overlap?: number;
}

export interface ContaminationCheck {
  check(question: string): ContaminationVerdict;
}
