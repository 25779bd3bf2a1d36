/** Port: read access to the knowledge base (kb_entities / kb_relations) and the stored text of the documents that state its facts. */

export interface KnowledgeBaseEntity {
  readonly id: string;
  readonly kind: string;
  readonly name: string;
  readonly documentId: string;
}

export interface KnowledgeBaseRelation {
  readonly subjectId: string;
  readonly predicate: string;
  readonly objectId: string | null;
  readonly objectText: string;
  readonly documentId: string;
}

/** A document as the search tools serve it: its pages in order, joined by "\n". */
export interface StoredDocument {
  readonly documentId: string;
  readonly title: string;
  readonly contentHash: string;
  readonly text: string;
}

export interface KnowledgeBaseSnapshot {
  readonly entities: readonly KnowledgeBaseEntity[];
  readonly relations: readonly KnowledgeBaseRelation[];
  /** Changes whenever the knowledge base does (row counts and a digest), so caches know when to reload. */
  readonly version: string;
}

export interface KnowledgeBaseReader {
  /** Entities and relations of the given kinds (their subjects' kinds). */
  snapshot(kinds: readonly string[]): Promise<KnowledgeBaseSnapshot>;
  /** The cheap part of `snapshot`: the version only. */
  version(kinds: readonly string[]): Promise<string>;
  /** The stored documents with these ids (missing ones are absent from the map). */
  documents(ids: readonly string[]): Promise<Map<string, StoredDocument>>;
}
