import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { tinyModelDir } from '../test/doubles/test-model.js';
import { BpeTokenizer } from '../gpu/infer/tokenizer.js';
import { goldTurnLengths, goldTurnLengthsLine, measureGoldTurns } from './gold-turn-lengths.js';

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

test("measureGoldTurns reads the start version's tokenizer from the blob store, and says why when it cannot", async () => {
  const tokenizerFile = path.join(await tinyModelDir(), 'tokenizer.json');
  const encode = (text: string) => BpeTokenizer.fromFile(tokenizerFile).encode(text);
  const turn = '<think>The question names Barysaw; the answer is 1 link away. I will search for it.</think>\n<search>Barysaw</search>';
  const tokens = encode(turn).length + 1;
  const versions = { get: async (version: number) => (version === 3 ? { blobPrefix: 'policies/v3/' } : undefined) };
  const blobs = {
    get: async (key: string) => {
      if (key !== 'policies/v3/tokenizer.json') throw new Error(`no blob ${key}`);
      return fs.readFileSync(tokenizerFile);
    },
  };
  const stores = { versions, blobs } as unknown as Parameters<typeof measureGoldTurns>[0];
  const rows = [row('q', [turn])];
  assert.equal(
    await measureGoldTurns(stores, 3, rows, tokens),
    `gold turns: the longest is ${tokens} tokens, within the ${tokens} a policy turn may write`,
  );
  assert.match(
    await measureGoldTurns(stores, 3, rows, tokens - 1),
    new RegExp(`^gold turns: 1 of 1 paths have a turn longer than the ${tokens - 1} tokens`),
  );
  assert.equal(await measureGoldTurns(stores, 4, rows, 48), 'gold turns: not measured (policy version 4 is not registered)');
  const elsewhere = { versions: { get: async () => ({ blobPrefix: 'gone/' }) }, blobs } as unknown as Parameters<
    typeof measureGoldTurns
  >[0];
  assert.equal(await measureGoldTurns(elsewhere, 3, rows, 48), 'gold turns: not measured (no blob gone/tokenizer.json)');
});
