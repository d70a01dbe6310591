-- `bytes-missing`: a stored version whose original is not in storage when processing reads it (a lifecycle rule,
-- a hand-deleted object). Recorded as the document's failure, with its sentence, rather than retried into the
-- same absence and given up on as stuck; reconciliation also reports the row.
ALTER TABLE file_versions DROP CONSTRAINT file_versions_failure_reason_check;
ALTER TABLE file_versions ADD CONSTRAINT file_versions_failure_reason_check
  CHECK (failure_reason IN ('unsupported-type', 'too-large', 'too-many-pages', 'timed-out', 'encrypted',
                            'no-text-layer', 'malformed', 'ocr-failed', 'no-text-found', 'spend-limit',
                            'bytes-missing'));

-- Reconciliation's sweep that checks each stored version's bytes are there resumes where it stopped, like the others.
ALTER TABLE sweep_progress DROP CONSTRAINT sweep_progress_sweep_check;
ALTER TABLE sweep_progress ADD CONSTRAINT sweep_progress_sweep_check
  CHECK (sweep IN ('deleting', 'pending', 'awaiting_processing', 'given_up', 'bytes_present'));
