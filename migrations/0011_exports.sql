-- Exports (seeds/000 "Export rendering (#134)"): a rendering of an exact artifact version, of an uploaded
-- file version (a conversion), or of a PDF operation. Rendered once: a second request, also one made at the
-- same moment, gets the existing record (the UNIQUE constraints settle the race).
CREATE TABLE exports (
  tenant_id              text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  export_id              uuid        NOT NULL,
  collection_id          text        NOT NULL CHECK (collection_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  kind                   text        NOT NULL CHECK (kind IN ('artifact', 'conversion', 'pdf')),
  format                 text        NOT NULL CHECK (format IN ('md', 'html', 'pdf', 'docx', 'txt', 'csv', 'xlsx')),
  artifact_id            uuid,
  version                integer     CHECK (version >= 1),
  source_file_id         uuid,
  source_version_id      uuid,
  -- A PDF operation: its normalised request, and the hash that names it.
  operation              jsonb,
  operation_hash         text        CHECK (operation_hash ~ '^[0-9a-f]{64}$'),
  state                  text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'rendered', 'failed')),
  file_id                uuid,
  failure_reason         text        CHECK (length(failure_reason) BETWEEN 1 AND 2000),
  unsupported_characters text[]      NOT NULL DEFAULT '{}',
  page_count             integer     CHECK (page_count >= 0),
  byte_size              bigint      CHECK (byte_size >= 0),
  render_attempts        integer     NOT NULL DEFAULT 0 CHECK (render_attempts >= 0),
  created_by             text        NOT NULL,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  rendered_at            timestamptz,
  PRIMARY KEY (tenant_id, export_id),
  -- The schema says twice what the code does: a rendered export has its file, a failed one its reason.
  CONSTRAINT exports_rendered_has_file CHECK ((state = 'rendered') = (file_id IS NOT NULL)),
  CONSTRAINT exports_failed_has_reason CHECK ((state = 'failed') = (failure_reason IS NOT NULL)),
  CONSTRAINT exports_source_matches_kind CHECK (
    CASE kind
      WHEN 'artifact' THEN artifact_id IS NOT NULL AND version IS NOT NULL AND source_version_id IS NULL
                           AND operation IS NULL
      WHEN 'conversion' THEN source_file_id IS NOT NULL AND source_version_id IS NOT NULL AND artifact_id IS NULL
                             AND operation IS NULL
      ELSE operation IS NOT NULL AND operation_hash IS NOT NULL AND artifact_id IS NULL AND source_version_id IS NULL
    END),
  CONSTRAINT exports_unique_artifact_version_format UNIQUE (tenant_id, artifact_id, version, format),
  CONSTRAINT exports_unique_file_version_format UNIQUE (tenant_id, source_version_id, format),
  CONSTRAINT exports_unique_operation UNIQUE (tenant_id, operation_hash),
  FOREIGN KEY (tenant_id, artifact_id) REFERENCES artifacts (tenant_id, artifact_id) ON DELETE CASCADE
);
-- The sweep re-submits renders left pending (a worker that died, a lost invocation).
CREATE INDEX exports_pending ON exports (tenant_id, updated_at) WHERE state = 'pending';

ALTER TABLE exports ENABLE ROW LEVEL SECURITY;
ALTER TABLE exports FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON exports
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT, UPDATE ON exports TO {{app_role}};

-- A rendered file is a file like any other (listed, signed, deleted through the file ports) but the
-- extraction pipeline never picks it up: its processing is `skipped` from the start, and it names its export.
ALTER TABLE file_versions DROP CONSTRAINT file_versions_processing_state_check;
ALTER TABLE file_versions ADD CONSTRAINT file_versions_processing_state_check
  CHECK (processing_state IN ('not_started', 'queued', 'extracting', 'recognizing', 'extracted',
                              'indexing', 'indexed', 'failed', 'interrupted', 'skipped'));
ALTER TABLE file_versions ADD COLUMN export_id uuid;
ALTER TABLE file_versions ADD CONSTRAINT exported_versions_are_skipped
  CHECK (export_id IS NULL OR processing_state = 'skipped');
