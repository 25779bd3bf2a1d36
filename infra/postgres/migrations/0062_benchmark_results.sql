-- One row per scheduled system benchmark run (`longhaul schedule bench`): the benchmark's JSON line,
-- with the newest policy version when it ran and the git commit of the code that ran it, so a
-- regression shows up as a change between commits.
CREATE TABLE benchmark_results (
  id             text PRIMARY KEY,
  benchmark      text NOT NULL,
  args           jsonb NOT NULL,
  policy_version integer,
  git_commit     text NOT NULL DEFAULT '',
  seconds        double precision NOT NULL,
  result         jsonb NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX benchmark_results_benchmark ON benchmark_results (benchmark, created_at);
CREATE INDEX benchmark_results_commit ON benchmark_results (git_commit, benchmark);
