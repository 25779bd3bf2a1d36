/**
 * The demo's data decisions, pure: the split of its questions into held-out, warm-start and training
 * candidates (whole answer groups to one side, so that no held-out answer is ever trained on), the
 * contamination check of the held-out set against everything trained on, and the learnable band (the paired RL
 * gain is activities/evaluation/statistics.ts's pairedDifference).
 */
import { ContaminationIndex } from '../../activities/question-sets/contamination.js';
import { seededRandom } from '../../activities/evaluation/statistics.js';
import { normalizeAnswer } from '../../activities/reward/metrics.js';
import type { QuestionRow } from '../../workflows/contracts/learner.contract.js';
import { UsageError } from '../command.js';

export interface SplitCounts {
  readonly heldOut: number;
  readonly warmStart: number;
  readonly candidates: number;
  /**
   * Which overlap drops a held-out question: `ngram` (default) equal normalised text or ≥ 60 % of a
   * trained question's word 6-grams, which also catches a template sibling (same wording, another
   * entity and answer); `text` equal normalised text only, so held-out questions may share a trained
   * question's template (the answer groups stay apart either way).
   */
  readonly contamination?: 'ngram' | 'text';
}

export interface ContaminatedItem {
  readonly id: string;
  readonly question: string;
  readonly matched: string;
  readonly reason: string;
  readonly overlap: number;
}

export interface DemoSplit {
  readonly heldOut: QuestionRow[];
  readonly warmStart: QuestionRow[];
  readonly candidates: QuestionRow[];
  /** Held-out questions dropped because they overlap a question trained on. */
  readonly contaminated: ContaminatedItem[];
  /** Questions left over (beyond the requested counts). */
  readonly unused: number;
}

/** Fisher–Yates with the statistics module's seeded generator: the same seed gives the same order everywhere. */
export function seededShuffle<T>(items: readonly T[], seed: number): T[] {
  const random = seededRandom(seed);
  const out = [...items];
  for (let index = out.length - 1; index > 0; index -= 1) {
    const pick = Math.floor(random() * (index + 1));
    [out[index], out[pick]] = [out[pick]!, out[index]!];
  }
  return out;
}

const answerKey = (row: QuestionRow) => normalizeAnswer(row.answers[0] ?? '');

/**
 * Split `rows`: questions are grouped by their normalised first answer and whole groups go to one
 * side (held-out first, then warm-start, which needs gold paths, then training candidates), so a
 * held-out answer is never a training target. Then every held-out question is checked against the
 * warm-start and training questions (`ContaminationIndex`: equal normalised text, or ≥ 60 % of a
 * trained question's word 6-grams) and dropped when it overlaps one; the groups left over then refill
 * the held-out set (in the same seeded order, each question checked the same way) up to its count.
 */
export function splitQuestions(rows: readonly QuestionRow[], counts: SplitCounts, seed: number): DemoSplit {
  const groups = new Map<string, QuestionRow[]>();
  for (const row of rows) groups.set(answerKey(row), [...(groups.get(answerKey(row)) ?? []), row]);
  const order = seededShuffle([...groups.keys()].sort(), seed);
  const heldOut: QuestionRow[] = [];
  const warmStart: QuestionRow[] = [];
  const candidates: QuestionRow[] = [];
  const leftOver: QuestionRow[][] = [];
  for (const key of order) {
    const group = groups.get(key)!;
    const gold = group.filter((row) => row.goldTurns && row.goldTurns.length > 0);
    if (heldOut.length < counts.heldOut) heldOut.push(...group.slice(0, counts.heldOut - heldOut.length));
    else if (warmStart.length < counts.warmStart && gold.length > 0) warmStart.push(...gold.slice(0, counts.warmStart - warmStart.length));
    else if (candidates.length < counts.candidates) candidates.push(...group.slice(0, counts.candidates - candidates.length));
    else leftOver.push(group);
  }
  const trained = new ContaminationIndex().add('training', [...warmStart, ...candidates]);
  const contaminated: ContaminatedItem[] = [];
  const overlaps = (question: string) => {
    const verdict = trained.check(question);
    return verdict.contaminated && (counts.contamination !== 'text' || verdict.reason === 'normalised-text') ? verdict : undefined;
  };
  const clean = heldOut.filter((row) => {
    const verdict = overlaps(row.question);
    if (!verdict) return true;
    contaminated.push({
      id: row.id,
      question: row.question,
      matched: verdict.itemId ?? '',
      reason: verdict.reason ?? 'ngram',
      overlap: verdict.overlap ?? 1,
    });
    return false;
  });
  let unused = 0;
  for (const group of leftOver) {
    for (const row of group) {
      if (clean.length < counts.heldOut && !overlaps(row.question)) clean.push(row);
      else unused += 1;
    }
  }
  return { heldOut: clean, warmStart, candidates, contaminated, unused };
}

export interface Band {
  readonly low: number;
  readonly high: number;
}

/** Questions whose pass rate p lies strictly inside the band (low < p < high): neither always nor never solved. */
export function inBand<T extends { readonly passRate: number }>(probed: readonly T[], band: Band): T[] {
  return probed.filter((item) => item.passRate > band.low && item.passRate < band.high);
}

/** `rows` with the hop count of the same question in `source` where they have none (rows stored before they carried it). */
export function withHops(rows: readonly QuestionRow[], source: readonly QuestionRow[]): QuestionRow[] {
  const hops = new Map(source.flatMap((row) => (row.hops === undefined ? [] : [[row.id, row.hops] as const])));
  return rows.map((row) => (row.hops === undefined && hops.has(row.id) ? { ...row, hops: hops.get(row.id)! } : row));
}

/**
 * RL's questions before the hop filter: the training candidates, and with `--train-warm-start` the warm-start questions
 * as well, shuffled together with the run's seed (so the curriculum's first active set and the --no-curriculum order mix
 * both); without it the candidates in their order.
 */
export function trainingPool(candidates: readonly QuestionRow[], warmStart: readonly QuestionRow[] | null, seed: number): QuestionRow[] {
  return warmStart === null ? [...candidates] : seededShuffle([...candidates, ...warmStart], seed);
}

/**
 * The training pool of a run that continues earlier RL (`--rl-continue`): the questions the earlier runs did not draw
 * first, then those they drew, each part in the pool's order; so RL goes on to new questions before it repeats any.
 */
export function continuedPool(pool: readonly QuestionRow[], drawn: ReadonlySet<string>): QuestionRow[] {
  return [...pool.filter((row) => !drawn.has(row.id)), ...pool.filter((row) => drawn.has(row.id))];
}

/**
 * The training candidates RL may draw (`--train-hops`): those of the given hop counts (null: all), in their order.
 * None left is a UsageError naming the flag: a candidate without a hop count (a question set that does not carry one)
 * never matches.
 */
export function trainingCandidates(candidates: readonly QuestionRow[], hops: readonly number[] | null): QuestionRow[] {
  if (hops === null) return [...candidates];
  const kept = candidates.filter((row) => row.hops !== undefined && hops.includes(row.hops));
  if (kept.length === 0) {
    const counts = new Map<string, number>();
    for (const row of candidates) counts.set(String(row.hops ?? 'none'), (counts.get(String(row.hops ?? 'none')) ?? 0) + 1);
    throw new UsageError(
      `--train-hops ${hops.join(',')}: none of the ${candidates.length} training candidates has that hop count (hop counts: ${[...counts]
        .map(([count, rows]) => `${rows}× ${count}`)
        .join(', ')}); give one they have, or leave the flag out`,
    );
  }
  return kept;
}
