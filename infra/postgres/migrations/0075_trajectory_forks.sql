-- Lineage of forked trajectories (`longhaul fork`): one row per child, written before the child starts,
-- so a tree of forks (parents, branch turns, seeds) can be listed while the children still run.
CREATE TABLE trajectory_forks (
  child_id     text PRIMARY KEY,
  parent_id    text NOT NULL,
  fork_turn    integer NOT NULL CHECK (fork_turn >= 0),
  seed         integer NOT NULL,
  temperature  double precision NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX trajectory_forks_parent ON trajectory_forks (parent_id, fork_turn, created_at);
