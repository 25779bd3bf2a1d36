-- The data-synthesis agent (issue 10): dataset runs, one row per candidate (task) with its chain,
-- gold solution path and outcome, and one verdict per check with its reason. A dataset is immutable
-- once published (status 'published', content hash and blob key fixed).
CREATE TABLE synthesis_datasets (
  dataset_id   text        PRIMARY KEY,
  synthesizer  text        NOT NULL,
  seed         bigint      NOT NULL,
  settings     jsonb       NOT NULL,
  status       text        NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'published')),
  blob_key     text,
  content_hash text,
  items        integer,
  statistics   jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz
);

CREATE TABLE synthesis_candidates (
  dataset_id   text        NOT NULL REFERENCES synthesis_datasets (dataset_id) ON DELETE CASCADE,
  task_index   integer     NOT NULL,
  workflow_id  text        NOT NULL,
  accepted     boolean     NOT NULL,
  reason       text        NOT NULL,
  question     text,
  answer       text,
  candidate    jsonb       NOT NULL,
  seconds      real        NOT NULL,
  tokens       integer     NOT NULL,
  recorded_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset_id, task_index)
);

CREATE TABLE synthesis_verdicts (
  workflow_id  text        NOT NULL,
  check_name   text        NOT NULL,
  passed       boolean     NOT NULL,
  reason       text        NOT NULL,
  details      jsonb       NOT NULL DEFAULT '{}'::jsonb,
  recorded_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workflow_id, check_name)
);
