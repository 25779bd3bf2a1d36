-- The training buffer. A finished trajectory (table trajectories) is "in the buffer" until it has a
-- row in buffer_uses: consumed by exactly one training step, or dropped (too stale, equal-reward
-- group, …). The primary key on trajectory_id is what makes "exactly one step" a database fact.
-- A step's claim is one row in buffer_batches keyed by (run_id, step): a retried claim returns it.
CREATE TABLE buffer_batches (
  run_id          text        NOT NULL,
  step            integer     NOT NULL CHECK (step >= 0),
  trajectory_ids  text[]      NOT NULL,
  current_version integer     NOT NULL,
  eta             integer     NOT NULL CHECK (eta >= 0),
  selection       text        NOT NULL CHECK (selection IN ('freshest', 'priority')),
  claimed_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, step)
);

CREATE TABLE buffer_uses (
  trajectory_id text        PRIMARY KEY REFERENCES trajectories (trajectory_id),
  run_id        text        NOT NULL,
  step          integer,
  state         text        NOT NULL CHECK (state IN ('consumed', 'dropped')),
  reason        text,
  used_at       timestamptz NOT NULL DEFAULT now(),
  CHECK ((state = 'consumed') = (step IS NOT NULL)),
  FOREIGN KEY (run_id, step) REFERENCES buffer_batches (run_id, step)
);
CREATE INDEX buffer_uses_run ON buffer_uses (run_id, state);
