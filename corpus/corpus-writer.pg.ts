/**
 * Writes documents and their pages to Postgres in atomic batches. A document whose content hash is
 * unchanged is skipped (re-running an ingest is cheap and idempotent); a changed one has its pages
 * replaced in the same transaction, so no document is ever left with part of its pages.
 */
import type pg from 'pg';
import { z } from 'zod';
import { contentHash, splitPages, type CorpusDocument } from './documents.js';
import { withTransaction } from '../infra/postgres/database.js';

export interface WriteResult {
  readonly written: number;
  readonly unchanged: number;
  readonly passages: number;
}

const existingSchema = z.object({ id: z.string(), content_hash: z.string() });

export async function writeDocuments(
  pool: pg.Pool,
  documents: readonly CorpusDocument[],
  source: string,
  pageWords: number,
): Promise<WriteResult> {
  const latest = new Map(documents.map((document) => [document.id, document]));
  return withTransaction(pool, async (client) => {
    const ids = [...latest.keys()];
    const existing = await client.query('SELECT id, content_hash FROM search_documents WHERE id = ANY($1::text[]) FOR UPDATE', [ids]);
    const known = new Map(existing.rows.map((raw) => existingSchema.parse(raw)).map((row) => [row.id, row.content_hash]));
    const changed = [...latest.values()].filter((document) => known.get(document.id) !== contentHash(document));
    const passages = await replaceDocuments(client, changed, source, pageWords);
    return { written: changed.length, unchanged: latest.size - changed.length, passages };
  });
}

async function replaceDocuments(
  client: pg.ClientBase,
  documents: readonly CorpusDocument[],
  source: string,
  pageWords: number,
): Promise<number> {
  if (documents.length === 0) return 0;
  const pageLists = documents.map((document) => splitPages(document.text, pageWords));
  await client.query('DELETE FROM search_documents WHERE id = ANY($1::text[])', [documents.map((document) => document.id)]);
  await client.query(
    `INSERT INTO search_documents (id, title, source, url, pages, content_hash)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[])`,
    [
      documents.map((d) => d.id),
      documents.map((d) => d.title),
      documents.map(() => source),
      documents.map((d) => d.url),
      pageLists.map((pages) => pages.length),
      documents.map(contentHash),
    ],
  );
  const columns = { id: [] as string[], page: [] as number[], title: [] as string[], text: [] as string[] };
  documents.forEach((document, index) =>
    pageLists[index]!.forEach((text, page) => {
      columns.id.push(document.id);
      columns.page.push(page + 1);
      columns.title.push(document.title);
      columns.text.push(text);
    }),
  );
  await client.query(
    'INSERT INTO search_passages (document_id, page, title, text) SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[])',
    [columns.id, columns.page, columns.title, columns.text],
  );
  return columns.id.length;
}

/** Counts of the corpus tables. */
export async function corpusCounts(pool: pg.Pool): Promise<{ documents: number; passages: number }> {
  const result = await pool.query(
    'SELECT (SELECT count(*) FROM search_documents)::int AS documents, (SELECT count(*) FROM search_passages)::int AS passages',
  );
  return z.object({ documents: z.number().int(), passages: z.number().int() }).parse(result.rows[0]);
}
