import assert from 'node:assert/strict';
import { test } from 'node:test';
import { goldTurnLengths, goldTurnLengthsLine } from './gold-turn-lengths.js';

const words = (text: string) => text.split(' ').map((_, index) => index);
const row = (id: string, goldTurns?: string[]) => ({ id, question: `${id}?`, answers: ['a'], ...(goldTurns ? { goldTurns } : {}) });

test('a gold path with one turn longer than the limit (end token counted) is counted; paths without gold are not', () => {
  const lengths = goldTurnLengths(
    [row('short', ['a b c', 'd e']), row('long', ['a b', 'a b c d e f g']), row('exact', ['a b c d e f']), row('none')],
    words,
    7,
  );
  assert.deepEqual(lengths, { paths: 3, overLimit: 1, longest: 8, limit: 7 });
  assert.equal(
    goldTurnLengthsLine(lengths),
    'gold turns: 1 of 3 paths have a turn longer than the 7 tokens a policy turn may write (longest 8): the policy is trained on turns it cannot write (raise --max-new-tokens or shorten the thoughts)',
  );
  assert.equal(
    goldTurnLengthsLine(goldTurnLengths([row('short', ['a b c'])], words, 7)),
    'gold turns: the longest is 4 tokens, within the 7 a policy turn may write',
  );
  assert.equal(goldTurnLengthsLine(goldTurnLengths([row('none')], words, 7)), 'gold turns: no gold path to measure');
});
