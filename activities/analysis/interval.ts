/** Means with a 95 % percentile-bootstrap interval for the report, on the evaluation's own bootstrap (seeded: the same interval twice). */
import { bootstrapInterval, mean as meanOf } from '../evaluation/statistics.js';

export interface MeanInterval {
  readonly n: number;
  readonly mean: number;
  /** 2.5th and 97.5th percentile of the resampled means; equal to the mean for n = 1, NaN for n = 0. */
  readonly low: number;
  readonly high: number;
}

export function meanWithInterval(values: readonly number[], options: { resamples?: number; seed?: number } = {}): MeanInterval {
  const n = values.length;
  if (n === 0) return { n, mean: Number.NaN, low: Number.NaN, high: Number.NaN };
  const [low, high] = bootstrapInterval(values, {
    seed: options.seed ?? 1,
    ...(options.resamples ? { resamples: options.resamples } : {}),
  });
  return { n, mean: meanOf(values), low, high };
}
