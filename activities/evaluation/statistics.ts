/**
 * The statistics of an evaluation (pure, no I/O): per-sample answer metrics, Avg@k with a seeded
 * 95 % bootstrap interval over questions, and Pass@k. Never best-of-k: a question's score is the mean
 * of its k samples, and the headline is the mean over questions.
 */
import { coverExactMatch, exactMatch, tokenF1, tokenSetF1 } from '../reward/metrics.js';
import type { EvaluationMetric } from '../ports/evaluation-result.schema.js';

export type MetricScores = Partial<Record<EvaluationMetric, number>>;

/** The answer metrics of one sample (the judge's comes separately); no answer scores 0 on each. */
export function answerScores(answer: string | null, golds: readonly string[]): MetricScores {
  if (answer === null) return { em: 0, f1_asearcher: 0, f1_flashrag: 0, cover_em: 0 };
  return {
    em: exactMatch(answer, golds),
    f1_asearcher: tokenSetF1(answer, golds),
    f1_flashrag: tokenF1(answer, golds),
    cover_em: coverExactMatch(answer, golds),
  };
}

/** mulberry32: a small seeded generator, so the same seed gives the same interval on every machine. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** The q-quantile of sorted values, linear between neighbours (numpy's default). */
function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  const position = (sorted.length - 1) * q;
  const below = Math.floor(position);
  const above = Math.min(sorted.length - 1, below + 1);
  return sorted[below]! + (sorted[above]! - sorted[below]!) * (position - below);
}

export interface BootstrapOptions {
  readonly seed: number;
  /** Resamples drawn. @default 2000 */
  readonly resamples?: number;
  /** Coverage of the interval. @default 0.95 */
  readonly level?: number;
}

/**
 * Percentile bootstrap interval of the mean of `values` (one value per question): questions are
 * resampled with replacement `resamples` times with a seeded generator. One question, or none, gives
 * a zero-width interval at the mean.
 */
export function bootstrapInterval(values: readonly number[], options: BootstrapOptions): [number, number] {
  const center = mean(values);
  if (values.length < 2) return [center, center];
  const random = seededRandom(options.seed);
  const resamples = options.resamples ?? 2000;
  const level = options.level ?? 0.95;
  const means: number[] = [];
  for (let draw = 0; draw < resamples; draw += 1) {
    let sum = 0;
    for (let pick = 0; pick < values.length; pick += 1) sum += values[Math.floor(random() * values.length)]!;
    means.push(sum / values.length);
  }
  means.sort((a, b) => a - b);
  return [quantile(means, (1 - level) / 2), quantile(means, 1 - (1 - level) / 2)];
}

export interface PerQuestionScore {
  readonly questionId: string;
  /** The question's mean over its samples of one metric. */
  readonly score: number;
}

export interface PairedDifference {
  /** Questions scored on both sides. */
  readonly n: number;
  /** Mean over those questions of after − before. */
  readonly mean: number;
  /** 95 % percentile bootstrap interval of that mean, resampling questions (the pairs stay together). */
  readonly ci95: [number, number];
}

/**
 * The gain of `after` over `before` question by question (a paired difference), with its bootstrap
 * interval. Questions are paired by id; one scored on one side only is left out. Pairing removes the
 * spread between questions, so the interval is far narrower than the two Avg@k intervals suggest.
 */
export function pairedDifference(before: readonly PerQuestionScore[], after: readonly PerQuestionScore[], seed: number): PairedDifference {
  const earlier = new Map(before.map((item) => [item.questionId, item.score]));
  const differences = after.filter((item) => earlier.has(item.questionId)).map((item) => item.score - earlier.get(item.questionId)!);
  return { n: differences.length, mean: mean(differences), ci95: bootstrapInterval(differences, { seed }) };
}

export interface ScoredSample {
  readonly scores: MetricScores;
  readonly turns: number;
  readonly toolCalls: number;
  readonly stopReason: string;
}

export interface ScoredQuestion {
  readonly samples: readonly ScoredSample[];
}

export interface EvaluationStatistics {
  readonly avgAtK: MetricScores;
  readonly avgAtKCi95: Partial<Record<EvaluationMetric, [number, number]>>;
  readonly passAtK: MetricScores;
  readonly meanTurns: number;
  readonly meanToolCalls: number;
  readonly stopReasons: Record<string, number>;
}

/**
 * Avg@k: per question the mean over its samples, then the mean over questions, with a bootstrap
 * interval over questions. Pass@k: the share of questions with at least one sample scoring 1
 * (for F1, a perfect match). A metric appears only when every sample has it (the judge may be off).
 */
export function evaluationStatistics(questions: readonly ScoredQuestion[], options: BootstrapOptions): EvaluationStatistics {
  const samples = questions.flatMap((question) => question.samples);
  const metrics = new Set<EvaluationMetric>();
  for (const sample of samples) for (const metric of Object.keys(sample.scores) as EvaluationMetric[]) metrics.add(metric);
  const avgAtK: MetricScores = {};
  const avgAtKCi95: Partial<Record<EvaluationMetric, [number, number]>> = {};
  const passAtK: MetricScores = {};
  const scored = questions.filter((question) => question.samples.length > 0);
  for (const metric of [...metrics].sort()) {
    if (!samples.every((sample) => sample.scores[metric] !== undefined)) continue;
    const perQuestion = scored.map((question) => mean(question.samples.map((sample) => sample.scores[metric]!)));
    avgAtK[metric] = mean(perQuestion);
    avgAtKCi95[metric] = bootstrapInterval(perQuestion, options);
    passAtK[metric] = mean(scored.map((question) => (question.samples.some((sample) => sample.scores[metric]! >= 1) ? 1 : 0)));
  }
  const stopReasons: Record<string, number> = {};
  for (const sample of samples) stopReasons[sample.stopReason] = (stopReasons[sample.stopReason] ?? 0) + 1;
  return {
    avgAtK,
    avgAtKCi95,
    passAtK,
    meanTurns: mean(samples.map((sample) => sample.turns)),
    meanToolCalls: mean(samples.map((sample) => sample.toolCalls)),
    stopReasons,
  };
}
