-- One row per tool call (latency, success, cache hit) for `longhaul tools stats`, and the result cache
-- keyed by (tool, normalised input) with an expiry.
CREATE TABLE tool_calls (
  id          bigserial   PRIMARY KEY,
  tool        text        NOT NULL,
  turn_key    text        NOT NULL,
  call_index  integer     NOT NULL,
  ok          boolean     NOT NULL,
  invalid     boolean     NOT NULL,
  cache_hit   boolean     NOT NULL,
  latency_ms  double precision NOT NULL,
  called_at   timestamptz NOT NULL DEFAULT now()
);

-- A retried turn (same key) records its calls once.
CREATE UNIQUE INDEX tool_calls_turn_call ON tool_calls (turn_key, call_index);
CREATE INDEX tool_calls_tool_called_at ON tool_calls (tool, called_at);

CREATE TABLE tool_cache (
  tool       text        NOT NULL,
  input_key  text        NOT NULL,
  result     jsonb       NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (tool, input_key)
);
