import { test } from 'node:test';
import assert from 'node:assert/strict';
import { groupAdvantages } from './advantage.js';
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

const always = { formatCredit: 'always' } as const;

test('f1_format is 0.9·F1 + 0.1·format by default: graded credit for partial answers, the format term for clean steps', () => {
  const clean = { turns: 2, invalidSteps: 0, answered: true };
  close(scoreAnswer('Lima', ['Lima'], clean).parts.f1_format, 1, 'right answer, clean trajectory');
  close(scoreAnswer('Lima Peru', ['Lima'], clean).parts.f1_format, 0.9 * (2 / 3) + 0.1, 'partial answer (F1 2/3)');
  close(scoreAnswer('Paris', ['Lima'], clean).parts.f1_format, 0, 'wrong answer: no format credit without a score');
  close(scoreAnswer('Paris', ['Lima'], clean, always).parts.f1_format, 0.1, 'wrong answer, credit "always": the format term only');
  close(
    scoreAnswer('Lima', ['Lima'], { turns: 4, invalidSteps: 1, answered: true }).parts.f1_format,
    0.9 + 0.1 * 0.75,
    'one step of 4 invalid',
  );
  // The weight is a setting: 0 is plain F1, 1 is the format score alone (of a scored answer, or of any with "always").
  close(scoreAnswer('Lima Peru', ['Lima'], clean, { formatWeight: 0 }).parts.f1_format, 2 / 3, 'weight 0');
  close(scoreAnswer('Paris', ['Lima'], clean, { formatWeight: 1, ...always }).parts.f1_format, 1, 'weight 1');
  close(scoreAnswer('Paris', ['Lima'], clean, { formatWeight: 1 }).parts.f1_format, 0, 'weight 1, wrong answer, "when-scored"');
  close(scoreAnswer('Lima Peru', ['Lima'], clean, { formatWeight: 0.3 }).parts.f1_format, 0.7 * (2 / 3) + 0.3, 'weight 0.3');
  assert.equal(withFormat(0.5, 1), 0.9 * 0.5 + 0.1);
  assert.equal(withFormat(0, 1), 0);
  assert.equal(withFormat(0, 1, 0.1, 'always'), 0.1);
});

test('em_format credits only the answer itself: a sentence that contains the gold earns nothing (or the format term alone with "always"), unlike f1_format', () => {
  const clean = { turns: 2, invalidSteps: 0, answered: true };
  close(scoreAnswer('Lima', ['Lima'], clean).parts.em_format, 1, 'right answer, clean trajectory');
  close(scoreAnswer('the Lima', ['Lima'], clean).parts.em_format, 1, 'EM normalises articles and case');
  const sentenceText = 'The document of Peru states that its capital is Lima.';
  const sentence = scoreAnswer(sentenceText, ['Lima'], clean).parts;
  close(sentence.em_format, 0, 'a sentence containing the gold: EM 0, so no format credit');
  close(scoreAnswer(sentenceText, ['Lima'], clean, always).parts.em_format, 0.1, 'the same with "always": the format term only');
  assert.ok(sentence.f1_format! > 0.2, `f1_format pays the same sentence ${sentence.f1_format}`);
  close(scoreAnswer('Paris', ['Lima'], clean, always).parts.em_format, 0.1, 'wrong answer, clean trajectory, "always"');
  close(
    scoreAnswer('Lima', ['Lima'], { turns: 4, invalidSteps: 1, answered: true }).parts.em_format,
    0.9 + 0.1 * 0.75,
    'one step of 4 invalid',
  );
  close(
    scoreAnswer(null, ['Lima'], { turns: 4, invalidSteps: 0, answered: false }, always).parts.em_format,
    0.05,
    'no answer, valid steps',
  );
  close(scoreAnswer('Lima', ['Lima'], clean, { formatWeight: 0.3 }).parts.em_format, 1, 'weight 0.3, right');
  close(scoreAnswer('Paris', ['Lima'], clean, { formatWeight: 0.3, ...always }).parts.em_format, 0.3, 'weight 0.3, wrong');
  assert.equal(parseTrajectoryInput({ question: 'q', rewardMetric: 'em_format', rewardFormatWeight: 0.2 }).rewardFormatWeight, 0.2);
});

test('f1_format of an absent or invalid answer is 0 by default, above 0 with "always" only through the format term, and never throws', () => {
  close(scoreAnswer(null, ['Lima'], { turns: 4, invalidSteps: 0, answered: false }).parts.f1_format, 0, 'no answer, valid steps');
  // No answer, "always": format is the valid share halved; F1 contributes nothing.
  close(
    scoreAnswer(null, ['Lima'], { turns: 4, invalidSteps: 0, answered: false }, always).parts.f1_format,
    0.1 * 0.5,
    'no answer, valid steps',
  );
  close(
    scoreAnswer(null, ['Lima'], { turns: 4, invalidSteps: 2, answered: false }, always).parts.f1_format,
    0.1 * 0.25,
    'no answer, half invalid',
  );
  assert.equal(
    scoreAnswer(null, ['Lima'], { turns: 3, invalidSteps: 3, answered: false }, always).parts.f1_format,
    0,
    'every step invalid',
  );
  assert.equal(scoreAnswer(null, ['Lima'], { turns: 0, invalidSteps: 0, answered: false }, always).parts.f1_format, 0, 'no turn at all');
  // Answers that normalise to nothing, odd characters and empty gold lists score without throwing.
  for (const [prediction, golds] of [
    ['', ['Lima']],
    ['!!! ... the a an', ['Lima']],
    ['\u0000\uffff', ['Lima']],
    ['Lima', []],
    ['Lima', ['']],
  ] as const) {
    for (const formatCredit of ['when-scored', 'always'] as const) {
      const { parts, errors } = scoreAnswer(prediction, golds, { turns: 1, invalidSteps: 0, answered: true }, { formatCredit });
      assert.deepEqual(errors, {}, `${JSON.stringify(prediction)} against ${JSON.stringify(golds)}`);
      assert.ok(Number.isFinite(parts.f1_format) && parts.f1_format! >= 0 && parts.f1_format! <= 1, `${parts.f1_format}`);
      const expected = formatCredit === 'always' || parts.f1! > 0 ? 0.9 * parts.f1! + 0.1 * parts.format! : 0;
      close(parts.f1_format, expected, `${JSON.stringify(prediction)}, ${formatCredit}: the documented combination`);
    }
  }
});

test('a group with no right answer gives no advantage toward answering early: wrong, missing and run-out trajectories all earn 0', () => {
  // The shapes of session 39's groups on fresh questions: a wrong answer given one step early (a document id, the
  // policy's own thought), a trajectory stopped for repeating a call, one that ran out of turns, one with an invalid step.
  const group = [
    { answer: 'country-pol', format: { turns: 2, invalidSteps: 0, answered: true } },
    { answer: 'I should search for the capital of the country first', format: { turns: 3, invalidSteps: 0, answered: true } },
    { answer: null, format: { turns: 3, invalidSteps: 0, answered: false } },
    { answer: null, format: { turns: 5, invalidSteps: 0, answered: false } },
    { answer: 'Krakow', format: { turns: 4, invalidSteps: 1, answered: true } },
  ];
  for (const metric of ['f1_format', 'em_format'] as const) {
    const rewards = group.map(({ answer, format }) => scoreAnswer(answer, ['Warsaw'], format).parts[metric]!);
    assert.deepEqual(rewards, [0, 0, 0, 0, 0], `${metric}: every reward 0`);
    assert.ok(
      groupAdvantages(rewards).every((advantage) => advantage === 0),
      `${metric}: zero advantage`,
    );
    // The rule of sessions up to 39 ranked "answered anything" above "repeated or ran out of turns".
    const before = group.map(({ answer, format }) => scoreAnswer(answer, ['Warsaw'], format, always).parts[metric]!);
    const advantages = groupAdvantages(before);
    assert.ok(
      advantages[0]! > 0 && advantages[1]! > 0 && advantages[2]! < 0 && advantages[3]! < 0,
      `${metric} "always": ${advantages.join(' ')}`,
    );
  }
  // With one right answer the group has a contrast, and the format term still orders right answers by their steps.
  const mixed = [...group.map(({ answer, format }) => scoreAnswer(answer, ['Warsaw'], format).parts.f1_format!)];
  const right = scoreAnswer('Warsaw', ['Warsaw'], { turns: 3, invalidSteps: 0, answered: true }).parts.f1_format!;
  const rightUntidy = scoreAnswer('Warsaw', ['Warsaw'], { turns: 4, invalidSteps: 1, answered: true }).parts.f1_format!;
  assert.ok(right > rightUntidy && rightUntidy > 0);
  const advantages = groupAdvantages([...mixed, right]);
  assert.ok(advantages.at(-1)! > 0 && advantages.slice(0, -1).every((advantage) => advantage < 0));
});

test('a trajectory may pick rewardMetric "f1_format" with a format weight in [0, 1]; anything else is refused naming the field', () => {
  const parsed = parseTrajectoryInput({ question: 'q', rewardMetric: 'f1_format' });
  assert.equal(parsed.rewardMetric, 'f1_format');
  assert.equal(parsed.rewardFormatWeight, 0.1);
  assert.equal(parsed.rewardFormatCredit, 'when-scored');
  assert.equal(
    parseTrajectoryInput({ question: 'q', rewardMetric: 'f1_format', rewardFormatCredit: 'always' }).rewardFormatCredit,
    'always',
  );
  assert.throws(
    () => parseTrajectoryInput({ question: 'q', rewardMetric: 'f1_format', rewardFormatCredit: 'sometimes' }),
    (error: unknown) => LonghaulError.is(error) && error.code === 'LonghaulInvalidInput' && error.field === 'rewardFormatCredit',
  );
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

test('rewardUnanswered is a number in [−1, 0] (default 0); anything else is refused naming the field', () => {
  assert.equal(parseTrajectoryInput({ question: 'q' }).rewardUnanswered, 0);
  assert.equal(parseTrajectoryInput({ question: 'q', rewardUnanswered: -0.1 }).rewardUnanswered, -0.1);
  for (const bad of [0.5, -2, 'some', Number.NaN])
    assert.throws(
      () => parseTrajectoryInput({ question: 'q', rewardUnanswered: bad }),
      (error: unknown) => LonghaulError.is(error) && error.field === 'rewardUnanswered' && /between -1 and 0/.test(error.message),
      `rewardUnanswered ${String(bad)}`,
    );
});

test('advantages scaled by the group std give every differing group unit size; unscaled ("none") they keep the reward gap', () => {
  // No right answer: six wrong (0) and two without an answer (rewardUnanswered −0.1).
  const noRight = [0, 0, 0, 0, 0, 0, -0.1, -0.1];
  const oneRight = [1, 0, 0, 0, 0, 0, 0, 0];
  const scaled = groupAdvantages(noRight);
  const unscaled = groupAdvantages(noRight, 'none');
  // std: the −0.1 gap pushes as hard as a right answer's +1 gap does in its group (≈ ±1.73 against ±2.65).
  assert.ok(Math.abs(scaled[6]! + Math.sqrt(3)) < 1e-4, `scaled no-answer advantage ${scaled[6]}`);
  assert.ok(Math.abs(groupAdvantages(oneRight)[0]! - Math.sqrt(7)) < 1e-4);
  // none: reward − mean, −0.075 and +0.025 against the right answer's +0.875.
  assert.deepEqual(
    unscaled.map((value) => Number(value.toFixed(6))),
    [0.025, 0.025, 0.025, 0.025, 0.025, 0.025, -0.075, -0.075],
  );
  assert.equal(groupAdvantages(oneRight, 'none')[0], 0.875);
  assert.ok(
    groupAdvantages([0.5, 0.5, 0.5], 'none').every((value) => value === 0),
    'an equal group teaches nothing either way',
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
