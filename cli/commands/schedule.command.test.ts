import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatInterval, parseInterval } from './schedule.command.js';

test('parseInterval reads s, m, h, d and their sums, and refuses anything else naming the flag', () => {
  assert.equal(parseInterval('90s', 'every'), 90_000);
  assert.equal(parseInterval('15m', 'every'), 900_000);
  assert.equal(parseInterval('1h30m', 'every'), 5_400_000);
  assert.equal(parseInterval('1.5h', 'every'), 5_400_000);
  assert.equal(parseInterval('2D', 'every'), 172_800_000);
  for (const bad of ['', '10', 'h', '5 minutes', '1h-30m', '1w', 'every 1h'])
    assert.throws(() => parseInterval(bad, 'every'), /^UsageError: --every: cannot parse|--every: cannot parse/, bad);
  assert.throws(() => parseInterval('0s', 'catchup-window'), /--catchup-window: "0s" is out of range/);
  assert.throws(() => parseInterval('400d', 'every'), /out of range/);
});

test('formatInterval writes what parseInterval reads', () => {
  for (const text of ['90s', '15m', '1h30m', '2d', '1d2h3m4s'])
    assert.equal(formatInterval(parseInterval(text, 'every')), text === '90s' ? '1m30s' : text);
});
