import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { parseQuestionSet, questionSetLayoutNames, sniffQuestionSetLayout, toQuestionRow, type QuestionSet } from './question-set.js';
import { toASearcherJsonl } from './asearcher.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

const jsonl = (...rows: unknown[]) => rows.map((row) => (typeof row === 'string' ? row : JSON.stringify(row))).join('\n') + '\n';

test('every JSON Lines layout is detected from its rows and read into items', () => {
  const cases: [string, string, Partial<QuestionSet['items'][number]>][] = [
    [
      'longhaul',
      jsonl({ id: 'q1', question: 'Capital of Peru?', answers: ['Lima'], goldTurns: ['search', 'answer'] }),
      { id: 'q1', answers: ['Lima'], metadata: { goldTurns: ['search', 'answer'] } },
    ],
    [
      'asearcher',
      jsonl({ question: 'Capital of Peru?', answer: 'Lima', source: 'synth', id: 'a7', aug_answer: ['Lima, Peru', 'Lima'] }),
      { id: 'a7', answers: ['Lima', 'Lima, Peru'], source: 'synth' },
    ],
    [
      'r1-searcher',
      jsonl({ idx: 3, question: 'Capital of Peru?', answer: 'Lima', gen_text_store: '' }),
      { id: '3', answers: ['Lima'], source: 'set' },
    ],
    [
      'flashrag',
      jsonl({ id: 'test_0', question: 'Capital of Peru?', golden_answers: ['Lima', 'Ciudad de los Reyes'] }),
      { answers: ['Lima', 'Ciudad de los Reyes'] },
    ],
    [
      'kilt',
      jsonl({ id: 'k1', input: 'Capital of Peru?', output: [{ answer: 'Lima', provenance: [{ wikipedia_id: '1' }] }, { provenance: [] }] }),
      { id: 'k1', question: 'Capital of Peru?', answers: ['Lima'] },
    ],
  ];
  for (const [layout, text, expected] of cases) {
    const set = parseQuestionSet(text, `/data/${layout}/set.jsonl`);
    assert.equal(set.layout, layout);
    assert.equal(set.name, 'set');
    assert.deepEqual(set.skipped, []);
    assert.equal(set.items.length, 1);
    assert.deepEqual({ ...set.items[0], ...expected }, set.items[0], layout);
    assert.equal(set.sha256, createHash('sha256').update(text).digest('hex'));
  }
});

test('the JSON-array layouts are detected, with FRAMES links, HippoRAG aliases and FanOutQA structured answers', () => {
  const sds = parseQuestionSet(
    JSON.stringify([
      { id: '0', Question: 'Who?', answer: ['Jane Ballou'], wikipedia_link_1: 'https://en.wikipedia.org/wiki/X', wikipedia_link_2: '' },
    ]),
    'frames.json',
  );
  assert.equal(sds.layout, 'simpledeepsearcher');
  assert.deepEqual(sds.items[0]!.metadata, { wikipediaLinks: ['https://en.wikipedia.org/wiki/X'] });
  const hippo = parseQuestionSet(
    JSON.stringify([
      {
        id: '2hop_1',
        question: 'Who?',
        answer: 'G. Stanley Hall',
        answer_aliases: ['Stanley Hall'],
        paragraphs: [{ title: 'A', is_supporting: true }, { title: 'B' }],
      },
      { _id: '5a7', question: 'What?', answer: 'a spirit', supporting_facts: [['Lilu', 0]], type: 'bridge', context: [] },
    ]),
    'musique_train.json',
  );
  assert.equal(hippo.layout, 'hipporag');
  assert.deepEqual(hippo.items[0]!.answers, ['G. Stanley Hall', 'Stanley Hall']);
  assert.deepEqual(hippo.items[0]!.metadata!.supportingTitles, ['A']);
  assert.equal(hippo.items[1]!.id, '5a7');
  const fanout = parseQuestionSet(
    JSON.stringify([
      {
        id: 'f1',
        question: 'Batting hands?',
        answer: { 'Pat Burrell': 'Right', 'Mark Mulder': 'Left' },
        decomposition: [],
        categories: ['Sports'],
      },
      { id: 'f2', question: 'How many?', answer: 61.6, decomposition: [] },
    ]),
    'fanout.json',
  );
  assert.equal(fanout.layout, 'fanoutqa');
  assert.deepEqual(fanout.items[0]!.answers, ['Pat Burrell: Right; Mark Mulder: Left']);
  assert.deepEqual(fanout.items[0]!.metadata!.answerParts, ['Right', 'Left']);
  assert.deepEqual(fanout.items[1]!.answers, ['61.6']);
});

test('a bad row is skipped with its line number and field; --strict refuses the file naming file, line and field', () => {
  const text = jsonl(
    { id: 'q1', question: 'ok?', answers: ['yes'] },
    '',
    '{not json',
    { id: 'q2', question: '', answers: ['x'] },
    { id: 'q3', question: 'no answers?', answers: [] },
    { id: 'q1', question: 'again?', answers: ['y'] },
    [1, 2],
    { id: 'q4', question: 'fine?', answers: ['fine'] },
  );
  const set = parseQuestionSet(text, 'rows.jsonl');
  assert.deepEqual(
    set.items.map((item) => item.id),
    ['q1', 'q4'],
  );
  assert.deepEqual(set.skipped, [
    { line: 3, field: 'row', reason: 'not valid JSON' },
    { line: 4, field: 'question', reason: 'expected a non-empty string' },
    { line: 5, field: 'answers', reason: 'no non-empty answer' },
    { line: 6, field: 'id', reason: '"q1" repeats the id of line 1' },
    { line: 7, field: 'row', reason: 'expected a JSON object' },
  ]);
  assert.throws(
    () => parseQuestionSet(text, 'rows.jsonl', { strict: true }),
    (error: unknown) => {
      assert.ok(LonghaulError.is(error) && error.code === errorTypes.invalidInput);
      assert.equal(error.field, 'rows.jsonl:3');
      assert.match(error.message, /^rows\.jsonl:3: row: not valid JSON \(fix the row, or load without --strict/);
      return true;
    },
  );
});

test('rows of a JSON array are reported by the line they start on', () => {
  const text =
    '[\n  {"id": "a", "Question": "one?", "answer": ["1"]},\n  {\n    "id": "b",\n    "Question": "",\n    "answer": ["2"]\n  },\n  {"id": "c", "Question": "three? [x] {y}", "answer": []}\n]\n';
  const set = parseQuestionSet(text, 'array.json');
  assert.equal(set.layout, 'simpledeepsearcher');
  assert.deepEqual(
    set.skipped.map((row) => [row.line, row.field]),
    [
      [3, 'Question'],
      [8, 'answer'],
    ],
  );
});

test('limit stops after N items; a layout can be forced, and a wrong or unknown one is a clear error', () => {
  const text = jsonl(...[1, 2, 3, 4].map((idx) => ({ idx, question: `q${idx}?`, answer: `a${idx}` })));
  assert.equal(parseQuestionSet(text, 'x.jsonl', { limit: 2 }).items.length, 2);
  assert.equal(parseQuestionSet(text, 'x.jsonl', { layout: 'asearcher' }).layout, 'asearcher');
  assert.throws(
    () => parseQuestionSet(text, 'x.jsonl', { layout: 'hipporag' }),
    /x\.jsonl: layout hipporag is a JSON array, but the file is JSON Lines/,
  );
  assert.throws(
    () => parseQuestionSet(text, 'x.jsonl', { layout: 'squad' }),
    (error: unknown) =>
      LonghaulError.is(error) && error.message === `layout: unknown layout "squad"; known layouts: ${questionSetLayoutNames.join(', ')}`,
  );
  assert.throws(
    () => parseQuestionSet(jsonl({ foo: 1 }), 'odd.jsonl'),
    /odd\.jsonl: unrecognised question-set layout \(first row's fields: foo\); known layouts: longhaul/,
  );
  assert.throws(
    () => parseQuestionSet(jsonl({ id: '0', contents: 'passage' }), 'corpus.jsonl'),
    /corpus\.jsonl: holds passages .*ingest it as a corpus/,
  );
  assert.throws(() => parseQuestionSet('  \n', 'empty.jsonl'), /empty\.jsonl: the file is empty/);
  assert.throws(() => parseQuestionSet('[{"a": 1},', 'broken.json'), /broken\.json: starts like a JSON array but is not valid JSON/);
});

test('sniffing a prefix tells question sets from corpora without reading the whole file', () => {
  assert.equal(
    sniffQuestionSetLayout('[\n {"id": "x", "question": "q?", "answer": {"a": 1}, "decomposition": [{"q": "[}"}]}, {"id": '),
    'fanoutqa',
  );
  assert.equal(sniffQuestionSetLayout('{"idx": 1, "question": "q?", "answer": "a"}\n{"idx"'), 'r1-searcher');
  assert.equal(sniffQuestionSetLayout('[{"title": "T", "text": "passage"}'), null);
  assert.equal(sniffQuestionSetLayout('[{"id": "x", "Question": "cut off he'), null);
  assert.equal(sniffQuestionSetLayout('0\tTitle: x'), null);
});

test('ASearcher JSONL round-trips through the loader, and items become learner QuestionRows', () => {
  const items = [
    { id: 'a1', question: 'Capital of Peru?', answers: ['Lima', 'Lima, Peru'], source: 'grounded' },
    { id: 'a2', question: 'Highest peak?', answers: ['Everest'], source: 'grounded' },
  ];
  const text = toASearcherJsonl(items);
  assert.deepEqual(JSON.parse(text.split('\n')[0]!), {
    question: 'Capital of Peru?',
    answer: 'Lima',
    source: 'grounded',
    id: 'a1',
    aug_answer: ['Lima, Peru'],
  });
  const back = parseQuestionSet(text, 'export.jsonl');
  assert.equal(back.layout, 'asearcher');
  assert.deepEqual(back.items, items);
  assert.equal(toASearcherJsonl([]), '');
  assert.deepEqual(toQuestionRow({ id: 'g', question: 'q?', answers: ['a'], metadata: { goldTurns: ['t1', 't2'] } }), {
    id: 'g',
    question: 'q?',
    answers: ['a'],
    goldTurns: ['t1', 't2'],
  });
  assert.deepEqual(toQuestionRow(items[1]!), { id: 'a2', question: 'Highest peak?', answers: ['Everest'] });
});

test("a Longhaul row's hop count: its own, else its synthesis provenance's; a bad one skips the row naming the field", () => {
  const rows = [
    { id: 'own', question: 'q1?', answers: ['a'], hops: 2 },
    { id: 'synthesized', question: 'q2?', answers: ['b'], provenance: { datasetId: 'd', hops: 1 } },
    { id: 'none', question: 'q3?', answers: ['c'] },
    { id: 'bad', question: 'q4?', answers: ['d'], provenance: { hops: 'one' } },
    { id: 'zero', question: 'q5?', answers: ['e'], hops: 0 },
  ];
  const set = parseQuestionSet(rows.map((row) => JSON.stringify(row)).join('\n'), 'rows.jsonl');
  assert.deepEqual(
    set.items.map((item) => toQuestionRow(item).hops),
    [2, 1, undefined],
  );
  assert.deepEqual(
    set.skipped.map((row) => [row.line, row.field]),
    [
      [4, 'provenance.hops'],
      [5, 'hops'],
    ],
  );
});
