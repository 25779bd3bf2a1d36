/**
 * QA rewards as the literature computes them (SQuAD-style normalisation: lowercase, drop
 * punctuation and the articles a/an/the, collapse whitespace). Reward functions never throw:
 * a failure scores 0 and the error is recorded.
 */
import { defaultRewardFormatCredit, type RewardFormatCredit, type RewardMetric } from '../../workflows/contracts/trajectory.contract.js';

export function normalizeAnswer(text: string): string {
  return text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\p{L}\p{N}\s]/gu, ' ')
    .replace(/\b(a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

export function exactMatch(prediction: string, golds: readonly string[]): number {
  const normalized = normalizeAnswer(prediction);
  return golds.some((gold) => normalizeAnswer(gold) === normalized) ? 1 : 0;
}

/** Token F1 against the best-matching gold answer. */
export function tokenF1(prediction: string, golds: readonly string[]): number {
  const predicted = normalizeAnswer(prediction).split(' ').filter(Boolean);
  let best = 0;
  for (const gold of golds) {
    const expected = normalizeAnswer(gold).split(' ').filter(Boolean);
    if (predicted.length === 0 || expected.length === 0) {
      best = Math.max(best, predicted.length === expected.length ? 1 : 0);
      continue;
    }
    const counts = new Map<string, number>();
    for (const token of expected) counts.set(token, (counts.get(token) ?? 0) + 1);
    let common = 0;
    for (const token of predicted) {
      const left = counts.get(token) ?? 0;
      if (left > 0) {
        common += 1;
        counts.set(token, left - 1);
      }
    }
    if (common === 0) continue;
    const precision = common / predicted.length;
    const recall = common / expected.length;
    best = Math.max(best, (2 * precision * recall) / (precision + recall));
  }
  return best;
}

/**
 * Token F1 over token sets (ASearcher's evaluation): repeated tokens count once on both sides, so
 * "paris paris" against "paris" is 1. `tokenF1` above is the bag-of-tokens F1 of SQuAD and FlashRAG.
 */
export function tokenSetF1(prediction: string, golds: readonly string[]): number {
  const predicted = new Set(normalizeAnswer(prediction).split(' ').filter(Boolean));
  let best = 0;
  for (const gold of golds) {
    const expected = new Set(normalizeAnswer(gold).split(' ').filter(Boolean));
    if (predicted.size === 0 || expected.size === 0) {
      best = Math.max(best, predicted.size === expected.size ? 1 : 0);
      continue;
    }
    let common = 0;
    for (const token of predicted) if (expected.has(token)) common += 1;
    if (common === 0) continue;
    const precision = common / predicted.size;
    const recall = common / expected.size;
    best = Math.max(best, (2 * precision * recall) / (precision + recall));
  }
  return best;
}

/** Cover-EM: a normalised gold answer appears inside the normalised prediction (on word boundaries). */
export function coverExactMatch(prediction: string, golds: readonly string[]): number {
  const normalized = ` ${normalizeAnswer(prediction)} `;
  return golds.some((gold) => {
    const target = normalizeAnswer(gold);
    return target.length > 0 && normalized.includes(` ${target} `);
  })
    ? 1
    : 0;
}

export interface FormatStats {
  readonly turns: number;
  readonly invalidSteps: number;
  readonly answered: boolean;
}

/** 1 when the trajectory answered and every step was well-formed; the valid fraction otherwise, halved without an answer. */
export function formatScore({ turns, invalidSteps, answered }: FormatStats): number {
  const valid = turns === 0 ? 0 : (turns - invalidSteps) / turns;
  return answered ? valid : valid / 2;
}

/** The metrics computed from the answer itself (every reward metric but the judge's, plus the format score). */
export type MetricName = Exclude<RewardMetric, 'judge'> | 'format';

/** The weight of the format term in `f1_format` and `em_format` when the trajectory does not set `rewardFormatWeight`. */
export const defaultRewardFormatWeight = 0.1;

/**
 * The answer's credit with a format term: (1 − w)·score + w·format, w in [0, 1] (default 0.1). `f1_format` passes F1
 * (graded: a partial answer, or a sentence that contains the gold, earns some), `em_format` passes EM (only the answer
 * itself earns). A right answer from a clean trajectory earns 1. With credit `when-scored` (the default) a trajectory
 * whose score is 0 earns 0 whatever its format: wrong, missing and run-out answers are equal, so a group with no right
 * answer teaches nothing (with `always` it taught "answer anything, early": docs/BENCHMARKS.md, session 39). With
 * `always` a wrong or missing answer earns up to w through a well-formed trajectory.
 */
export function withFormat(
  score: number,
  format: number,
  formatWeight: number = defaultRewardFormatWeight,
  formatCredit: RewardFormatCredit = defaultRewardFormatCredit,
): number {
  if (formatCredit === 'when-scored' && !(score > 0)) return 0;
  return (1 - formatWeight) * score + formatWeight * format;
}

export interface RewardParts {
  readonly parts: Record<string, number>;
  readonly errors: Record<string, string>;
}

/**
 * Every metric, each guarded: a metric that throws scores 0 and its error is kept. `f1_format` and `em_format` are
 * computed from the F1 (or EM) and format parts (each 0 if it failed) with `formatWeight` (default 0.1) and
 * `formatCredit` (default `when-scored`).
 */
export function scoreAnswer(
  prediction: string | null,
  golds: readonly string[],
  format: FormatStats,
  options: { readonly formatWeight?: number; readonly formatCredit?: RewardFormatCredit } = {},
): RewardParts {
  const parts: Record<string, number> = {};
  const errors: Record<string, string> = {};
  const metrics: Record<MetricName, () => number> = {
    em: () => (prediction === null ? 0 : exactMatch(prediction, golds)),
    f1: () => (prediction === null ? 0 : tokenF1(prediction, golds)),
    cover_em: () => (prediction === null ? 0 : coverExactMatch(prediction, golds)),
    format: () => formatScore(format),
    // Runs after f1 and format (insertion order), from their guarded values.
    f1_format: () => withFormat(parts.f1 ?? 0, parts.format ?? 0, options.formatWeight, options.formatCredit),
    em_format: () => withFormat(parts.em ?? 0, parts.format ?? 0, options.formatWeight, options.formatCredit),
  };
  for (const [name, metric] of Object.entries(metrics)) {
    try {
      const value = metric();
      parts[name] = Number.isFinite(value) ? value : 0;
    } catch (error) {
      parts[name] = 0;
      errors[name] = error instanceof Error ? error.message : String(error);
    }
  }
  return { parts, errors };
}
