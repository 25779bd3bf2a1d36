import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildPrompt, stopStrings, type PromptOptions } from './prompt.js';

const options: PromptOptions = { protocol: 'tags', contextMode: 'full', recentChars: 60, tools: ['search', 'answer'], template: 'chatml' };

test('the full prompt is header, then every generated text and observation in order', () => {
  const prompt = buildPrompt(
    'Capital of Peru?',
    [
      { kind: 'generated', text: '<search>Peru</search>' },
      { kind: 'observation', text: 'Lima is the capital.' },
    ],
    options,
  );
  assert.ok(prompt.startsWith('<|im_start|>system\nYou answer questions by searching.'));
  assert.ok(prompt.includes('<|im_start|>user\nCapital of Peru?<|im_end|>\n<|im_start|>assistant\n'));
  assert.ok(prompt.endsWith('<search>Peru</search>\n<information>\nLima is the capital.\n</information>\n'));
});

test('recent mode keeps the question and only the latest history that fits', () => {
  const segments = Array.from({ length: 10 }, (_, index) => ({
    kind: 'generated' as const,
    text: `<search>query number ${index}</search>`,
  }));
  const prompt = buildPrompt('Q?', segments, { ...options, contextMode: 'recent' });
  assert.ok(prompt.includes('Q?'));
  assert.ok(prompt.includes('query number 9'));
  assert.ok(!prompt.includes('query number 0'));
  assert.match(prompt, /\[\d+ earlier steps omitted\]/);
});

test('generation stops after any closed action tag', () => {
  assert.deepEqual(stopStrings(options), ['</search>', '</answer>', '<|im_end|>']);
});
