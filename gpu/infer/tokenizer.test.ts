import assert from 'node:assert/strict';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { renderChat, type ChatMessage } from './chat-template.js';
import { pythonJson, tinyModelDir } from '../../test/doubles/test-model.js';
import { BpeTokenizer } from './tokenizer.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

const samples = [
  'The capital of France is Paris.',
  '  leading spaces,\ttabs and\n\nnew lines   ',
  "It's 2024: we'll pay $1,234.56 (or 3.14e10) — don't we?",
  'Ünïcödé: 東京は日本の首都です。 Emoji: 🚀🔥 and accents: café, naïve, Zürich',
  '<|im_start|>user\nWhat is <search>Longhaul</search>?<|im_end|>\n<|im_start|>assistant\n',
  'code: def f(x):\n    return x**2  # square\n',
  '',
];

const conversations: ChatMessage[][] = [
  [{ role: 'user', content: 'What is the capital of France?' }],
  [
    { role: 'system', content: 'Answer briefly.' },
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: 'Hello!' },
    { role: 'user', content: 'Who are you?' },
  ],
];

const pythonTokenizer = `
import json, sys
from transformers import AutoTokenizer
arg = json.loads(sys.argv[1])
tokenizer = AutoTokenizer.from_pretrained(arg["dir"])
ids = [tokenizer(text, add_special_tokens=False).input_ids for text in arg["samples"]]
chats = [tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) for chat in arg["chats"]]
print(json.dumps({"ids": ids, "chats": chats}))
`;

describe('the byte-level BPE tokenizer', () => {
  let tokenizer: BpeTokenizer;
  let reference: { ids: number[][]; chats: string[] };

  before(async () => {
    const dir = await tinyModelDir();
    tokenizer = BpeTokenizer.fromFile(path.join(dir, 'tokenizer.json'));
    reference = (await pythonJson(pythonTokenizer, { dir, samples, chats: conversations })) as typeof reference;
  });

  it('encodes text to exactly the ids of the Python tokenizer', () => {
    samples.forEach((sample, index) =>
      assert.deepEqual(tokenizer.encode(sample), reference.ids[index], `sample ${index}: ${JSON.stringify(sample)}`),
    );
  });

  it('decodes ids back to the original text', () => {
    for (const sample of samples) assert.equal(tokenizer.decode(tokenizer.encode(sample)), sample);
  });

  it("renders chats exactly as the model's chat template does", () => {
    conversations.forEach((chat, index) => assert.equal(renderChat(chat), reference.chats[index]));
  });

  it('names the bad token id when asked to decode one outside the vocabulary', () => {
    assert.throws(
      () => tokenizer.decode([49152]),
      (error: unknown) =>
        error instanceof LonghaulError &&
        error.code === errorTypes.invalidInput &&
        error.message === 'token id 49152 is outside the vocabulary (0..49151)',
    );
  });

  it('rejects a tokenizer file that is not BPE, naming the field', () => {
    assert.throws(
      () => new BpeTokenizer({ model: { type: 'WordPiece', vocab: {}, merges: [] } }),
      (error: unknown) =>
        error instanceof LonghaulError && error.code === errorTypes.invalidInput && error.message.startsWith('tokenizer.json: model.type:'),
    );
  });
});
