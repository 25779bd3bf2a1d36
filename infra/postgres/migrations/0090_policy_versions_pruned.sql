-- `longhaul model prune` deletes a version's blob-store files and stamps the row here; the row (its
-- lineage, manifest and training metrics) stays, and loading a pruned version is refused by name.
ALTER TABLE policy_versions ADD COLUMN pruned_at timestamptz;
