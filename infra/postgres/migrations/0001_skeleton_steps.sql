-- Steps of the skeleton durability workflow: one row per (workflow, step), never two.
CREATE TABLE skeleton_steps (
  workflow_id text        NOT NULL,
  step        integer     NOT NULL CHECK (step >= 0),
  blob_key    text        NOT NULL,
  attempt     integer     NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workflow_id, step)
);
