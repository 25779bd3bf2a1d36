-- The frozen tool observations of evaluations (`longhaul eval`, `--reproduce`): one row per
-- (scope, tool, normalised input, corpus version), written once (first writer wins).
CREATE TABLE evaluation_observations (
  scope          text        NOT NULL,
  tool           text        NOT NULL,
  input_key      text        NOT NULL,
  corpus_version text        NOT NULL,
  result         jsonb       NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope, tool, input_key, corpus_version)
);
