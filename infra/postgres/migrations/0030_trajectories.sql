-- One row per finished trajectory, written once (keyed by workflow id). The full record
-- (per-turn tokens, logprobs, versions, tool calls) is the blob at record_key.
CREATE TABLE trajectories (
  trajectory_id    text PRIMARY KEY,
  run_id           text NOT NULL DEFAULT '',
  dataset          text NOT NULL DEFAULT '',
  question_id      text NOT NULL DEFAULT '',
  question         text NOT NULL,
  answer           text,
  gold             jsonb NOT NULL DEFAULT '[]',
  reward           double precision NOT NULL,
  reward_parts     jsonb NOT NULL,
  stop_reason      text NOT NULL,
  turns            integer NOT NULL,
  invalid_steps    integer NOT NULL,
  generated_tokens integer NOT NULL,
  versions         integer[] NOT NULL,
  record_key       text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX trajectories_run ON trajectories (run_id, created_at);
