/** The knowledge base (kb_entities / kb_relations) and the stored document texts (search_passages), read from Postgres. */
import type pg from 'pg';
import type { KnowledgeBaseReader, StoredDocument } from '../../activities/ports/knowledge-base.port.js';

export function createPgKnowledgeBase(pool: pg.Pool): KnowledgeBaseReader {
  async function version(kinds: readonly string[]): Promise<string> {
    const { rows } = await pool.query<{ entities: string; relations: string; documents: string }>(
      `SELECT (SELECT count(*) FROM kb_entities WHERE kind = ANY($1::text[])) AS entities,
              (SELECT count(*) FROM kb_relations r JOIN kb_entities e ON e.id = r.subject_id WHERE e.kind = ANY($1::text[])) AS relations,
              (SELECT coalesce(max(ingested_at)::text, '') FROM search_documents) AS documents`,
      [kinds],
    );
    const row = rows[0]!;
    return `${row.entities}/${row.relations}/${row.documents}`;
  }
  return {
    version,
    async snapshot(kinds) {
      const before = await version(kinds);
      const entities = await pool.query<{ id: string; kind: string; name: string; document_id: string }>(
        'SELECT id, kind, name, document_id FROM kb_entities WHERE kind = ANY($1::text[]) ORDER BY id',
        [kinds],
      );
      const relations = await pool.query<{
        subject_id: string;
        predicate: string;
        object_id: string | null;
        object_text: string;
        document_id: string;
      }>(
        `SELECT r.subject_id, r.predicate, r.object_id, r.object_text, r.document_id
           FROM kb_relations r JOIN kb_entities e ON e.id = r.subject_id
          WHERE e.kind = ANY($1::text[]) ORDER BY r.subject_id, r.predicate, r.object_text`,
        [kinds],
      );
      return {
        version: before,
        entities: entities.rows.map((row) => ({ id: row.id, kind: row.kind, name: row.name, documentId: row.document_id })),
        relations: relations.rows.map((row) => ({
          subjectId: row.subject_id,
          predicate: row.predicate,
          objectId: row.object_id,
          objectText: row.object_text,
          documentId: row.document_id,
        })),
      };
    },
    async documents(ids) {
      const result = new Map<string, StoredDocument>();
      if (ids.length === 0) return result;
      const { rows } = await pool.query<{ id: string; title: string; content_hash: string; text: string }>(
        `SELECT d.id, d.title, d.content_hash, string_agg(p.text, E'\\n' ORDER BY p.page) AS text
           FROM search_documents d JOIN search_passages p ON p.document_id = d.id
          WHERE d.id = ANY($1::text[]) GROUP BY d.id, d.title, d.content_hash`,
        [ids],
      );
      for (const row of rows) result.set(row.id, { documentId: row.id, title: row.title, contentHash: row.content_hash, text: row.text });
      return result;
    },
  };
}
