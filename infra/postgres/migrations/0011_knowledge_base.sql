-- The structured knowledge base behind the default corpus: entities and relations, each tied to the
-- document that states it, so synthesized questions have provable answers and supporting documents.
CREATE TABLE kb_entities (
  id          text PRIMARY KEY,
  kind        text NOT NULL,
  name        text NOT NULL,
  document_id text NOT NULL,
  attributes  jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE TABLE kb_relations (
  subject_id  text NOT NULL REFERENCES kb_entities (id) ON DELETE CASCADE,
  predicate   text NOT NULL,
  object_id   text,
  object_text text NOT NULL,
  document_id text NOT NULL,
  PRIMARY KEY (subject_id, predicate, object_text)
);

CREATE INDEX kb_entities_kind ON kb_entities (kind);
CREATE INDEX kb_relations_object ON kb_relations (object_id);
CREATE INDEX kb_relations_predicate ON kb_relations (predicate);
