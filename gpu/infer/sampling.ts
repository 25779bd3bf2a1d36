/**
 * Token choice from one row of logits: greedy (temperature 0) or seeded temperature + nucleus
 * sampling. The returned log-probability is the behaviour log-probability RL needs: the log of the
 * probability the token had under the distribution it was actually drawn from (after temperature
 * and top-p renormalisation; plain log-softmax for greedy).
 */

/** A small deterministic generator (splitmix32): the same seed gives the same draws on every machine. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 16), 0x85ebca6b) >>> 0;
    value = Math.imul(value ^ (value >>> 13), 0xc2b2ae35) >>> 0;
    value = (value ^ (value >>> 16)) >>> 0;
    return value / 4294967296;
  };
}

export interface Choice {
  readonly tokenId: number;
  readonly logprob: number;
}

export interface SamplerSettings {
  readonly temperature: number;
  readonly topP: number;
  readonly random: () => number;
}

/** log-softmax of logits / temperature over a row, in float64. */
export function logSoftmax(logits: Float32Array, temperature = 1): Float64Array {
  const scaled = new Float64Array(logits.length);
  let max = Number.NEGATIVE_INFINITY;
  for (let index = 0; index < logits.length; index += 1) {
    const value = logits[index]! / temperature;
    scaled[index] = value;
    if (value > max) max = value;
  }
  let sum = 0;
  for (let index = 0; index < scaled.length; index += 1) sum += Math.exp(scaled[index]! - max);
  const logSum = max + Math.log(sum);
  for (let index = 0; index < scaled.length; index += 1) scaled[index] = scaled[index]! - logSum;
  return scaled;
}

function argmax(values: Float32Array | Float64Array): number {
  let best = 0;
  for (let index = 1; index < values.length; index += 1) if (values[index]! > values[best]!) best = index;
  return best;
}

/**
 * Pick the next token from one row of logits. One pass per quantity and no allocation beyond one
 * reused scratch row: the arithmetic (each value, each sum in the same order) is exactly that of
 * `logSoftmax` + a scan of the nucleus, so tokens and logprobs are bit for bit those of the plain
 * formulation (sampling.test.ts checks it against one), at a fraction of the time on a 49,152-entry
 * vocabulary: every decode step samples each row of the batch on the event loop.
 */
export function chooseToken(logits: Float32Array, settings: SamplerSettings): Choice {
  if (settings.temperature <= 0) {
    const tokenId = argmax(logits);
    return { tokenId, logprob: logits[tokenId]! - logSumExp(logits, 1, logits[tokenId]!) };
  }
  const logprobs = scratchLogSoftmax(logits, settings.temperature);
  if (settings.topP >= 1) return drawFromAll(logprobs, settings.random);
  const order = nucleus(logprobs, settings.topP);
  let mass = 0;
  for (const index of order) mass += Math.exp(logprobs[index]!);
  let draw = settings.random() * mass;
  let tokenId = order[order.length - 1]!;
  for (const index of order) {
    draw -= Math.exp(logprobs[index]!);
    if (draw <= 0) {
      tokenId = index;
      break;
    }
  }
  return { tokenId, logprob: logprobs[tokenId]! - Math.log(mass) };
}

/** max + log Σ exp(logits / temperature − max), summed in index order (as `logSoftmax` does). */
function logSumExp(logits: Float32Array, temperature: number, max: number): number {
  let sum = 0;
  for (let index = 0; index < logits.length; index += 1) sum += Math.exp(logits[index]! / temperature - max);
  return max + Math.log(sum);
}

function maxScaled(logits: Float32Array, temperature: number): number {
  let max = Number.NEGATIVE_INFINITY;
  for (let index = 0; index < logits.length; index += 1) {
    const value = logits[index]! / temperature;
    if (value > max) max = value;
  }
  return max;
}

/** Reused between calls (sampling is synchronous: one row at a time on the event loop). */
let scratch = new Float64Array(0);
let scratchProbabilities = new Float64Array(0);

/** `logSoftmax` into the scratch row (valid until the next call). */
function scratchLogSoftmax(logits: Float32Array, temperature: number): Float64Array {
  if (scratch.length !== logits.length) scratch = new Float64Array(logits.length);
  const max = maxScaled(logits, temperature);
  const logSum = logSumExp(logits, temperature, max);
  for (let index = 0; index < logits.length; index += 1) scratch[index] = logits[index]! / temperature - logSum;
  return scratch;
}

/** top-p ≥ 1: the whole vocabulary in index order; each exp computed once and used for the mass and the draw. */
function drawFromAll(logprobs: Float64Array, random: () => number): Choice {
  if (scratchProbabilities.length !== logprobs.length) scratchProbabilities = new Float64Array(logprobs.length);
  const probabilities = scratchProbabilities;
  let mass = 0;
  for (let index = 0; index < logprobs.length; index += 1) {
    const probability = Math.exp(logprobs[index]!);
    probabilities[index] = probability;
    mass += probability;
  }
  let draw = random() * mass;
  let tokenId = logprobs.length - 1;
  for (let index = 0; index < probabilities.length; index += 1) {
    draw -= probabilities[index]!;
    if (draw <= 0) {
      tokenId = index;
      break;
    }
  }
  return { tokenId, logprob: logprobs[tokenId]! - Math.log(mass) };
}

/**
 * Indices of the smallest set of most likely tokens whose mass reaches topP (< 1), most likely
 * first. Only tokens above a probability threshold are sorted: when they already hold topP of the
 * mass, the nucleus lies among them (the threshold drops until they do).
 */
function nucleus(logprobs: Float64Array, topP: number): number[] {
  for (let threshold = 1e-3; ; threshold /= 16) {
    const logThreshold = Math.log(threshold);
    const candidates: number[] = [];
    let candidateMass = 0;
    for (let index = 0; index < logprobs.length; index += 1) {
      if (logprobs[index]! >= logThreshold || threshold < 1e-12) {
        candidates.push(index);
        candidateMass += Math.exp(logprobs[index]!);
      }
    }
    if (candidateMass < topP && threshold >= 1e-12) continue;
    candidates.sort((a, b) => logprobs[b]! - logprobs[a]! || a - b);
    const kept: number[] = [];
    let mass = 0;
    for (const index of candidates) {
      kept.push(index);
      mass += Math.exp(logprobs[index]!);
      if (mass >= topP) break;
    }
    return kept;
  }
}

/** The behaviour log-probability of a given token (used for a resumed prefix when none was recorded). */
export function tokenLogprob(logits: Float32Array, tokenId: number, temperature: number): number {
  const scale = temperature > 0 ? temperature : 1;
  return logits[tokenId]! / scale - logSumExp(logits, scale, maxScaled(logits, scale));
}
