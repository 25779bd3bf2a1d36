import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ContaminationIndex, defaultContaminationN, defaultContaminationThreshold } from './contamination.js';
import { loadQuestionSet } from '../../composition/question-sets.js';
import { config } from '../../infra/config.js';

const data = (file: string) => `${config().dataRoot}/${file}`;

test('equal SQuAD-normalised text is contaminated; n-gram containment above the threshold too; other questions are not', () => {
  const index = new ContaminationIndex().add('bamboogle', [
    { id: '1', question: 'Who was president of the United States in the year that Citibank was founded?' },
    { id: '2', question: 'Who won?' },
  ]);
  assert.deepEqual(index.check('who was President of the united states in THE year that Citibank was founded'), {
    contaminated: true,
    reason: 'normalised-text',
    set: 'bamboogle',
    itemId: '1',
    question: 'Who was president of the United States in the year that Citibank was founded?',
    overlap: 1,
  });
  assert.equal(index.check('Who won'.toUpperCase()).reason, 'normalised-text');
  const embedded = index.check('Where was the man born who was president of the United States in the year that Citibank was founded?');
  assert.equal(embedded.reason, 'ngram');
  assert.equal(embedded.itemId, '1');
  assert.equal(embedded.overlap, 1);
  const unrelated = index.check('Who was president of the football club in the year that Arsenal was founded?');
  assert.equal(unrelated.contaminated, false);
  assert.ok(unrelated.overlap! < defaultContaminationThreshold);
  assert.deepEqual(new ContaminationIndex().check('anything at all'), { contaminated: false, overlap: 0 });
  assert.deepEqual(index.describe(), {
    n: defaultContaminationN,
    threshold: defaultContaminationThreshold,
    questions: 2,
    sets: { bamboogle: 2 },
  });
  assert.throws(() => new ContaminationIndex({ threshold: 0 }), /threshold: expected a number in \(0, 1\]/);
  assert.throws(() => new ContaminationIndex({ n: 0 }), /n: expected an integer ≥ 1/);
});

test('on the real sets: the same questions in another layout are found, near-duplicates are caught, other sets are clean', async () => {
  const r1 = await Promise.all(
    ['bamboogle.jsonl', '2wiki_500.jsonl', 'musique_500.jsonl', 'hotpotqa_500.jsonl'].map((f) =>
      loadQuestionSet(data(`r1searcher_eval_set/${f}`)),
    ),
  );
  const index = new ContaminationIndex();
  for (const set of r1) index.add(`r1searcher_eval_set/${set.name}`, set.items);
  // SimpleDeepSearcher ships the same Bamboogle questions in another layout: every one is caught by text.
  const sds = await loadQuestionSet(data('simpledeepsearcher/bamboogle.json'));
  const verdicts = sds.items.map((item) => index.check(item.question));
  assert.equal(verdicts.filter((verdict) => verdict.reason === 'normalised-text').length, sds.items.length);
  assert.ok(verdicts.every((verdict) => verdict.set === 'r1searcher_eval_set/bamboogle'));
  // Near-duplicates of 2Wiki questions: embedded in a longer question, or with a clause appended.
  const wiki = r1[1]!.items.filter((item) => item.question.split(' ').length >= 8).slice(0, 50);
  for (const item of wiki) {
    for (const variant of [
      `In which city was the person born who answers this: ${item.question}`,
      `${item.question.replace(/\?$/, '')} according to Wikipedia?`,
    ]) {
      const verdict = index.check(variant);
      assert.equal(verdict.reason, 'ngram', variant);
      assert.ok(verdict.overlap! >= defaultContaminationThreshold);
    }
  }
  // HippoRAG's training questions and FanOutQA are other questions: none is flagged.
  for (const file of ['hipporag_legacy/musique_train.json', 'hipporag_legacy/hotpotqa_train.json', 'fanoutqa/fanout-final-dev.json']) {
    const other = await loadQuestionSet(data(file));
    const flagged = other.items.filter((item) => index.check(item.question).contaminated);
    assert.deepEqual(
      flagged.map((item) => item.question),
      [],
      file,
    );
  }
});
