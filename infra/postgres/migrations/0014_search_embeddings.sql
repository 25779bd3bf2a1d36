-- Dense vectors of passages, per embedding model (exact scoring in the search process; pgvector is
-- not packaged for this machine's PostgreSQL). Rows go with their passage.
CREATE TABLE search_embeddings (
  document_id text    NOT NULL,
  page        integer NOT NULL,
  model       text    NOT NULL,
  vector      real[]  NOT NULL,
  PRIMARY KEY (model, document_id, page),
  FOREIGN KEY (document_id, page) REFERENCES search_passages (document_id, page) ON DELETE CASCADE
);
