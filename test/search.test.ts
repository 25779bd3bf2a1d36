import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { splitPages } from '../corpus/documents.js';
import { ingestFile, IngestError } from '../corpus/ingest.js';
import { createFtsSearchEngine } from '../infra/search/fts-search.pg.js';
import { openSearchDatabase } from '../infra/search/open.js';
import { repoRoot } from '../infra/paths.js';
import { testConfig } from './helpers/stack.js';

const pool = await openSearchDatabase(testConfig(), 4);
const engine = createFtsSearchEngine(pool);
const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-search-test-'));
const tag = randomUUID().slice(0, 8);
after(async () => {
  await pool.query('DELETE FROM search_documents WHERE id LIKE $1', [`%${tag}%`]);
  await pool.end();
  fs.rmSync(folder, { recursive: true, force: true });
});

function writeFile(name: string, text: string): string {
  const file = path.join(folder, name);
  fs.writeFileSync(file, text);
  return file;
}

const lines = (rows: unknown[]) => rows.map((row) => JSON.stringify(row)).join('\n') + '\n';

test('splitting a text into pages cuts between paragraphs and inside a paragraph only when it is too long', () => {
  assert.deepEqual(splitPages('one two three\nfour five\nsix seven eight nine', 5), ['one two three\nfour five', 'six seven eight nine']);
  assert.deepEqual(splitPages('a b c d e f g', 3), ['a b c', 'd e f', 'g']);
});

test('ingesting {"id","contents"} JSONL twice writes each document once and the second run changes nothing', async () => {
  const file = writeFile(
    'contents.jsonl',
    lines([
      { id: `c1-${tag}`, contents: `"Zorblat Harbour ${tag}"\nZorblat Harbour is a fictional port on the Quillan coast.` },
      { id: `c2-${tag}`, contents: 'A passage without a quoted title about the Quillan coast.' },
    ]),
  );
  const first = await ingestFile(pool, file);
  assert.deepEqual([first.read, first.written, first.unchanged, first.passages, first.badRows], [2, 2, 0, 2, 0]);
  const second = await ingestFile(pool, file);
  assert.deepEqual([second.read, second.written, second.unchanged, second.passages], [2, 0, 2, 0]);
  const page = await engine.page(`c1-${tag}`, 1);
  assert.equal(page?.title, `Zorblat Harbour ${tag}`);
  assert.equal(page?.text, 'Zorblat Harbour is a fictional port on the Quillan coast.');
  assert.equal((await engine.page(`c2-${tag}`, 1))?.title, '');
});

test('a HippoRAG JSON array is streamed with repeated titles numbered and a malformed element reported by its line', async () => {
  const file = writeFile(
    'hipporag.json',
    `[\n{"title": "Twin ${tag}", "text": "first twin text"},\n{"title": "Twin ${tag}", "text": "second twin text"},\n{"title": 7, "text": "bad title"},\n{"heading": "no layout"}\n]`,
  );
  const report = await ingestFile(pool, file);
  assert.equal(report.read, 2);
  assert.equal(report.badRows, 2);
  assert.deepEqual(report.errors, [
    { line: 4, message: '"title": Invalid input: expected string, received number' },
    { line: 5, message: 'unknown layout: expected {"id","contents"}, {"id","title","text"}, {"title","text"} or a KILT page' },
  ]);
  assert.equal((await engine.page(`Twin ${tag}`, 1))?.text, 'first twin text');
  assert.equal((await engine.page(`Twin ${tag} (2)`, 1))?.text, 'second twin text');
});

test('with onBadRow fail a malformed line stops the run naming the line, and no document of its batch is written', async () => {
  const file = writeFile('bad.jsonl', `${JSON.stringify({ id: `f1-${tag}`, title: 'T', text: 'fine' })}\n{"id": "f2-${tag}", "title": \n`);
  await assert.rejects(ingestFile(pool, file, { onBadRow: 'fail' }), (error: unknown) => {
    assert.ok(error instanceof IngestError);
    assert.equal(error.line, 2);
    assert.match(error.message, /bad\.jsonl:2: invalid JSON/);
    return true;
  });
  assert.equal(await engine.page(`f1-${tag}`, 1), null);
});

test('a long KILT page is split into pages that can be read one by one, and search finds its title first', async () => {
  const paragraphs = Array.from({ length: 30 }, (_, index) => `Paragraph ${index} of the quuxology article ${'word '.repeat(40)}`);
  const file = writeFile(
    'kilt.jsonl',
    lines([{ wikipedia_id: `k-${tag}`, wikipedia_title: `Quuxology${tag}`, text: [`Quuxology${tag}`, ...paragraphs] }]),
  );
  const report = await ingestFile(pool, file, { pageWords: 200 });
  assert.equal(report.passages, 8);
  const third = await engine.page(`k-${tag}`, 3);
  assert.equal(third?.pages, 8);
  assert.match(third?.text ?? '', /^Paragraph 8 of the quuxology article/);
  assert.equal(await engine.page(`k-${tag}`, 9), null);
  const hits = await engine.search(`what is quuxology${tag}?`, 3);
  assert.equal(hits[0]?.documentId, `k-${tag}`);
  assert.deepEqual(await engine.search('the of and', 3), []);
});

test('longhaul ingest of a missing file exits 2 naming the file', async () => {
  const outcome = await promisify(execFile)(process.execPath, [
    path.join(repoRoot, 'dist', 'cli', 'main.js'),
    'ingest',
    '/nonexistent/corpus.jsonl',
  ]).then(
    () => ({ code: 0, stderr: '' }),
    (error: { code: number; stderr: string }) => error,
  );
  assert.equal(outcome.code, 2);
  assert.equal(outcome.stderr.trim(), 'longhaul: <file> "/nonexistent/corpus.jsonl" does not exist (see longhaul ingest --help)');
});

test('longhaul ingest --on-bad-row fail exits 2 naming the file and line of the bad row', async () => {
  const file = writeFile('cli-bad.jsonl', `${JSON.stringify({ id: `cli-${tag}`, contents: 'fine' })}\n{"id": 3}\n`);
  const outcome = await promisify(execFile)(process.execPath, [
    path.join(repoRoot, 'dist', 'cli', 'main.js'),
    'ingest',
    file,
    '--on-bad-row',
    'fail',
  ]).then(
    () => ({ code: 0, stderr: '' }),
    (error: { code: number; stderr: string }) => error,
  );
  assert.equal(outcome.code, 2);
  assert.match(outcome.stderr, new RegExp(`^longhaul: bad row at ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:2: unknown layout`));
  assert.equal(await engine.page(`cli-${tag}`, 1), null);
});
