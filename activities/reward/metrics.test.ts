import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coverExactMatch, exactMatch, formatScore, normalizeAnswer, scoreAnswer, tokenF1, withFormat } from './metrics.js';
import { parseTrajectoryInput } from '../../workflows/contracts/trajectory.input.js';
import { LonghaulError } from '../../workflows/contracts/errors.js';
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
  assert.deepEqual(parts, { em: 0, f1: 0, cover_em: 0, format: 0, f1_format: 0, em_format: 0 });
  assert.deepEqual(errors, {});
});

const close = (actual: number | undefined, expected: number, what: string) =>
  assert.ok(actual !== undefined && Math.abs(actual - expected) < 1e-12, `${what}: ${actual} ≠ ${expected}`);

test('f1_format is 0.9·F1 + 0.1·format by default: graded credit for partial answers, the format term for clean steps', () => {
  const clean = { turns: 2, invalidSteps: 0, answered: true };
  close(scoreAnswer('Lima', ['Lima'], clean).parts.f1_format, 1, 'right answer, clean trajectory');
  close(scoreAnswer('Lima Peru', ['Lima'], clean).parts.f1_format, 0.9 * (2 / 3) + 0.1, 'partial answer (F1 2/3)');
  close(scoreAnswer('Paris', ['Lima'], clean).parts.f1_format, 0.1, 'wrong answer, clean trajectory: the format term only');
  close(
    scoreAnswer('Lima', ['Lima'], { turns: 4, invalidSteps: 1, answered: true }).parts.f1_format,
    0.9 + 0.1 * 0.75,
    'one step of 4 invalid',
  );
  // The weight is a setting: 0 is plain F1, 1 is the format score alone.
  close(scoreAnswer('Lima Peru', ['Lima'], clean, { formatWeight: 0 }).parts.f1_format, 2 / 3, 'weight 0');
  close(scoreAnswer('Paris', ['Lima'], clean, { formatWeight: 1 }).parts.f1_format, 1, 'weight 1');
  close(scoreAnswer('Lima Peru', ['Lima'], clean, { formatWeight: 0.3 }).parts.f1_format, 0.7 * (2 / 3) + 0.3, 'weight 0.3');
  assert.equal(withFormat(0.5, 1), 0.9 * 0.5 + 0.1);
});

test('em_format credits only the answer itself: a sentence that contains the gold earns the format term alone, unlike f1_format', () => {
  const clean = { turns: 2, invalidSteps: 0, answered: true };
  close(scoreAnswer('Lima', ['Lima'], clean).parts.em_format, 1, 'right answer, clean trajectory');
  close(scoreAnswer('the Lima', ['Lima'], clean).parts.em_format, 1, 'EM normalises articles and case');
  const sentence = scoreAnswer('The document of Peru states that its capital is Lima.', ['Lima'], clean).parts;
  close(sentence.em_format, 0.1, 'a sentence containing the gold: the format term only');
  assert.ok(sentence.f1_format! > 0.2, `f1_format pays the same sentence ${sentence.f1_format}`);
  close(scoreAnswer('Paris', ['Lima'], clean).parts.em_format, 0.1, 'wrong answer, clean trajectory');
  close(
    scoreAnswer('Lima', ['Lima'], { turns: 4, invalidSteps: 1, answered: true }).parts.em_format,
    0.9 + 0.1 * 0.75,
    'one step of 4 invalid',
  );
  close(scoreAnswer(null, ['Lima'], { turns: 4, invalidSteps: 0, answered: false }).parts.em_format, 0.05, 'no answer, valid steps');
  close(scoreAnswer('Lima', ['Lima'], clean, { formatWeight: 0.3 }).parts.em_format, 1, 'weight 0.3, right');
  close(scoreAnswer('Paris', ['Lima'], clean, { formatWeight: 0.3 }).parts.em_format, 0.3, 'weight 0.3, wrong');
  assert.equal(parseTrajectoryInput({ question: 'q', rewardMetric: 'em_format', rewardFormatWeight: 0.2 }).rewardFormatWeight, 0.2);
});

test('f1_format of an absent or invalid answer is above 0 only through the format term, and never throws', () => {
  // No answer: format is the valid share halved; F1 contributes nothing.
  close(scoreAnswer(null, ['Lima'], { turns: 4, invalidSteps: 0, answered: false }).parts.f1_format, 0.1 * 0.5, 'no answer, valid steps');
  close(scoreAnswer(null, ['Lima'], { turns: 4, invalidSteps: 2, answered: false }).parts.f1_format, 0.1 * 0.25, 'no answer, half invalid');
  assert.equal(scoreAnswer(null, ['Lima'], { turns: 3, invalidSteps: 3, answered: false }).parts.f1_format, 0, 'every step invalid');
  assert.equal(scoreAnswer(null, ['Lima'], { turns: 0, invalidSteps: 0, answered: false }).parts.f1_format, 0, 'no turn at all');
  // Answers that normalise to nothing, odd characters and empty gold lists score without throwing.
  for (const [prediction, golds] of [
    ['', ['Lima']],
    ['!!! ... the a an', ['Lima']],
    ['\u0000\uffff', ['Lima']],
    ['Lima', []],
    ['Lima', ['']],
  ] as const) {
    const { parts, errors } = scoreAnswer(prediction, golds, { turns: 1, invalidSteps: 0, answered: true });
    assert.deepEqual(errors, {}, `${JSON.stringify(prediction)} against ${JSON.stringify(golds)}`);
    assert.ok(Number.isFinite(parts.f1_format) && parts.f1_format! >= 0 && parts.f1_format! <= 1, `${parts.f1_format}`);
    close(parts.f1_format, 0.9 * parts.f1! + 0.1 * parts.format!, `${JSON.stringify(prediction)}: the documented combination`);
  }
});

test('a trajectory may pick rewardMetric "f1_format" with a format weight in [0, 1]; anything else is refused naming the field', () => {
  const parsed = parseTrajectoryInput({ question: 'q', rewardMetric: 'f1_format' });
  assert.equal(parsed.rewardMetric, 'f1_format');
  assert.equal(parsed.rewardFormatWeight, 0.1);
  assert.equal(parseTrajectoryInput({ question: 'q', rewardMetric: 'f1_format', rewardFormatWeight: 0.25 }).rewardFormatWeight, 0.25);
  for (const bad of [-0.1, 1.5, 'half', Number.NaN]) {
    assert.throws(
      () => parseTrajectoryInput({ question: 'q', rewardMetric: 'f1_format', rewardFormatWeight: bad }),
      (error: unknown) => LonghaulError.is(error) && error.code === 'LonghaulInvalidInput' && error.field === 'rewardFormatWeight',
      `rewardFormatWeight ${String(bad)}`,
    );
  }
  assert.throws(
    () => parseTrajectoryInput({ question: 'q', rewardMetric: 'f1format' }),
    (error: unknown) => LonghaulError.is(error) && error.field === 'rewardMetric' && /"f1_format"/.test(error.message),
  );
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
