import { test } from 'node:test';
import assert from 'node:assert/strict';
import { joinNegativeValues, parseFlags } from './arguments.js';
import { UsageError } from './command.js';

const options = {
  'unanswered-reward': { type: 'string' },
  count: { type: 'string', short: 'n' },
  json: { type: 'boolean' },
} as const;

test('a negative number after a flag that takes a value is that flag’s value', () => {
  const { values } = parseFlags(['--unanswered-reward', '-0.1', '-n', '-2', '--json'], options);
  assert.equal(values['unanswered-reward'], '-0.1');
  assert.equal(values.count, '-2');
  assert.equal(values.json, true);
  assert.deepEqual(joinNegativeValues(['--unanswered-reward', '-.5'], options), ['--unanswered-reward=-.5']);
  assert.deepEqual(joinNegativeValues(['--unanswered-reward', '-1e-3'], options), ['--unanswered-reward=-1e-3']);
});

test('words that are not negative numbers, flags written with =, and words after -- are left alone', () => {
  assert.deepEqual(joinNegativeValues(['--unanswered-reward=-0.1', '--json'], options), ['--unanswered-reward=-0.1', '--json']);
  assert.deepEqual(joinNegativeValues(['--json', '-1'], options), ['--json', '-1']);
  assert.deepEqual(joinNegativeValues(['--', '--count', '-1'], options), ['--', '--count', '-1']);
  // A flag followed by another flag still fails as parseArgs would have it, naming the flag.
  assert.throws(
    () => parseFlags(['--unanswered-reward', '--json'], options),
    (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.match(error.message, /--unanswered-reward/);
      return true;
    },
  );
});
