import { test } from 'node:test';
import assert from 'node:assert/strict';
import { actionKey, parseAction, type ParseOptions } from './parse-action.js';

const tags: ParseOptions = { protocol: 'tags', tools: ['search', 'access', 'answer'], maxCallsPerTurn: 1 };

test('a search call after thinking parses to one tool call', () => {
  assert.deepEqual(parseAction('<think>I should look it up <answer>no</answer></think>\n<search> capital of Peru </search>', tags), {
    kind: 'tools',
    calls: [{ tool: 'search', input: { query: 'capital of Peru' } }],
  });
});

test('access and answer parse to their inputs', () => {
  assert.deepEqual(parseAction('<access>doc-17</access>', tags), {
    kind: 'tools',
    calls: [{ tool: 'access', input: { target: 'doc-17' } }],
  });
  assert.deepEqual(parseAction('<answer> Lima </answer>', tags), { kind: 'answer', answer: 'Lima' });
});

test('malformed outputs become invalid steps with a reason', () => {
  const cases: [string, string][] = [
    ['<search>capital of Peru', 'unclosed <search>'],
    ['<search>a</search><answer>b</answer>', 'two actions in one turn: an answer must stand alone'],
    ['<search>a</search><search>b</search>', 'two actions in one turn: 2 tool calls, at most 1 allowed'],
    ['<browse>x</browse>', 'unknown tool "browse" (available: search, access, answer)'],
    ['<answer>   </answer>', 'empty answer'],
    ['I think the answer is Lima.', 'no action: expected one of <search>, <access>, <answer>'],
    ['<think>forever', 'unclosed <think>'],
  ];
  for (const [text, reason] of cases) assert.deepEqual(parseAction(text, tags), { kind: 'invalid', reason }, text);
});

test('100 kB of garbage is an invalid step, not a crash, and its reason stays short', () => {
  const garbage = Array.from({ length: 100_000 }, (_, index) => String.fromCharCode(33 + ((index * 7919) % 90))).join('');
  const parsed = parseAction(garbage, tags);
  assert.equal(parsed.kind, 'invalid');
  assert.ok(parsed.kind === 'invalid' && parsed.reason.length <= 201);
});

test('parallel calls are allowed up to maxCallsPerTurn', () => {
  assert.deepEqual(parseAction('<search>a</search> <search>b</search>', { ...tags, maxCallsPerTurn: 2 }), {
    kind: 'tools',
    calls: [
      { tool: 'search', input: { query: 'a' } },
      { tool: 'search', input: { query: 'b' } },
    ],
  });
});

test('json protocol parses tool_call blocks and rejects broken JSON', () => {
  const json: ParseOptions = { ...tags, protocol: 'json' };
  assert.deepEqual(parseAction('<tool_call>{"name":"search","arguments":{"query":"x"}}</tool_call>', json), {
    kind: 'tools',
    calls: [{ tool: 'search', input: { query: 'x' } }],
  });
  assert.deepEqual(parseAction('<tool_call>{"name":"answer","arguments":{"answer":"Lima"}}</tool_call>', json), {
    kind: 'answer',
    answer: 'Lima',
  });
  assert.deepEqual(parseAction('<tool_call>{name:search}</tool_call>', json), { kind: 'invalid', reason: 'tool call is not valid JSON' });
  assert.deepEqual(parseAction('<tool_call>{"name":"search"', json), { kind: 'invalid', reason: 'unclosed <tool_call>' });
});

test('the same action gives the same key and a different one a different key', () => {
  const a = parseAction('<search>a</search>', tags);
  assert.equal(actionKey(a), actionKey(parseAction('<think>x</think><search>a</search>', tags)));
  assert.notEqual(actionKey(a), actionKey(parseAction('<search>b</search>', tags)));
});
