import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  evaluationJudgeMessages,
  evaluationJudgePromptText,
  evaluationJudgePromptVersion,
  judgeWithRationale,
  parseJudgement,
} from './judge.js';
import type { Judge } from '../ports/judge.port.js';
import type { PolicyBackend } from '../ports/policy.port.js';

test('the evaluation judge reads a JSON verdict with its rationale, falls back to a verdict line, and refuses neither', () => {
  assert.deepEqual(parseJudgement('{"verdict": "correct", "rationale": "same city"}'), { score: 1, rationale: 'same city' });
  assert.deepEqual(parseJudgement('Sure. {"verdict":"INCORRECT","rationale":"a different year"} '), {
    score: 0,
    rationale: 'a different year',
  });
  assert.equal(parseJudgement('VERDICT: CORRECT')?.score, 1);
  assert.equal(parseJudgement('{"verdict": "maybe"}'), null);
  assert.equal(parseJudgement('I cannot tell'), null);
});

test('the evaluation judge prompt is versioned and its text covers both messages', () => {
  assert.match(evaluationJudgePromptText, new RegExp(`^${evaluationJudgePromptVersion}`));
  const [system, user] = evaluationJudgeMessages('Q?', ['Lima'], 'lima');
  assert.ok(evaluationJudgePromptText.includes(system!.content));
  assert.match(user!.content, /Gold answers: "Lima"/);
});

function backendReplying(reply: () => string): PolicyBackend {
  return {
    name: 'openai',
    currentVersion: async () => 0,
    capabilities: async () => ({ tokenIds: false, logprobs: false, detail: 'test' }),
    generate: async () => ({
      text: reply(),
      promptTokenIds: [],
      tokenIds: [],
      logprobs: [],
      tokenVersions: [],
      policyVersion: 0,
      finishReason: 'stop',
    }),
  };
}

test('judgeWithRationale grades, says why, skips a missing answer, and throws (never scores 0) when the judge fails', async () => {
  const judge: Judge = { backend: backendReplying(() => '{"verdict":"correct","rationale":"alias"}'), model: 'm', baseUrl: 'http://judge' };
  assert.deepEqual(await judgeWithRationale(judge, 'Q?', ['Lima'], 'Lima'), {
    score: 1,
    verdict: 'correct',
    rationale: 'alias',
    reply: '{"verdict":"correct","rationale":"alias"}',
  });
  assert.equal((await judgeWithRationale(judge, 'Q?', ['Lima'], null)).verdict, 'no answer');
  const down: Judge = {
    ...judge,
    backend: backendReplying(() => {
      throw new Error('connect ECONNREFUSED');
    }),
  };
  await assert.rejects(judgeWithRationale(down, 'Q?', ['Lima'], 'Lima'), /ECONNREFUSED/);
});
