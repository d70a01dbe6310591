-- Document writing (seeds/000 "Document writing"): edit proposals applied by a deterministic writer, and
-- replacements of uploaded files that change nothing until an approval is recorded for them.

-- A proposal that was applied: its operations (normalised) and the version they made. Written in the same
-- transaction as that version, so a version's provenance never names a proposal that is not here.
CREATE TABLE artifact_proposals (
  tenant_id      text        NOT NULL,
  proposal_id    uuid        NOT NULL,
  artifact_id    uuid        NOT NULL,
  base_version   integer     NOT NULL CHECK (base_version >= 1),
  result_version integer     NOT NULL CHECK (result_version = base_version + 1),
  operations     jsonb       NOT NULL CHECK (jsonb_typeof(operations) = 'array'),
  created_by     text        NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, proposal_id),
  FOREIGN KEY (tenant_id, artifact_id, result_version)
    REFERENCES artifact_versions (tenant_id, artifact_id, version) ON DELETE CASCADE
);
ALTER TABLE artifact_proposals ENABLE ROW LEVEL SECURITY;
ALTER TABLE artifact_proposals FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON artifact_proposals
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT ON artifact_proposals TO {{app_role}};

-- A replacement of an uploaded file: the new bytes (rendered in the file's own format) wait staged, and become
-- the file's next version through the normal upload path only when approved. Rejected or expired, it is gone.
CREATE TABLE file_replacements (
  tenant_id       text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  replacement_id  uuid        NOT NULL,
  file_id         uuid        NOT NULL,
  collection_id   text        NOT NULL,
  base_version_id uuid        NOT NULL,
  filename        text        NOT NULL CHECK (length(filename) BETWEEN 1 AND 255),
  media_type      text        NOT NULL,
  staged_key      text        NOT NULL CHECK (staged_key LIKE 'derived/tenants/%'),
  content_hash    text        NOT NULL CHECK (content_hash ~ '^[0-9a-f]{64}$'),
  byte_size       bigint      NOT NULL CHECK (byte_size > 0),
  state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'approved', 'rejected', 'expired')),
  new_version_id  uuid,
  created_by      text        NOT NULL,
  decided_by      text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  decided_at      timestamptz,
  expires_at      timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, replacement_id),
  CONSTRAINT approved_has_version CHECK ((state = 'approved') = (new_version_id IS NOT NULL)),
  CONSTRAINT decided_has_decider CHECK ((state IN ('approved', 'rejected')) = (decided_by IS NOT NULL)),
  FOREIGN KEY (tenant_id, file_id) REFERENCES files (tenant_id, file_id) ON DELETE CASCADE
);
CREATE INDEX file_replacements_by_file ON file_replacements (tenant_id, file_id, created_at DESC);
ALTER TABLE file_replacements ENABLE ROW LEVEL SECURITY;
ALTER TABLE file_replacements FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON file_replacements
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT, UPDATE ON file_replacements TO {{app_role}};
