-- An export whose file was deleted, or whose render failed for a reason that may not hold next time (a timeout,
-- a crashed renderer, interruptions), is rendered again when asked for again: a new generation, with its own
-- output file (the deleted one's ids stay with it). A failure of the content itself stays failed.
ALTER TABLE exports
  ADD COLUMN generation integer NOT NULL DEFAULT 0 CHECK (generation >= 0),
  ADD COLUMN failure_retryable boolean NOT NULL DEFAULT false,
  ADD CONSTRAINT retryable_only_when_failed CHECK (NOT failure_retryable OR state = 'failed');
