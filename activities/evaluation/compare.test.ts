import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareEvaluations, questionScores } from './compare.js';
import { evaluationResultSchema, evaluationResultSchemaName, type EvaluationResult } from '../ports/evaluation-result.schema.js';

/** A stored result whose question i has the given EM per sample (F1 = EM), validated by the real schema. */
function result(
  resultId: string,
  version: number,
  questions: Record<string, number[]>,
  text = (id: string) => `question ${id}?`,
): EvaluationResult {
  const perQuestion = Object.entries(questions).map(([questionId, ems]) => ({
    questionId,
    question: text(questionId),
    answers: ['x'],
    samples: ems.map((em, index) => ({
      trajectoryId: `${resultId}-${questionId}-${index}`,
      answer: em ? 'x' : 'y',
      scores: { em, f1_flashrag: em },
      turns: 2,
      toolCalls: 1,
      stopReason: 'answered',
    })),
  }));
  return evaluationResultSchema.parse({
    schema: evaluationResultSchemaName,
    summary: {
      resultId,
      dataset: 'unit',
      datasetVersion: 'sha-unit',
      questions: perQuestion.length,
      k: perQuestion[0]!.samples.length,
      policyVersion: version,
      avgAtK: {},
      avgAtKCi95: {},
      passAtK: {},
      meanTurns: 2,
      meanToolCalls: 1,
      stopReasons: {},
      seconds: 1,
      createdAt: '2026-12-04T00:00:00Z',
    },
    environment: {
      datasetHash: 'sha-unit',
      corpusVersion: 'corpus-1-a',
      promptTemplateHash: 'a'.repeat(64),
      tools: {},
      sampling: { temperature: 0.7, topP: 1, maxNewTokens: 48, seed: 0 },
      policyVersion: version,
    },
    perQuestion,
  });
}

test('questions are paired by id: per metric both Avg@k, the paired gain with its interval, and how many rose or fell', () => {
  const before = result('a', 9, { q1: [0, 0], q2: [1, 0], q3: [1, 1], q4: [0, 0], q5: [0, 1] });
  // Listed in another order: pairing is by id, not position.
  const after = result('b', 20, { q5: [1, 1], q4: [0, 0], q3: [1, 1], q2: [1, 1], q1: [1, 0] });
  const comparison = compareEvaluations(before, after, 3);
  assert.equal(comparison.paired, 5);
  assert.deepEqual([comparison.beforeOnly, comparison.afterOnly, comparison.mismatched.length], [0, 0, 0]);
  assert.deepEqual(Object.keys(comparison.metrics), ['em', 'f1_flashrag']);
  const em = comparison.metrics.em!;
  assert.equal(em.before, 2 / 5);
  assert.equal(em.after, 3.5 / 5);
  assert.ok(Math.abs(em.difference - (em.after - em.before)) < 1e-12);
  assert.ok(em.ci95[0] <= em.difference && em.difference <= em.ci95[1], String(em.ci95));
  assert.deepEqual([em.improved, em.worsened, em.unchanged], [3, 0, 2]);
  assert.equal(comparison.before.policyVersion, 9);
  assert.equal(comparison.after.temperature, 0.7);
  assert.deepEqual(
    questionScores(before, 'em').map((item) => item.score),
    [0, 0.5, 1, 0, 0.5],
  );
});

test('a question on one side only, or one whose text changed under the same id, is left out and counted', () => {
  const before = result('a', 1, { q1: [1], q2: [0], q3: [0] });
  const after = result('b', 2, { q1: [1], q2: [1], q4: [1] }, (id) => (id === 'q2' ? 'another question?' : `question ${id}?`));
  const comparison = compareEvaluations(before, after);
  assert.equal(comparison.paired, 1);
  assert.deepEqual(comparison.mismatched, ['q2']);
  assert.deepEqual([comparison.beforeOnly, comparison.afterOnly], [1, 1]);
  assert.deepEqual([comparison.metrics.em!.difference, ...comparison.metrics.em!.ci95], [0, 0, 0]);
});
