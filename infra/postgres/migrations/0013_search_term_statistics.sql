-- Document frequencies of the corpus's lexemes, for IDF-weighted ranking (refreshed after each
-- ingest; a lexeme missing from here counts as rare). One row holds the number of passages.
CREATE TABLE search_lexemes (
  lexeme    text    PRIMARY KEY,
  passages  integer NOT NULL
);

CREATE TABLE search_statistics (
  singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
  passages   integer     NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
