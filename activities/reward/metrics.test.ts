import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coverExactMatch, exactMatch, formatScore, normalizeAnswer, scoreAnswer, tokenF1 } from './metrics.js';
import { judgeAnswer, parseVerdict } from './judge.js';
import type { PolicyBackend } from '../ports/policy.port.js';

test('normalisation lowercases, strips punctuation, articles and accents', () => {
  assert.equal(normalizeAnswer('  The Eiffel-Tower! '), 'eiffel tower');
  assert.equal(normalizeAnswer('Ångström'), 'angstrom');
});

test('exact match, token F1 and cover-EM give the textbook values', () => {
  assert.equal(exactMatch('the Lima', ['Lima']), 1);
  assert.equal(exactMatch('Lima, Peru', ['Lima']), 0);
  assert.equal(tokenF1('Lima Peru', ['Lima']), 2 / 3);
  assert.equal(tokenF1('Paris', ['Lima', 'Paris France']), 2 / 3);
  assert.equal(tokenF1('', ['Lima']), 0);
  assert.equal(coverExactMatch('It is Lima, Peru.', ['lima']), 1);
  assert.equal(coverExactMatch('Limassol', ['lima']), 0);
});

test('format score is 1 only for an answered trajectory without invalid steps', () => {
  assert.equal(formatScore({ turns: 4, invalidSteps: 0, answered: true }), 1);
  assert.equal(formatScore({ turns: 4, invalidSteps: 1, answered: true }), 0.75);
  assert.equal(formatScore({ turns: 4, invalidSteps: 0, answered: false }), 0.5);
  assert.equal(formatScore({ turns: 0, invalidSteps: 0, answered: false }), 0);
});

test('no answer scores 0 on every answer metric without throwing', () => {
  const { parts, errors } = scoreAnswer(null, ['Lima'], { turns: 3, invalidSteps: 3, answered: false });
  assert.deepEqual(parts, { em: 0, f1: 0, cover_em: 0, format: 0 });
  assert.deepEqual(errors, {});
});

test('the judge verdict parser reads CORRECT and INCORRECT and nothing else', () => {
  assert.equal(parseVerdict(' CORRECT'), 1);
  assert.equal(parseVerdict('VERDICT: INCORRECT\n'), 0);
  assert.equal(parseVerdict('maybe'), null);
});

test('a failing judge backend scores 0 with the error recorded, never throws', async () => {
  const broken: PolicyBackend = { name: 'openai', currentVersion: async () => 0, capabilities: async () => ({ tokenIds: false, logprobs: false, detail: 'broken' }), generate: async () => { throw new Error('connection refused'); } };
  assert.deepEqual(await judgeAnswer(broken, 'q', ['a'], 'a'), { score: 0, error: 'judge failed: connection refused' });
});
