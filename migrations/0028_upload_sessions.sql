-- Upload sessions (issue 35): a pending version uploaded by parts through S3 multipart, resumable from what S3 holds.
-- The session is Quire's (its `upload_id` is what clients name, so another tenant's id is a random one to them);
-- `storage_upload_id` is S3's: no response names it, though each presigned part URL carries it (S3 needs it there,
-- and it is worth nothing without the URL's signature). Written in the transaction that records the pending version.
CREATE TABLE upload_sessions (
  tenant_id         text        NOT NULL,
  upload_id         uuid        NOT NULL,
  version_id        uuid        NOT NULL,
  storage_upload_id text        NOT NULL CHECK (length(storage_upload_id) BETWEEN 1 AND 1024),
  -- At most S3's largest object (5 TiB), in at most 10,000 parts.
  byte_size         bigint      NOT NULL CHECK (byte_size BETWEEN 1 AND 5497558138880),
  part_size         bigint      NOT NULL CHECK (part_size BETWEEN 5242880 AND 5368709120),
  part_count        integer     NOT NULL CHECK (part_count BETWEEN 1 AND 10000),
  checksums         boolean     NOT NULL DEFAULT false,
  -- completing: a completion is asking S3 to make the object (abort and expiry wait for it to end).
  state             text        NOT NULL DEFAULT 'open'
                    CHECK (state IN ('open', 'completing', 'completed', 'aborted', 'expired')),
  created_by        text        NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  expires_at        timestamptz NOT NULL,
  ended_at          timestamptz,
  PRIMARY KEY (tenant_id, upload_id),
  UNIQUE (tenant_id, version_id),
  FOREIGN KEY (tenant_id, version_id) REFERENCES file_versions (tenant_id, version_id) ON DELETE CASCADE,
  CONSTRAINT ended_when_over CHECK ((state IN ('open', 'completing')) = (ended_at IS NULL))
);
-- Reconciliation's sweep for sessions past their day.
CREATE INDEX upload_sessions_open ON upload_sessions (tenant_id, expires_at) WHERE state IN ('open', 'completing');

ALTER TABLE upload_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE upload_sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON upload_sessions
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT, UPDATE ON upload_sessions TO {{app_role}};
