-- Files and their versions (seeds/000 "Attachment storage"). Originals are immutable: a new upload
-- is a new version row and a new S3 object version.
CREATE TABLE files (
  tenant_id     text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  file_id       uuid        NOT NULL,
  collection_id text        NOT NULL CHECK (collection_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  filename      text        NOT NULL CHECK (length(filename) BETWEEN 1 AND 255),
  created_by    text        NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, file_id)
);
CREATE INDEX files_by_collection ON files (tenant_id, collection_id, created_at DESC, file_id);

CREATE TABLE file_versions (
  tenant_id          text        NOT NULL,
  file_id            uuid        NOT NULL,
  version_id         uuid        NOT NULL,
  state              text        NOT NULL DEFAULT 'pending'
                     CHECK (state IN ('pending', 'stored', 'rejected', 'deleting', 'deleted')),
  processing_state   text        NOT NULL DEFAULT 'not_started'
                     CHECK (processing_state IN ('not_started', 'queued', 'extracting', 'extracted',
                                                 'indexing', 'indexed', 'failed')),
  media_type         text        NOT NULL,
  declared_byte_size bigint      NOT NULL CHECK (declared_byte_size >= 0),
  byte_size          bigint      CHECK (byte_size >= 0),
  storage_key        text        NOT NULL,
  storage_version_id text,
  failure_reason     text        CHECK (failure_reason IN ('unsupported-type', 'too-large', 'too-many-pages',
                                   'timed-out', 'encrypted', 'no-text-layer', 'malformed')),
  failure_detail     text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, version_id),
  FOREIGN KEY (tenant_id, file_id) REFERENCES files (tenant_id, file_id) ON DELETE CASCADE
);
CREATE INDEX file_versions_by_file ON file_versions (tenant_id, file_id, created_at DESC);
-- The sweep looks for versions stuck in a transitional state.
CREATE INDEX file_versions_by_state ON file_versions (state, updated_at) WHERE state IN ('pending', 'deleting');

ALTER TABLE files ENABLE ROW LEVEL SECURITY;
ALTER TABLE files FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON files
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());

ALTER TABLE file_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE file_versions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON file_versions
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());

GRANT SELECT, INSERT, UPDATE, DELETE ON files, file_versions TO {{app_role}};
