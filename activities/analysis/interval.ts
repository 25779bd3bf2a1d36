/** Means with a 95 % percentile-bootstrap interval, seeded so that a report shows the same interval twice. */

/** mulberry32: a small deterministic PRNG in [0, 1). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

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
  const mean = values.reduce((sum, value) => sum + value, 0) / n;
  if (n === 1) return { n, mean, low: mean, high: mean };
  const resamples = options.resamples ?? 2000;
  const next = random(options.seed ?? 1);
  const means = new Float64Array(resamples);
  for (let resample = 0; resample < resamples; resample += 1) {
    let sum = 0;
    for (let draw = 0; draw < n; draw += 1) sum += values[Math.floor(next() * n)]!;
    means[resample] = sum / n;
  }
  means.sort();
  const at = (quantile: number) => means[Math.min(resamples - 1, Math.max(0, Math.floor(quantile * resamples)))]!;
  return { n, mean, low: at(0.025), high: at(0.975) };
}
