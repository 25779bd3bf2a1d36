/**
 * Dense retrieval: passage vectors in Postgres (search_embeddings), scored exactly in this process
 * (a matrix of unit vectors, one dot product per passage). Exact scoring suits corpora up to a few
 * hundred thousand passages; beyond that an approximate index would go here.
 */
import type pg from 'pg';
import { z } from 'zod';
import type { EmbeddingClient, SearchEngine, SearchHit } from '../../activities/ports/search.port.js';
import { readPage } from './fts-search.pg.js';

const missingSchema = z.object({ document_id: z.string(), page: z.number().int(), title: z.string(), text: z.string() });
const vectorSchema = z.object({ document_id: z.string(), page: z.number().int(), vector: z.array(z.number()) });
const passageSchema = z.object({ document_id: z.string(), page: z.number().int(), title: z.string(), text: z.string() });

/** Embeds every passage that has no vector for this model yet; returns how many it embedded. */
export async function embedMissingPassages(
  pool: pg.Pool,
  client: EmbeddingClient,
  options: { batchSize?: number; onProgress?: (done: number, total: number) => void } = {},
): Promise<number> {
  const pending = await pool.query(
    `SELECT p.document_id, p.page, p.title, p.text FROM search_passages p
     WHERE NOT EXISTS (SELECT 1 FROM search_embeddings e WHERE e.model = $1 AND e.document_id = p.document_id AND e.page = p.page)
     ORDER BY p.document_id, p.page`,
    [client.model],
  );
  const rows = pending.rows.map((raw) => missingSchema.parse(raw));
  const batchSize = options.batchSize ?? 32;
  for (let start = 0; start < rows.length; start += batchSize) {
    const batch = rows.slice(start, start + batchSize);
    const vectors = await client.embed(
      batch.map((row) => (row.title ? `${row.title}. ${row.text}` : row.text)),
      'passage',
    );
    await pool.query(
      `INSERT INTO search_embeddings (document_id, page, model, vector)
       SELECT d, p, $4, string_to_array(v, ',')::real[] FROM unnest($1::text[], $2::int[], $3::text[]) AS t(d, p, v)
       ON CONFLICT DO NOTHING`,
      [
        batch.map((row) => row.document_id),
        batch.map((row) => row.page),
        vectors.map((vector) => Array.from(vector).join(',')),
        client.model,
      ],
    );
    options.onProgress?.(Math.min(start + batchSize, rows.length), rows.length);
  }
  return rows.length;
}

interface VectorIndex {
  readonly keys: readonly { documentId: string; page: number }[];
  readonly matrix: Float32Array;
  readonly dimension: number;
}

export interface DenseSearchEngine extends SearchEngine {
  /** Reloads the vectors from Postgres (after embedding more passages). */
  reload(): Promise<void>;
}

/** @param options.maxAgeMs reload the vectors when they were loaded longer ago than this (a long-lived worker sees new passages). @default Infinity */
export function createDenseSearchEngine(pool: pg.Pool, client: EmbeddingClient, options: { maxAgeMs?: number } = {}): DenseSearchEngine {
  let index: VectorIndex | null = null;
  let loadedAt = 0;
  const load = async (): Promise<VectorIndex> => {
    const result = await pool.query('SELECT document_id, page, vector::float8[] AS vector FROM search_embeddings WHERE model = $1', [
      client.model,
    ]);
    const rows = result.rows.map((raw) => vectorSchema.parse(raw));
    const dimension = rows[0]?.vector.length ?? 0;
    const matrix = new Float32Array(rows.length * dimension);
    rows.forEach((row, position) => matrix.set(row.vector, position * dimension));
    return { keys: rows.map((row) => ({ documentId: row.document_id, page: row.page })), matrix, dimension };
  };
  return {
    name: 'dense',
    async reload() {
      index = await load();
      loadedAt = Date.now();
    },
    async search(query, k): Promise<SearchHit[]> {
      if (query.trim() === '') return [];
      if (!index || Date.now() - loadedAt > (options.maxAgeMs ?? Number.POSITIVE_INFINITY)) {
        index = await load();
        loadedAt = Date.now();
      }
      const [vector] = await client.embed([query], 'query');
      const top = topK(index, vector!, k);
      if (top.length === 0) return [];
      const found = await pool.query(
        `SELECT p.document_id, p.page, p.title, p.text FROM search_passages p JOIN unnest($1::text[], $2::int[]) AS t(d, pg) ON p.document_id = t.d AND p.page = t.pg`,
        [top.map((hit) => hit.documentId), top.map((hit) => hit.page)],
      );
      const byKey = new Map(found.rows.map((raw) => passageSchema.parse(raw)).map((row) => [`${row.document_id}\u0000${row.page}`, row]));
      return top.flatMap((hit) => {
        const row = byKey.get(`${hit.documentId}\u0000${hit.page}`);
        return row ? [{ documentId: hit.documentId, page: hit.page, title: row.title, text: row.text, score: hit.score }] : [];
      });
    },
    page: (documentId, page) => readPage(pool, documentId, page),
  };
}

function topK(index: VectorIndex, query: Float32Array, k: number): { documentId: string; page: number; score: number }[] {
  if (index.dimension !== query.length) throw new Error(`query vector has ${query.length} dimensions, stored vectors ${index.dimension}`);
  const best: { position: number; score: number }[] = [];
  for (let position = 0; position < index.keys.length; position += 1) {
    let score = 0;
    const offset = position * index.dimension;
    for (let d = 0; d < index.dimension; d += 1) score += index.matrix[offset + d]! * query[d]!;
    if (best.length < k || score > best[best.length - 1]!.score) {
      best.push({ position, score });
      best.sort((a, b) => b.score - a.score);
      if (best.length > k) best.pop();
    }
  }
  return best.map(({ position, score }) => ({ ...index.keys[position]!, score }));
}
