import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  answerScores,
  bootstrapInterval,
  evaluationStatistics,
  mean,
  pairedDifference,
  seededRandom,
  type ScoredQuestion,
} from './statistics.js';
import { tokenF1, tokenSetF1 } from '../reward/metrics.js';

const sample = (em: number, f1 = em, extra: Partial<ScoredQuestion['samples'][number]> = {}) => ({
  scores: { em, f1_flashrag: f1 },
  turns: 2,
  toolCalls: 1,
  stopReason: 'answered',
  ...extra,
});

test('F1 over token sets (ASearcher) and over bags of tokens (FlashRAG) differ on repeated tokens', () => {
  assert.equal(tokenSetF1('Paris Paris', ['Paris']), 1);
  assert.equal(tokenF1('Paris Paris', ['Paris']), 2 / 3);
  assert.equal(tokenSetF1('new york new york', ['New York City']), 0.8);
  assert.equal(tokenSetF1('', ['Lima']), 0);
});

test('answer scores: every metric, and 0 for no answer', () => {
  assert.deepEqual(answerScores('the Lima', ['Lima']), { em: 1, f1_asearcher: 1, f1_flashrag: 1, cover_em: 1 });
  assert.deepEqual(answerScores('It is Lima', ['Lima']), { em: 0, f1_asearcher: 0.5, f1_flashrag: 0.5, cover_em: 1 });
  assert.deepEqual(answerScores(null, ['Lima']), { em: 0, f1_asearcher: 0, f1_flashrag: 0, cover_em: 0 });
});

test('Avg@k averages samples then questions; Pass@k counts questions with one perfect sample; never best-of-k', () => {
  const questions: ScoredQuestion[] = [
    { samples: [sample(1), sample(0), sample(0), sample(0)] },
    { samples: [sample(0, 0.5), sample(0, 0.5), sample(0, 0.5), sample(0, 0.5)] },
  ];
  const stats = evaluationStatistics(questions, { seed: 7 });
  assert.equal(stats.avgAtK.em, 0.125);
  assert.equal(stats.passAtK.em, 0.5);
  assert.equal(stats.avgAtK.f1_flashrag, (0.25 + 0.5) / 2);
  assert.equal(stats.passAtK.f1_flashrag, 0.5);
  assert.deepEqual(stats.stopReasons, { answered: 8 });
  assert.equal(stats.meanTurns, 2);
  assert.equal(stats.meanToolCalls, 1);
});

test('a metric missing from some sample (judge off for a question) is left out, not averaged as 0', () => {
  const stats = evaluationStatistics([{ samples: [{ ...sample(1), scores: { em: 1, judge: 1 } }, sample(1)] }], { seed: 1 });
  assert.equal(stats.avgAtK.judge, undefined);
  assert.equal(stats.avgAtK.em, 1);
});

test('the bootstrap interval is seeded (same seed, same interval), brackets the mean, and narrows with more questions', () => {
  const values = Array.from({ length: 40 }, (_, index) => (index % 3 === 0 ? 1 : 0));
  const first = bootstrapInterval(values, { seed: 42 });
  assert.deepEqual(bootstrapInterval(values, { seed: 42 }), first);
  const graded = values.map((value, index) => value * 0.5 + index / 100);
  assert.notDeepEqual(bootstrapInterval(graded, { seed: 43 }), bootstrapInterval(graded, { seed: 42 }), 'another seed, other draws');
  assert.ok(first[0] < mean(values) && mean(values) < first[1], `${first} around ${mean(values)}`);
  const many = Array.from({ length: 400 }, (_, index) => (index % 3 === 0 ? 1 : 0));
  const wide = first[1] - first[0];
  const [low, high] = bootstrapInterval(many, { seed: 42 });
  assert.ok(high - low < wide, `400 questions: ${high - low} vs 40: ${wide}`);
  // The textbook normal interval for p = 1/3, n = 40 is ±0.146; the bootstrap lands near it.
  assert.ok(Math.abs(wide / 2 - 1.96 * Math.sqrt(((1 / 3) * (2 / 3)) / 40)) < 0.03, `half-width ${wide / 2}`);
});

test('one question, or none, gives a zero-width interval; the generator stays in [0, 1)', () => {
  assert.deepEqual(bootstrapInterval([0.5], { seed: 1 }), [0.5, 0.5]);
  assert.deepEqual(bootstrapInterval([], { seed: 1 }), [0, 0]);
  const random = seededRandom(3);
  for (let index = 0; index < 1000; index += 1) {
    const value = random();
    assert.ok(value >= 0 && value < 1);
  }
});

test('the paired difference pairs questions by id and resamples the pairs', () => {
  const before = [0, 0, 1, 1, 0, 0, 1, 0].map((score, index) => ({ questionId: `q${index}`, score }));
  const after = [1, 1, 1, 1, 1, 0, 1, 1].map((score, index) => ({ questionId: `q${index}`, score }));
  const gain = pairedDifference(before, [...after].reverse(), 7);
  assert.equal(gain.n, 8);
  assert.equal(gain.mean, 4 / 8);
  assert.ok(gain.ci95[0] > 0 && gain.ci95[0] <= gain.mean && gain.ci95[1] >= gain.mean && gain.ci95[1] <= 1, String(gain.ci95));
  // Equal scores: zero difference and a zero-width interval, whatever the unpaired spread.
  const same = pairedDifference(before, before, 7);
  assert.deepEqual([same.mean, ...same.ci95], [0, 0, 0]);
  // A question missing from one side is left out.
  assert.equal(pairedDifference(before.slice(0, 5), after, 7).n, 5);
});
