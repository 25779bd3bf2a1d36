/**
 * The contamination index of issue 10: does a candidate question overlap any evaluation question?
 * Two tests, both on the SQuAD-normalised text the reward uses (`normalizeAnswer`: lowercase, no
 * accents, punctuation or articles, single spaces):
 *  - `normalised-text`: the normalised texts are equal;
 *  - `ngram`: the candidate contains at least `threshold` of the evaluation question's word n-grams
 *    (default n = 6 words, threshold 0.6). Evaluation questions shorter than n words have no n-grams
 *    and are caught only by equal text. The defaults were chosen on the real sets (docs/DATASETS.md):
 *    an evaluation question pasted into a longer one, or with a clause appended, is always caught; a
 *    changed last word 95 % of the time; while only 1.4 % of held-out questions of the same sets
 *    (2Wiki's templates such as "what is place of birth of director of film X" with another X, and
 *    MuSiQue compositions sharing a sub-question) reach the threshold. One-word edits in the middle of
 *    a question are mostly not caught: n-grams cannot tell them from a template with another entity.
 */
import { normalizeAnswer } from '../reward/metrics.js';
import type { ContaminationCheck, ContaminationVerdict } from '../ports/contamination.port.js';
import type { QuestionItem } from './question-set.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

export interface ContaminationOptions {
  /** Words per n-gram. @default 6 */
  readonly n?: number;
  /** Fraction of an evaluation question's n-grams found in the candidate that counts as contaminated, in (0, 1]. @default 0.6 */
  readonly threshold?: number;
}

interface IndexedItem {
  readonly set: string;
  readonly id: string;
  readonly question: string;
  readonly grams: number;
}

export const defaultContaminationN = 6;
export const defaultContaminationThreshold = 0.6;

export class ContaminationIndex implements ContaminationCheck {
  readonly n: number;
  readonly threshold: number;
  private readonly items: IndexedItem[] = [];
  private readonly byText = new Map<string, number>();
  private readonly byGram = new Map<string, number[]>();
  private readonly setSizes = new Map<string, number>();

  constructor(options: ContaminationOptions = {}) {
    this.n = options.n ?? defaultContaminationN;
    this.threshold = options.threshold ?? defaultContaminationThreshold;
    if (!Number.isInteger(this.n) || this.n < 1)
      throw new LonghaulError(errorTypes.invalidInput, `expected an integer ≥ 1, got ${this.n}`, { field: 'n' });
    if (!(this.threshold > 0 && this.threshold <= 1))
      throw new LonghaulError(errorTypes.invalidInput, `expected a number in (0, 1], got ${this.threshold}`, { field: 'threshold' });
  }

  /** Index a set's questions under the set's name (the first item with a given normalised text wins). */
  add(set: string, items: readonly Pick<QuestionItem, 'id' | 'question'>[]): this {
    for (const item of items) {
      const words = normalizeAnswer(item.question).split(' ').filter(Boolean);
      if (words.length === 0) continue;
      const grams = wordGrams(words, this.n);
      const index = this.items.length;
      this.items.push({ set, id: item.id, question: item.question, grams: grams.size });
      const normalized = words.join(' ');
      if (!this.byText.has(normalized)) this.byText.set(normalized, index);
      for (const gram of grams) {
        const postings = this.byGram.get(gram);
        if (postings === undefined) this.byGram.set(gram, [index]);
        else postings.push(index);
      }
    }
    this.setSizes.set(set, (this.setSizes.get(set) ?? 0) + items.length);
    return this;
  }

  /** What the index holds, for a verdict's provenance. */
  describe(): { n: number; threshold: number; questions: number; sets: Record<string, number> } {
    return { n: this.n, threshold: this.threshold, questions: this.items.length, sets: Object.fromEntries(this.setSizes) };
  }

  check(question: string): ContaminationVerdict {
    const words = normalizeAnswer(question).split(' ').filter(Boolean);
    if (words.length === 0) return { contaminated: false, overlap: 0 };
    const exact = this.byText.get(words.join(' '));
    if (exact !== undefined) return this.verdict('normalised-text', exact, 1);
    const grams = wordGrams(words, this.n);
    const shared = new Map<number, number>();
    for (const gram of grams) for (const index of this.byGram.get(gram) ?? []) shared.set(index, (shared.get(index) ?? 0) + 1);
    let best = -1;
    let bestOverlap = 0;
    for (const [index, count] of shared) {
      const overlap = count / this.items[index]!.grams;
      if (overlap > bestOverlap) {
        best = index;
        bestOverlap = overlap;
      }
    }
    if (best >= 0 && bestOverlap >= this.threshold) return this.verdict('ngram', best, bestOverlap);
    return { contaminated: false, overlap: bestOverlap };
  }

  private verdict(reason: 'normalised-text' | 'ngram', index: number, overlap: number): ContaminationVerdict {
    const item = this.items[index]!;
    return { contaminated: true, reason, set: item.set, itemId: item.id, question: item.question, overlap };
  }
}

function wordGrams(words: readonly string[], n: number): Set<string> {
  const grams = new Set<string>();
  for (let start = 0; start + n <= words.length; start += 1) grams.add(words.slice(start, start + n).join(' '));
  return grams;
}
