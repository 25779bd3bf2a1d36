import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import type { ChainNode, SynthesisFact, SynthesisState } from '../../workflows/contracts/synthesis.contract.js';
import { goldTurns, goldTurnsFormat, questionText } from './grounded.synthesizer.js';
import { KnowledgeGraph } from './knowledge-graph.js';

const fact = (
  subjectId: string,
  subjectName: string,
  predicate: string,
  objectId: string | null,
  objectText: string,
  sentence = 't',
): SynthesisFact => ({
  subjectId,
  subjectName,
  predicate,
  objectId,
  objectText,
  documentId: `doc-${subjectId}`,
  evidence: { documentId: `doc-${subjectId}`, contentHash: 'h', start: 0, end: 1, spanSha256: 's', text: sentence },
});

const graph = new KnowledgeGraph({
  version: 'v',
  relations: [],
  entities: [
    { id: 'city:1', kind: 'city', name: 'Barysaw', documentId: 'city-1' },
    { id: 'country:BLR', kind: 'country', name: 'Belarus', documentId: 'country-blr' },
    { id: 'country:POL', kind: 'country', name: 'Poland', documentId: 'country-pol' },
  ],
});

const city: ChainNode = { entityId: 'city:1', kind: 'city', name: 'Barysaw', literals: [] };
const belarus: ChainNode = {
  entityId: 'country:BLR',
  kind: 'country',
  name: 'Belarus',
  link: { fact: fact('city:1', 'Barysaw', 'located_in', 'country:BLR', 'Belarus'), forward: false },
  literals: [],
};

const poland: ChainNode = {
  entityId: 'country:POL',
  kind: 'country',
  name: 'Poland',
  link: { fact: fact('country:POL', 'Poland', 'borders', 'country:BLR', 'Belarus'), forward: true },
  literals: [],
};

function state(nodes: ChainNode[], answer: string, sentence?: string): SynthesisState {
  const subject = nodes[0]!;
  return {
    synthesizer: 'grounded',
    seedFact: fact(subject.entityId, subject.name, 'capital', null, answer, sentence),
    answer,
    nodes,
    injections: nodes.length - 1,
    fuzzes: 0,
    actions: [],
  };
}

test('the gold path of one link says so in its first thought and answers after link 1 of 1, quoting its sentence', () => {
  const oneHop = state([belarus, city], 'Minsk', 'Its capital is Minsk.');
  assert.equal(questionText(oneHop), 'What is the capital of the country in which Barysaw lies?');
  assert.deepEqual(goldTurns(oneHop, graph), [
    '<think>The question names Barysaw; the answer is 1 link away. I will search for it.</think>\n<search>Barysaw</search>',
    '<think>I will read the document about Barysaw, link 0 of 1.</think>\n<access>city-1</access>',
    '<think>Link 1 of 1: the documents of Barysaw lead to Belarus. I will check it.</think>\n<search>Belarus</search>',
    '<think>I will read the document about Belarus, link 1 of 1.</think>\n<access>country-blr</access>',
    // The answer's thought quotes the sentence that states it, in the document's own words.
    '<think>Link 1 of 1 reached: "Its capital is Minsk."</think>\n<answer>Minsk</answer>',
  ]);
});

test('the gold path of two links counts each link, so the turn after the first document goes on instead of answering', () => {
  const twoHop = state([poland, belarus, city], 'Warsaw');
  assert.equal(questionText(twoHop), 'What is the capital of the country that borders the country in which Barysaw lies?');
  const turns = goldTurns(twoHop, graph);
  assert.equal(turns.length, 7);
  assert.match(turns[0]!, /the answer is 2 links away/);
  assert.match(turns[3]!, /^<think>I will read the document about Belarus, link 1 of 2\.<\/think>\n<access>country-blr<\/access>$/);
  // Where the one-link path answers, this one follows link 2: the count, not the question far back, tells them apart.
  assert.match(turns[4]!, /^<think>Link 2 of 2: the documents of Belarus lead to Poland\./);
  assert.match(turns[5]!, /<access>country-pol<\/access>$/);
  assert.equal(
    turns[6],
    '<think>Link 2 of 2 reached: the document of Poland states that its capital is Warsaw.</think>\n<answer>Warsaw</answer>',
  );
});

test('goldTurnsFormat names the wording goldTurns writes: a demo reuses a synthesized dataset by it', () => {
  // A reused dataset keeps the gold paths it was made with (cli/demo/synthesis-cache.ts keys on the
  // number); this pins the number to the text, so changing the text without bumping it fails here.
  const paths = [
    goldTurns(state([belarus, city], 'Minsk', 'Its capital is Minsk.'), graph),
    goldTurns(state([poland, belarus, city], 'Warsaw'), graph),
  ];
  const wording = createHash('sha256').update(JSON.stringify(paths)).digest('hex').slice(0, 16);
  assert.equal(
    `${goldTurnsFormat} ${wording}`,
    '3 e84457818247fe80',
    'goldTurns writes other text: bump goldTurnsFormat and pin the new hash',
  );
});
