import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeAnswer } from '../../activities/reward/metrics.js';
import type { QuestionRow } from '../../workflows/contracts/learner.contract.js';
import { UsageError } from '../command.js';
import { continuedPool, inBand, seededShuffle, splitQuestions, trainingCandidates, trainingPool, withHops } from './split.js';

const countries = [
  'Peru',
  'Chile',
  'Brazil',
  'Bolivia',
  'Ecuador',
  'Colombia',
  'Venezuela',
  'Guyana',
  'Suriname',
  'Paraguay',
  'Uruguay',
  'Argentina',
];
const capitals = [
  'Lima',
  'Santiago',
  'Brasilia',
  'Sucre',
  'Quito',
  'Bogota',
  'Caracas',
  'Georgetown',
  'Paramaribo',
  'Asuncion',
  'Montevideo',
  'Buenos Aires',
];

/** Two questions per answer (a 1-hop and a 2-hop wording), each with a gold path. */
function rows(): QuestionRow[] {
  return countries.flatMap((country, index) => [
    {
      id: `q${index}-a`,
      question: `What is the capital of the country whose ${index}th neighbour is named after ${country} river?`,
      answers: [capitals[index]!],
      goldTurns: [`<search>${country}</search>`, `<answer>${capitals[index]}</answer>`],
    },
    {
      id: `q${index}-b`,
      question: `Which city is the seat of government of the state bordering ${country} with ${index + 3} provinces?`,
      answers: [capitals[index]!],
      goldTurns: [`<search>${country}</search>`, `<answer>${capitals[index]}</answer>`],
    },
  ]);
}

test('the split keeps answer groups on one side, fills held-out first, and is the same for the same seed', () => {
  const split = splitQuestions(rows(), { heldOut: 6, warmStart: 6, candidates: 8 }, 13);
  assert.equal(split.heldOut.length, 6);
  assert.equal(split.warmStart.length, 6);
  assert.equal(split.candidates.length, 8);
  assert.equal(split.contaminated.length, 0);
  const answers = (list: QuestionRow[]) => new Set(list.map((row) => normalizeAnswer(row.answers[0]!)));
  const held = answers(split.heldOut);
  for (const answer of [...answers(split.warmStart), ...answers(split.candidates)])
    assert.ok(!held.has(answer), `held-out answer ${answer} is also trained on`);
  assert.deepEqual(splitQuestions(rows(), { heldOut: 6, warmStart: 6, candidates: 8 }, 13), split);
  assert.notDeepEqual(
    splitQuestions(rows(), { heldOut: 6, warmStart: 6, candidates: 8 }, 14).heldOut.map((row) => row.id),
    split.heldOut.map((row) => row.id),
  );
});

test('the warm-start set takes only questions with gold paths', () => {
  const withoutGold = rows().map((row, index) => (index % 4 === 0 ? row : { id: row.id, question: row.question, answers: row.answers }));
  const split = splitQuestions(withoutGold, { heldOut: 2, warmStart: 3, candidates: 4 }, 1);
  assert.equal(split.warmStart.length, 3);
  assert.ok(split.warmStart.every((row) => row.goldTurns && row.goldTurns.length > 0));
});

test('a held-out question that overlaps a trained one (same text, other answer spelling) is dropped, named and replaced from the groups left over', () => {
  const base = rows();
  // The same question text twice under answers that normalise differently: the groups differ, the text does not.
  const twin: QuestionRow = { ...base[0]!, id: 'twin', answers: ['Ciudad de Lima'] };
  const all = [...base, twin];
  let found = 0;
  let refilled = 0;
  for (let seed = 0; seed < 40; seed += 1) {
    const split = splitQuestions(all, { heldOut: 10, warmStart: 6, candidates: 6 }, seed);
    const held = new Set([...split.heldOut, ...split.contaminated.map((item) => ({ id: item.id }))].map((row) => row.id));
    const trained = new Set([...split.warmStart, ...split.candidates].map((row) => row.id));
    if ((held.has('twin') && trained.has(base[0]!.id)) || (held.has(base[0]!.id) && trained.has('twin'))) {
      found += 1;
      assert.equal(split.contaminated.length, 1, JSON.stringify(split.contaminated));
      assert.equal(split.contaminated[0]!.reason, 'normalised-text');
      assert.ok(!split.heldOut.some((row) => row.id === split.contaminated[0]!.id), 'the contaminated question is out of the held-out set');
      // The answer groups left over (none when partly taken groups used all 13) refill the held-out set.
      assert.ok(split.heldOut.length === 10 || split.unused === 0, `${split.heldOut.length} held out with ${split.unused} unused`);
      if (split.heldOut.length === 10) refilled += 1;
      const heldAnswers = new Set(split.heldOut.map((row) => normalizeAnswer(row.answers[0]!)));
      for (const row of [...split.warmStart, ...split.candidates]) assert.ok(!heldAnswers.has(normalizeAnswer(row.answers[0]!)));
    }
  }
  assert.ok(found > 0, 'some seed puts the twins on different sides');
  assert.ok(refilled > 0, 'some seed refills the held-out set from a group left over');
});

test('the band keeps pass rates strictly inside (low, high)', () => {
  const probed = [0, 0.25, 0.5, 0.75, 1].map((passRate, index) => ({ id: `q${index}`, passRate }));
  assert.deepEqual(
    inBand(probed, { low: 0, high: 1 }).map((item) => item.passRate),
    [0.25, 0.5, 0.75],
  );
  assert.deepEqual(
    inBand(probed, { low: 0.25, high: 0.8 }).map((item) => item.passRate),
    [0.5, 0.75],
  );
  assert.deepEqual(inBand(probed, { low: 0.9, high: 1 }), []);
});

test('the seeded shuffle is a permutation', () => {
  const items = Array.from({ length: 50 }, (_, index) => index);
  const shuffled = seededShuffle(items, 3);
  assert.deepEqual(
    [...shuffled].sort((a, b) => a - b),
    items,
  );
  assert.notDeepEqual(shuffled, items);
});

test('--contamination text keeps a held-out template sibling of a trained question that ngram drops', () => {
  const siblings: QuestionRow[] = [
    { id: 'a', question: 'What is the capital of the country in which the town of Podujeva lies?', answers: ['Pristina'] },
    { id: 'b', question: 'What is the capital of the country in which the town of Prilep lies?', answers: ['Skopje'] },
  ];
  const counts = { heldOut: 1, warmStart: 0, candidates: 1 };
  const ngram = splitQuestions(siblings, counts, 3);
  assert.equal(ngram.heldOut.length, 0);
  assert.equal(ngram.contaminated.length, 1);
  assert.equal(ngram.contaminated[0]!.reason, 'ngram');
  const text = splitQuestions(siblings, { ...counts, contamination: 'text' }, 3);
  assert.equal(text.heldOut.length, 1);
  assert.equal(text.contaminated.length, 0);
  assert.notEqual(text.heldOut[0]!.answers[0], text.candidates[0]!.answers[0], 'the answers stay apart');
  // Equal text is contamination under both rules.
  const twins: QuestionRow[] = [siblings[0]!, { ...siblings[0]!, id: 'c', answers: ['Prishtina'] }];
  assert.equal(splitQuestions(twins, { ...counts, contamination: 'text' }, 3).contaminated[0]?.reason, 'normalised-text');
});

test('training candidates by hop count (--train-hops), hop counts filled in from the rows the split was made of', () => {
  const row = (id: string, hops?: number): QuestionRow => ({ id, question: `${id}?`, answers: [id], ...(hops ? { hops } : {}) });
  const candidates = [row('a', 1), row('b', 2), row('c'), row('d', 1)];
  assert.deepEqual(
    trainingCandidates(candidates, [1]).map((item) => item.id),
    ['a', 'd'],
  );
  assert.deepEqual(trainingCandidates(candidates, null), candidates);
  assert.throws(
    () => trainingCandidates(candidates, [3]),
    (error: unknown) => error instanceof UsageError && /--train-hops 3: none of the 4 .*2× 1, 1× 2, 1× none/.test(error.message),
  );
  const stored = [row('a'), row('c'), row('x')];
  assert.deepEqual(withHops(stored, [row('a', 2), row('c'), row('z', 1)]), [row('a', 2), row('c'), row('x')]);
});

test('the training pool: the candidates in order, or with --train-warm-start both sets shuffled together by the seed', () => {
  const row = (id: string): QuestionRow => ({ id, question: `${id}?`, answers: [id] });
  const candidates = ['c1', 'c2', 'c3', 'c4'].map(row);
  const warmStart = ['w1', 'w2', 'w3', 'w4'].map(row);
  assert.deepEqual(trainingPool(candidates, null, 13), candidates);
  const pool = trainingPool(candidates, warmStart, 13);
  assert.deepEqual(pool.map((item) => item.id).sort(), [...candidates, ...warmStart].map((item) => item.id).sort(), 'every question once');
  assert.deepEqual(trainingPool(candidates, warmStart, 13), pool, 'the same seed, the same order');
  assert.notDeepEqual(
    pool.map((item) => item.id),
    [...candidates, ...warmStart].map((item) => item.id),
    'mixed, not the candidates first',
  );
});

test('a continued run draws the questions the RL it continues did not draw first, then the rest, each part in order', () => {
  const row = (id: string): QuestionRow => ({ id, question: `${id}?`, answers: [id] });
  const pool = ['a', 'b', 'c', 'd', 'e'].map(row);
  assert.deepEqual(
    continuedPool(pool, new Set(['a', 'c', 'x'])).map((item) => item.id),
    ['b', 'd', 'e', 'a', 'c'],
  );
  assert.deepEqual(continuedPool(pool, new Set()), pool, 'nothing drawn: the pool as it was');
});
