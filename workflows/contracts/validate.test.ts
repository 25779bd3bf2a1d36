import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSkeletonInput } from './skeleton.contract.js';
import { InputError } from './validate.js';

test('a valid skeleton input gets its defaults', () => {
  assert.deepEqual(parseSkeletonInput({ steps: 3 }), { steps: 3, stepDelayMs: 0, label: 'skeleton', startStep: 0 });
});

test('each bad skeleton input names its field', () => {
  const cases: [unknown, string][] = [
    [null, 'input'], [[1], 'input'], [{}, 'steps'], [{ steps: 0 }, 'steps'], [{ steps: 1.5 }, 'steps'],
    [{ steps: 2, stepDelayMs: -1 }, 'stepDelayMs'], [{ steps: 2, label: '' }, 'label'], [{ steps: 2, startStep: 3 }, 'startStep'], [{ steps: 2, extra: true }, 'extra'],
  ];
  for (const [input, field] of cases) {
    assert.throws(() => parseSkeletonInput(input), (error: unknown) => error instanceof InputError && error.field === field, `expected ${field} to be named for ${JSON.stringify(input)}`);
  }
});
