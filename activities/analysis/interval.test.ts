import { test } from 'node:test';
import assert from 'node:assert/strict';
import { meanWithInterval } from './interval.js';

test('the bootstrap interval holds the mean, narrows with more data and is the same twice', () => {
  const small = meanWithInterval([0, 1, 0, 1]);
  assert.equal(small.mean, 0.5);
  assert.ok(small.low < 0.5 && small.high > 0.5 && small.low >= 0 && small.high <= 1);
  const large = meanWithInterval(Array.from({ length: 400 }, (_, index) => index % 2));
  assert.ok(large.high - large.low < small.high - small.low, 'more samples, a narrower interval');
  assert.ok(large.high - large.low < 0.15);
  assert.deepEqual(meanWithInterval([0, 1, 0, 1]), small, 'seeded');
  assert.deepEqual(meanWithInterval([0.3]), { n: 1, mean: 0.3, low: 0.3, high: 0.3 });
  assert.ok(Number.isNaN(meanWithInterval([]).mean));
  const constant = meanWithInterval([1, 1, 1]);
  assert.deepEqual([constant.low, constant.high], [1, 1]);
});
