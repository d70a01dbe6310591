-- OCR and vision: which pages were recognised and how surely, whether an image was described, and the
-- usage ledger of metered calls.

-- `recognizing`: the text layer is extracted and stored; OCR (and, for an image, vision) is running.
ALTER TABLE file_versions DROP CONSTRAINT file_versions_processing_state_check;
ALTER TABLE file_versions ADD CONSTRAINT file_versions_processing_state_check
  CHECK (processing_state IN ('not_started', 'queued', 'extracting', 'recognizing', 'extracted',
                              'indexing', 'indexed', 'failed'));
-- `ocr-failed`: the engine could not read a document that has no other text.
ALTER TABLE file_versions DROP CONSTRAINT file_versions_failure_reason_check;
ALTER TABLE file_versions ADD CONSTRAINT file_versions_failure_reason_check
  CHECK (failure_reason IN ('unsupported-type', 'too-large', 'too-many-pages', 'timed-out', 'encrypted',
                            'no-text-layer', 'malformed', 'ocr-failed'));

ALTER TABLE file_versions
  -- NULL: nothing needed OCR. Otherwise what happened to the pages that did, and why when it did not work.
  ADD COLUMN ocr_state         text     CHECK (ocr_state IN ('recognized', 'unavailable', 'failed')),
  ADD COLUMN ocr_engine        text,
  ADD COLUMN ocr_detail        text,
  ADD COLUMN recognized_pages  integer[] NOT NULL DEFAULT '{}',
  -- Character-weighted over what OCR read; NULL when nothing was recognised (a text layer is not a guess).
  ADD COLUMN ocr_confidence    real     CHECK (ocr_confidence BETWEEN 0 AND 1),
  -- NULL: not an image. An image is described by a vision model where one is configured, and says so where not.
  ADD COLUMN vision_state      text     CHECK (vision_state IN ('described', 'unavailable', 'failed')),
  ADD COLUMN vision_model      text,
  ADD COLUMN vision_detail     text,
  ADD CONSTRAINT recognized_has_confidence CHECK ((ocr_state = 'recognized') = (ocr_confidence IS NOT NULL));

DROP INDEX file_versions_awaiting_processing;
CREATE INDEX file_versions_awaiting_processing ON file_versions (tenant_id, updated_at, version_id)
  WHERE state = 'stored'
    AND processing_state IN ('not_started', 'queued', 'extracting', 'recognizing', 'extracted', 'indexing', 'failed');

-- One row per metered call of a step: (version, step, attempt) is the key, so a step delivered twice records
-- once, and a real re-run (a new attempt, a rescan) records what it cost again. Rows outlive their file:
-- a deleted document was still paid for.
CREATE TABLE usage_records (
  tenant_id     text        NOT NULL,
  version_id    uuid        NOT NULL,
  step          text        NOT NULL CHECK (length(step) BETWEEN 1 AND 200),
  attempt       integer     NOT NULL CHECK (attempt >= 0),
  file_id       uuid        NOT NULL,
  collection_id text        NOT NULL,
  provider      text        NOT NULL,
  operation     text        NOT NULL,
  model         text,
  priced        boolean     NOT NULL,
  pages         integer     NOT NULL DEFAULT 0 CHECK (pages >= 0),
  images        integer     NOT NULL DEFAULT 0 CHECK (images >= 0),
  input_tokens  bigint      NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
  output_tokens bigint      NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
  recorded_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, version_id, step, attempt)
);
CREATE INDEX usage_records_by_period ON usage_records (tenant_id, recorded_at);
ALTER TABLE usage_records ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage_records FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON usage_records
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
-- Appended and read, never changed: the application may not rewrite what was charged.
GRANT SELECT, INSERT ON usage_records TO {{app_role}};
