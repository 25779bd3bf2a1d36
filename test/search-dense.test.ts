import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import type { SearchEngine, SearchHit } from '../activities/ports/search.port.js';
import { ingestFile } from '../corpus/ingest.js';
import { createDenseSearchEngine, embedMissingPassages } from '../infra/search/dense-search.pg.js';
import { createHttpEmbeddingClient } from '../infra/search/embeddings.http.js';
import { createHybridSearchEngine } from '../infra/search/hybrid-search.js';
import { dropSchema, openSchemaPool } from '../infra/search/open.js';
import { testConfig } from './helpers/stack.js';

const schema = `test_dense_${randomUUID().slice(0, 8)}`;
const databaseUrl = testConfig().postgres.url;
const inputTypes: string[] = [];
let server: http.Server;
let pool: pg.Pool;
let base = '';

/** Bag of hashed words in 32 dimensions: texts that share words get close vectors. */
function embedText(text: string): number[] {
  const vector = new Array<number>(32).fill(0);
  for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) vector[createHash('md5').update(word).digest()[0]! % 32]! += 1;
  return vector;
}

before(async () => {
  server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += String(chunk);
    });
    request.on('end', () => {
      const parsed = JSON.parse(body) as { input: string[]; input_type: string };
      inputTypes.push(parsed.input_type);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          object: 'list',
          data: parsed.input.map((text, index) => ({ object: 'embedding', index, embedding: embedText(text) })),
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  pool = await openSchemaPool(databaseUrl, schema, 4);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-dense-')), 'corpus.jsonl');
  fs.writeFileSync(
    file,
    [
      { id: 'kittens', title: 'Kittens', text: 'quantum kittens purr in superposition' },
      { id: 'harbour', title: 'Harbour', text: 'ships dock at the old harbour at dawn' },
      { id: 'bakery', title: 'Bakery', text: 'bread rises in the warm bakery oven' },
    ]
      .map((row) => JSON.stringify(row))
      .join('\n'),
  );
  await ingestFile(pool, file);
});

after(async () => {
  await pool.end();
  await dropSchema(databaseUrl, schema);
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

test('passages are embedded once through an OpenAI-compatible endpoint and dense search ranks by meaning', async () => {
  const client = createHttpEmbeddingClient({ url: `${base}/v1`, model: 'hashed-words' });
  assert.equal(await embedMissingPassages(pool, client), 3);
  assert.equal(await embedMissingPassages(pool, client), 0);
  const dense = createDenseSearchEngine(pool, client);
  // The query shares two words with the kittens passage, one ("oven") with the bakery one, none with the harbour one.
  const query = 'purr kittens oven';
  const hits = await dense.search(query, 3);
  assert.deepEqual(
    hits.map((hit) => hit.documentId),
    ['kittens', 'bakery', 'harbour'],
  );
  assert.equal(hits[0]!.text, 'quantum kittens purr in superposition');
  // Scores are the cosine of the query's and the passage's (title + text) vectors, computed here on their own.
  const cosine = (a: number[], b: number[]) =>
    a.reduce((sum, value, index) => sum + value * b[index]!, 0) / Math.hypot(...a) / Math.hypot(...b);
  for (const hit of hits) {
    const expected = cosine(embedText(query), embedText(`${hit.title}. ${hit.text}`));
    assert.ok(Math.abs(hit.score - expected) < 1e-6, `${hit.documentId}: score ${hit.score}, cosine ${expected}`);
  }
  assert.deepEqual(inputTypes, ['passage', 'query']);
});

test('hybrid search fuses rankings by reciprocal rank: agreement wins over one first place', async () => {
  const fixed = (name: string, ids: string[]): SearchEngine => ({
    name,
    search: async (_query, k) => ids.slice(0, k).map((id): SearchHit => ({ documentId: id, page: 1, title: id, text: id, score: 1 })),
    page: async () => null,
  });
  const hybrid = createHybridSearchEngine([fixed('a', ['x', 'y', 'z']), fixed('b', ['w', 'y', 'x'])]);
  const hits = await hybrid.search('anything', 3);
  assert.deepEqual(
    hits.map((hit) => hit.documentId),
    ['x', 'y', 'w'],
  );
  assert.equal(hits[0]!.score, 1 / 61 + 1 / 63);
});
