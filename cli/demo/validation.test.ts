import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bestValidated, validationVersions } from './validation.js';

test('the validated versions: the start, every K-th after it, and the last always', () => {
  assert.deepEqual(validationVersions(31, 39, 2), [31, 33, 35, 37, 39]);
  assert.deepEqual(validationVersions(31, 38, 3), [31, 34, 37, 38], 'the last one even off the stride');
  assert.deepEqual(validationVersions(5, 5, 2), [5], 'no step: only the start');
  assert.deepEqual(validationVersions(0, 3, 1), [0, 1, 2, 3]);
  assert.throws(() => validationVersions(0, 3, 0), /every must be a positive integer/);
});

test('the kept version has the best validation EM, the latest of equals; the start can win', () => {
  const rows = [
    { version: 31, em: 0.25 },
    { version: 33, em: 0.3125 },
    { version: 35, em: 0.3125 },
    { version: 37, em: 0.1875 },
  ];
  assert.equal(bestValidated(rows).version, 35);
  assert.equal(
    bestValidated([
      { version: 31, em: 0.5 },
      { version: 33, em: 0.25 },
    ]).version,
    31,
    'RL that only loses keeps the start',
  );
  assert.throws(() => bestValidated([]), /no validated version/);
});
