-- Spend and capacity limits per tenant (issue 16): each is checked before the money is spent, from what is
-- already recorded. These indexes keep the checks to a range scan of the tenant's day (or the file's hour).

-- Upload bytes per day: the declared sizes of the tenant's versions created today, summed at ticket time.
CREATE INDEX file_versions_by_created ON file_versions (tenant_id, created_at) INCLUDE (declared_byte_size);

-- Rescans per file per hour: the file's OCR runs in the last hour, from the ledger.
CREATE INDEX usage_records_ocr_by_file ON usage_records (tenant_id, file_id, recorded_at) WHERE step = 'ocr';

-- `spend-limit`: the tenant's daily OCR limit was spent before a document with nothing else to read was read.
-- Apart from `no-text-layer` because what the user should do differs: scan it again after 00:00 UTC.
ALTER TABLE file_versions DROP CONSTRAINT file_versions_failure_reason_check;
ALTER TABLE file_versions ADD CONSTRAINT file_versions_failure_reason_check
  CHECK (failure_reason IN ('unsupported-type', 'too-large', 'too-many-pages', 'timed-out', 'encrypted',
                            'no-text-layer', 'malformed', 'ocr-failed', 'no-text-found', 'spend-limit'));
