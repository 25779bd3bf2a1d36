-- Policy versions: version 0 is the prepared base model; training publishes 1, 2, … Each row points
-- at the blob-store folder that holds the version's files (safetensors, tokenizer, ONNX, manifest).
CREATE TABLE policy_versions (
  version        integer     PRIMARY KEY CHECK (version >= 0),
  name           text        NOT NULL,
  blob_prefix    text        NOT NULL,
  files          jsonb       NOT NULL,
  manifest       jsonb       NOT NULL,
  parent_version integer     REFERENCES policy_versions (version),
  created_at     timestamptz NOT NULL DEFAULT now()
);
