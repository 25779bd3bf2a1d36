-- The local search corpus: documents, split into pages (passages) that `access` pages through.
-- Ingestion is idempotent by document id: a document's pages are replaced atomically with it.
CREATE TABLE search_documents (
  id           text        PRIMARY KEY,
  title        text        NOT NULL,
  source       text        NOT NULL,
  url          text,
  pages        integer     NOT NULL CHECK (pages >= 1),
  content_hash text        NOT NULL,
  ingested_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE search_passages (
  document_id text    NOT NULL REFERENCES search_documents (id) ON DELETE CASCADE,
  page        integer NOT NULL CHECK (page >= 1),
  title       text    NOT NULL,
  text        text    NOT NULL,
  search_text tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', text), 'B')
  ) STORED,
  PRIMARY KEY (document_id, page)
);

CREATE INDEX search_passages_search_text ON search_passages USING gin (search_text);
CREATE INDEX search_documents_source ON search_documents (source);
