import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseLearnerInput } from './learner.input.js';
import { InputError } from './validate.js';

const evaluation = { everyVersions: 2, datasetKey: 'evaluations/datasets/x.jsonl', dataset: 'x', datasetVersion: 'sha', questions: 3 };
const base = { runId: 'r', datasetKey: 'q.jsonl' };

test('the learner accepts an evaluation request and refuses a bad one naming the field', () => {
  assert.equal(parseLearnerInput(base).evaluation, undefined);
  assert.deepEqual(parseLearnerInput({ ...base, evaluation }).evaluation, evaluation);
  const refusals: [Record<string, unknown>, string][] = [
    [{ ...evaluation, everyVersions: 0 }, 'evaluation.everyVersions'],
    [{ ...evaluation, k: 0 }, 'evaluation.k'],
    [{ ...evaluation, policyVersion: 3 }, 'evaluation.policyVersion'],
    [{ ...evaluation, questions: undefined }, 'evaluation.questions'],
  ];
  for (const [bad, field] of refusals)
    assert.throws(
      () => parseLearnerInput({ ...base, evaluation: bad }),
      (error: unknown) => error instanceof InputError && error.field === field,
      field,
    );
});
