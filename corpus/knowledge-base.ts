/**
 * The structured side of the default corpus: entities and relations, each tied to the document that
 * states it. Sources produce a CorpusPart; the builder writes documents to the search tables and
 * facts to kb_entities / kb_relations.
 */
import type pg from 'pg';
import type { CorpusDocument } from './documents.js';
import { withTransaction } from '../infra/postgres/database.js';

export interface KbEntity {
  /** Stable id, "<kind>:<key>", e.g. "country:FRA", "city:2988507". */
  readonly id: string;
  readonly kind: string;
  readonly name: string;
  /** The document that describes this entity. */
  readonly documentId: string;
  readonly attributes: Readonly<Record<string, unknown>>;
}

export interface KbRelation {
  readonly subjectId: string;
  /** snake_case, e.g. capital, located_in, borders, currency, official_language, population. */
  readonly predicate: string;
  /** The object entity when it is one (a country, a city), else null. */
  readonly objectId: string | null;
  /** The object as text (always set; the answer a question would expect). */
  readonly objectText: string;
  /** The document whose text states this fact. */
  readonly documentId: string;
}

export interface CorpusPart {
  readonly source: string;
  readonly licence: string;
  readonly documents: readonly CorpusDocument[];
  readonly entities: readonly KbEntity[];
  readonly relations: readonly KbRelation[];
}

/** Replaces the entities (and their relations) of the given kinds, in one transaction. */
export async function writeKnowledgeBase(
  pool: pg.Pool,
  kinds: readonly string[],
  entities: readonly KbEntity[],
  relations: readonly KbRelation[],
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await client.query('DELETE FROM kb_entities WHERE kind = ANY($1::text[])', [kinds]);
    for (let start = 0; start < entities.length; start += 20_000) {
      const slice = entities.slice(start, start + 20_000);
      await client.query(
        'INSERT INTO kb_entities (id, kind, name, document_id, attributes) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[]) ON CONFLICT (id) DO NOTHING',
        [
          slice.map((e) => e.id),
          slice.map((e) => e.kind),
          slice.map((e) => e.name),
          slice.map((e) => e.documentId),
          slice.map((e) => JSON.stringify(e.attributes)),
        ],
      );
    }
    for (let start = 0; start < relations.length; start += 20_000) {
      const slice = relations.slice(start, start + 20_000);
      await client.query(
        `INSERT INTO kb_relations (subject_id, predicate, object_id, object_text, document_id)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) ON CONFLICT DO NOTHING`,
        [
          slice.map((r) => r.subjectId),
          slice.map((r) => r.predicate),
          slice.map((r) => r.objectId),
          slice.map((r) => r.objectText),
          slice.map((r) => r.documentId),
        ],
      );
    }
  });
}

/** Formats a number the way an English text would: 1,234,567. */
export function formatNumber(value: number, fractionDigits = 0): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: fractionDigits });
}

/** "A", "A and B", "A, B and C". */
export function listText(items: readonly string[]): string {
  if (items.length <= 1) return items[0] ?? '';
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}
