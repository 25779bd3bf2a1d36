import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coverExactMatch, exactMatch, formatScore, normalizeAnswer, scoreAnswer, tokenF1 } from './metrics.js';
import { judgeAnswer, judgeMessages, parseVerdict } from './judge.js';
import type { Judge } from '../ports/judge.port.js';
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

function judgeReplying(reply: () => Promise<string>, asked: unknown[] = []): Judge {
  const backend: PolicyBackend = {
    name: 'openai',
    currentVersion: async () => 0,
    capabilities: async () => ({ tokenIds: false, logprobs: false, detail: 'judge' }),
    generate: async (request) => {
      asked.push(request);
      const text = await reply();
      return { text, promptTokenIds: [], tokenIds: [], logprobs: [], tokenVersions: [], policyVersion: 0, finishReason: 'stop' };
    },
  };
  return { backend, model: 'judge-model', baseUrl: 'http://judge.invalid/v1' };
}

test('the judge scores its verdict, records model, messages and reply, and a reply without a verdict scores 0 with the reason', async () => {
  const asked: unknown[] = [];
  const correct = await judgeAnswer(
    judgeReplying(async () => 'VERDICT: CORRECT', asked),
    'Capital of Peru?',
    ['Lima'],
    'lima',
  );
  assert.equal(correct.score, 1);
  assert.equal(correct.verdict, 'correct');
  assert.equal(correct.model, 'judge-model');
  assert.deepEqual(correct.messages, judgeMessages('Capital of Peru?', ['Lima'], 'lima'));
  assert.deepEqual(asked, [
    { prompt: '', messages: judgeMessages('Capital of Peru?', ['Lima'], 'lima'), maxNewTokens: 16, temperature: 0 },
  ]);
  const garbage = await judgeAnswer(
    judgeReplying(async () => 'the weather is nice'),
    'q',
    ['a'],
    'b',
  );
  assert.deepEqual([garbage.score, garbage.verdict, garbage.reply], [0, 'none', 'the weather is nice']);
  assert.match(garbage.error ?? '', /no verdict/);
});

test('the judge is not asked without an answer, and a failing judge throws instead of scoring 0', async () => {
  const asked: unknown[] = [];
  assert.deepEqual(
    await judgeAnswer(
      judgeReplying(async () => 'VERDICT: CORRECT', asked),
      'q',
      ['a'],
      null,
    ),
    { score: 0, verdict: 'no answer', error: 'no answer to judge' },
  );
  assert.equal(asked.length, 0);
  await assert.rejects(
    judgeAnswer(
      judgeReplying(async () => {
        throw new Error('connection refused');
      }),
      'q',
      ['a'],
      'a',
    ),
    /connection refused/,
  );
});
