-- The buffer's `expiring` selection (groups a step is the last able to train first, then the freshest).
ALTER TABLE buffer_batches DROP CONSTRAINT buffer_batches_selection_check;
ALTER TABLE buffer_batches ADD CONSTRAINT buffer_batches_selection_check CHECK (selection IN ('freshest', 'priority', 'expiring'));
