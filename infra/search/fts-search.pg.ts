/**
 * Postgres full-text search over search_passages, ranked like BM25 in spirit: the query's words are
 * stemmed by Postgres and OR-ed (a natural-language question rarely has every word in one passage);
 * each word weighs its inverse document frequency (from search_lexemes) times ts_rank's length-
 * normalised term frequency, over title-weighted vectors. Words in more than a fifth of all passages,
 * or in more than 2,000, do not select candidates (they still score; and select when nothing else is
 * left): same recall on MuSiQue, three times the queries per second on 150k passages. On MuSiQue
 * the IDF weighting doubles MRR over plain ts_rank_cd (docs/BENCHMARKS.md).
 */
import type pg from 'pg';
import { z } from 'zod';
import type { DocumentPage, SearchEngine, SearchHit } from '../../activities/ports/search.port.js';
import { withTransaction } from '../postgres/database.js';

const hitSchema = z.object({ document_id: z.string(), page: z.number().int(), title: z.string(), text: z.string(), score: z.number() });
const pageSchema = z.object({
  document_id: z.string(),
  title: z.string(),
  url: z.string().nullable(),
  page: z.number().int(),
  pages: z.number().int(),
  text: z.string(),
});

const SEARCH_SQL = `
WITH total AS (SELECT coalesce((SELECT passages FROM search_statistics), 1)::float8 AS n),
terms AS (
  SELECT DISTINCT lexeme, coalesce(l.passages, 1)::float8 AS df
  FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS lexeme LEFT JOIN search_lexemes l USING (lexeme)
),
weighted AS (
  SELECT terms.lexeme, to_tsquery('simple', quote_literal(terms.lexeme)) AS single,
    ln((total.n - least(terms.df, total.n) + 0.5) / (least(terms.df, total.n) + 0.5) + 1) AS idf,
    terms.df <= least(0.2 * total.n, 2000) OR NOT EXISTS (SELECT 1 FROM terms rare WHERE rare.df <= least(0.2 * total.n, 2000)) AS selective
  FROM terms, total
),
q AS (SELECT to_tsquery('simple', string_agg(quote_literal(lexeme), ' | ')) AS query FROM weighted WHERE selective),
candidates AS (SELECT p.document_id, p.page, p.title, p.text, p.search_text FROM search_passages p, q WHERE q.query IS NOT NULL AND p.search_text @@ q.query)
SELECT c.document_id, c.page, c.title, c.text, sum(w.idf * ts_rank(c.search_text, w.single, 1))::float8 AS score
FROM candidates c CROSS JOIN weighted w
GROUP BY c.document_id, c.page, c.title, c.text
ORDER BY score DESC, c.document_id, c.page
LIMIT $2`;

const PAGE_SQL = `
SELECT p.document_id, p.title, d.url, p.page, d.pages, p.text
FROM search_passages p JOIN search_documents d ON d.id = p.document_id
WHERE p.document_id = $1 AND p.page = $2`;

/** A SearchEngine over the corpus tables (migrations 0010). */
export function createFtsSearchEngine(pool: pg.Pool): SearchEngine {
  return {
    name: 'fts',
    async search(query, k): Promise<SearchHit[]> {
      if (query.trim() === '') return [];
      const result = await pool.query(SEARCH_SQL, [query, k]);
      return result.rows.map((raw) => {
        const row = hitSchema.parse(raw);
        return { documentId: row.document_id, page: row.page, title: row.title, text: row.text, score: row.score };
      });
    },
    page: (documentId, page) => readPage(pool, documentId, page),
  };
}

export async function readPage(pool: pg.Pool, documentId: string, page: number): Promise<DocumentPage | null> {
  const result = await pool.query(PAGE_SQL, [documentId, page]);
  if (result.rows.length === 0) return null;
  const row = pageSchema.parse(result.rows[0]);
  return { documentId: row.document_id, title: row.title, url: row.url, page: row.page, pages: row.pages, text: row.text };
}

/** Recomputes the lexeme document frequencies after the corpus changed (seconds for 100k passages). */
export async function refreshTermStatistics(pool: pg.Pool): Promise<void> {
  await withTransaction(pool, async (client) => {
    // SHARE ROW EXCLUSIVE serialises refreshes but lets searches read the old figures until commit.
    await client.query('LOCK TABLE search_lexemes IN SHARE ROW EXCLUSIVE MODE');
    await client.query('DELETE FROM search_lexemes');
    await client.query(
      "INSERT INTO search_lexemes (lexeme, passages) SELECT word, ndoc FROM ts_stat('SELECT search_text FROM search_passages')",
    );
    await client.query(`INSERT INTO search_statistics (singleton, passages, updated_at) SELECT true, count(*), now() FROM search_passages
      ON CONFLICT (singleton) DO UPDATE SET passages = EXCLUDED.passages, updated_at = EXCLUDED.updated_at`);
  });
}
