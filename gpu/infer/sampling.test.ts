import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseToken, logSoftmax, seededRandom, tokenLogprob, type Choice, type SamplerSettings } from './sampling.js';

/**
 * The plain formulation chooseToken replaced (a full log-softmax row, the nucleus as an index list,
 * the exps recomputed for the mass and the draw): the fast paths must give the same token and the
 * same logprob bit for bit, so recorded trajectories and the batched/unbatched agreement do not move.
 */
function referenceChoice(logits: Float32Array, settings: SamplerSettings): Choice {
  if (settings.temperature <= 0) {
    let tokenId = 0;
    for (let index = 1; index < logits.length; index += 1) if (logits[index]! > logits[tokenId]!) tokenId = index;
    return { tokenId, logprob: logSoftmax(logits)[tokenId]! };
  }
  const logprobs = logSoftmax(logits, settings.temperature);
  let order: number[];
  if (settings.topP >= 1) order = Array.from(logprobs.keys());
  else {
    const sorted = Array.from(logprobs.keys()).sort((a, b) => logprobs[b]! - logprobs[a]! || a - b);
    order = [];
    let kept = 0;
    for (const index of sorted) {
      order.push(index);
      kept += Math.exp(logprobs[index]!);
      if (kept >= settings.topP) break;
    }
  }
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

/** A vocabulary-sized row: noise, a few strong tokens, ties at the top for some rows. */
function logitsRow(seed: number, size: number): Float32Array {
  const random = seededRandom(seed);
  const row = new Float32Array(size);
  for (let index = 0; index < size; index += 1) row[index] = (random() - 0.5) * (2 + (seed % 5) * 3);
  for (let strong = 0; strong < 1 + (seed % 7); strong += 1) row[Math.floor(random() * size)] = 4 + random() * 6;
  if (seed % 4 === 0) row[size - 1] = row[3] = 20; // a tie: the first index wins
  return row;
}

describe('token choice (sampling.ts)', () => {
  const settings: Array<Omit<SamplerSettings, 'random'>> = [
    { temperature: 0, topP: 1 },
    { temperature: 0, topP: 0.5 },
    { temperature: 1, topP: 1 },
    { temperature: 0.7, topP: 1 },
    { temperature: 0.8, topP: 0.9 },
    { temperature: 1.3, topP: 0.95 },
    { temperature: 0.5, topP: 0.3 },
  ];

  it('gives the same token and logprob, bit for bit, as the plain formulation', () => {
    let compared = 0;
    for (let seed = 1; seed <= 24; seed += 1) {
      const logits = logitsRow(seed, seed % 6 === 0 ? 49152 : 5000);
      for (const setting of settings) {
        const fast = chooseToken(logits, { ...setting, random: seededRandom(seed * 31) });
        const reference = referenceChoice(logits, { ...setting, random: seededRandom(seed * 31) });
        assert.equal(fast.tokenId, reference.tokenId, `seed ${seed}, ${JSON.stringify(setting)}: token`);
        assert.ok(
          Object.is(fast.logprob, reference.logprob),
          `seed ${seed}, ${JSON.stringify(setting)}: ${fast.logprob} vs ${reference.logprob}`,
        );
        if (setting.temperature <= 0 && seed % 4 === 0) assert.equal(fast.tokenId, 3, 'ties go to the first index');
        compared += 1;
      }
    }
    assert.equal(compared, 24 * settings.length);
  });

  it('scores a given token as log-softmax does, at any temperature', () => {
    const logits = logitsRow(5, 49152);
    for (const [tokenId, temperature] of [
      [17, 0],
      [17, 1],
      [4000, 0.6],
      [49151, 1.7],
    ] as const) {
      const expected = logSoftmax(logits, temperature > 0 ? temperature : 1)[tokenId]!;
      assert.ok(Object.is(tokenLogprob(logits, tokenId, temperature), expected), `token ${tokenId} at T=${temperature}`);
    }
  });

  it('draws sampled tokens in proportion to their renormalised probability', () => {
    // Three live tokens (probabilities 0.5, 0.3, 0.2 at T = 1); top-p 0.75 keeps the first two (0.625 / 0.375).
    const logits = new Float32Array(1000).fill(-1e4);
    logits[10] = Math.log(0.5);
    logits[20] = Math.log(0.3);
    logits[30] = Math.log(0.2);
    const random = seededRandom(11);
    const counts = new Map<number, number>();
    for (let draw = 0; draw < 4000; draw += 1) {
      const { tokenId, logprob } = chooseToken(logits, { temperature: 1, topP: 0.75, random });
      counts.set(tokenId, (counts.get(tokenId) ?? 0) + 1);
      assert.ok(Math.abs(logprob - Math.log(tokenId === 10 ? 0.625 : 0.375)) < 1e-6, `logprob of ${tokenId}`);
    }
    assert.deepEqual(
      [...counts.keys()].sort((a, b) => a - b),
      [10, 20],
    );
    assert.ok(Math.abs(counts.get(10)! / 4000 - 0.625) < 0.04, `share of token 10: ${counts.get(10)! / 4000}`);
  });
});
