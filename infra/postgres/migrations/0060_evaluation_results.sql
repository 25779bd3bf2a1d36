-- One row per evaluation result (`longhaul eval`); summary is evaluationSummarySchema
-- (activities/ports/evaluation-result.schema.ts), the full result is the blob at result_key.
CREATE TABLE evaluation_results (
  result_id      text PRIMARY KEY,
  dataset        text NOT NULL,
  dataset_version text NOT NULL,
  policy_version integer NOT NULL,
  k              integer NOT NULL,
  questions      integer NOT NULL,
  run_id         text NOT NULL DEFAULT '',
  git_commit     text NOT NULL DEFAULT '',
  summary        jsonb NOT NULL,
  result_key     text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX evaluation_results_version ON evaluation_results (dataset, policy_version, created_at);
CREATE INDEX evaluation_results_run ON evaluation_results (run_id, created_at);
