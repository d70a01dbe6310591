-- `interrupted`: the infrastructure failed an attempt after the workflow's retries (a managed service down,
-- the database unreachable): not the document's fault. `failure_detail` says which step and what failed,
-- with no `failure_reason` (those are document problems). The sweep starts a new attempt, like a stalled one.
ALTER TABLE file_versions DROP CONSTRAINT file_versions_processing_state_check;
ALTER TABLE file_versions ADD CONSTRAINT file_versions_processing_state_check
  CHECK (processing_state IN ('not_started', 'queued', 'extracting', 'recognizing', 'extracted',
                              'indexing', 'indexed', 'failed', 'interrupted'));

DROP INDEX file_versions_awaiting_processing;
CREATE INDEX file_versions_awaiting_processing ON file_versions (tenant_id, updated_at, version_id)
  WHERE state = 'stored'
    AND processing_state IN ('not_started', 'queued', 'extracting', 'recognizing', 'extracted', 'indexing', 'failed',
                             'interrupted');

-- Automatic retries since the version last ran on request (its first run, or a rescan): what the sweep's
-- limits count, so a file rescanned five times by its owner still gets its retries when an outage hits it.
ALTER TABLE file_versions ADD COLUMN processing_retries integer NOT NULL DEFAULT 0 CHECK (processing_retries >= 0);
