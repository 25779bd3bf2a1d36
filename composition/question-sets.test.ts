import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { listEvaluationSets, loadContaminationIndex, loadEvaluationSets, loadQuestionSet } from './question-sets.js';
import { config } from '../infra/config.js';

const root = config().dataRoot;

test('every question set under the data root is listed with its layout; corpora are left out', async () => {
  const sets = await listEvaluationSets(root);
  assert.deepEqual(
    sets.map((set) => `${set.set} ${set.layout}`),
    [
      'fanoutqa/fanout-final-dev.json fanoutqa',
      'flashrag_quickstart/nq_test.jsonl flashrag',
      'hipporag_legacy/hotpotqa_train.json hipporag',
      'hipporag_legacy/musique_train.json hipporag',
      'hipporag_legacy/sample.json hipporag',
      'r1searcher_eval_set/2wiki_500.jsonl r1-searcher',
      'r1searcher_eval_set/bamboogle.jsonl r1-searcher',
      'r1searcher_eval_set/hotpotqa_500.jsonl r1-searcher',
      'r1searcher_eval_set/musique_500.jsonl r1-searcher',
      'simpledeepsearcher/2wiki.json simpledeepsearcher',
      'simpledeepsearcher/bamboogle.json simpledeepsearcher',
      'simpledeepsearcher/frames.json simpledeepsearcher',
      'simpledeepsearcher/musique.json simpledeepsearcher',
    ],
  );
  await assert.rejects(listEvaluationSets(path.join(root, 'missing')), /dataRoot: no such folder .*LONGHAUL_DATA_ROOT/);
});

test('every set loads without a skipped row, with the counts of the data README and the sha256 of PROVENANCE.tsv', async () => {
  const provenance = new Map(
    fs
      .readFileSync(path.join(root, 'PROVENANCE.tsv'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split('\t'))
      .map(([file, , sha]) => [file!, sha!]),
  );
  const sets = await loadEvaluationSets(root);
  const counts = Object.fromEntries(sets.map((set) => [set.set, set.items.length]));
  assert.deepEqual(counts, {
    'fanoutqa/fanout-final-dev.json': 310,
    'flashrag_quickstart/nq_test.jsonl': 17,
    'hipporag_legacy/hotpotqa_train.json': 100,
    'hipporag_legacy/musique_train.json': 100,
    'hipporag_legacy/sample.json': 1,
    'r1searcher_eval_set/2wiki_500.jsonl': 500,
    'r1searcher_eval_set/bamboogle.jsonl': 125,
    'r1searcher_eval_set/hotpotqa_500.jsonl': 500,
    'r1searcher_eval_set/musique_500.jsonl': 500,
    'simpledeepsearcher/2wiki.json': 500,
    'simpledeepsearcher/bamboogle.json': 125,
    'simpledeepsearcher/frames.json': 824,
    'simpledeepsearcher/musique.json': 500,
  });
  for (const set of sets) {
    assert.deepEqual(set.skipped, [], set.set);
    assert.ok(set.sha256.startsWith(provenance.get(set.set)!), set.set);
    for (const item of set.items)
      assert.ok(item.question !== '' && item.answers.length > 0 && item.answers.every((answer) => answer !== ''), set.set);
  }
  const index = await loadContaminationIndex(root);
  assert.equal(index.describe().questions, 4102);
});

test('a missing file, a folder and a corpus are clear errors naming the file', async () => {
  await assert.rejects(loadQuestionSet(path.join(root, 'nope.jsonl')), /nope\.jsonl: no such file; give the path of a question-set file/);
  await assert.rejects(loadQuestionSet(root), /is a folder, not a file/);
  await assert.rejects(
    loadQuestionSet(path.join(root, 'hipporag_main', '2wikimultihopqa_corpus.json')),
    /holds passages \(fields title, text\), not questions/,
  );
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-question-sets-'));
  try {
    const file = path.join(folder, 'bad.jsonl');
    fs.writeFileSync(file, '{"id":"1","question":"q?","answers":["a"]}\n{"id":"2","question":"r?"}\n');
    const set = await loadQuestionSet(file);
    assert.deepEqual(set.skipped, [{ line: 2, field: 'answers', reason: 'missing' }]);
    await assert.rejects(
      loadQuestionSet(file, { strict: true }),
      new RegExp(`${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:2: answers: missing`),
    );
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
});
