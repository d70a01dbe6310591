-- Artifacts (seeds/000 "Artifacts (#133)"): the identity that outlives any version, and the versions.
-- latest_version is denormalised on purpose: it is read on every resolve of "the current version", and
-- the compare-and-set on it (UPDATE ... WHERE latest_version = expected) is what settles two writers.
CREATE TABLE artifacts (
  tenant_id      text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  artifact_id    uuid        NOT NULL,
  collection_id  text        NOT NULL CHECK (collection_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  name           text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  latest_version integer     NOT NULL CHECK (latest_version >= 1),
  created_by     text        NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, artifact_id)
);
CREATE INDEX artifacts_by_collection ON artifacts (tenant_id, collection_id, created_at DESC, artifact_id);

-- Content by reference only: there is no column content could be inlined into. The content object is
-- written before the row, so a row never points at content that does not exist.
CREATE TABLE artifact_versions (
  tenant_id     text        NOT NULL,
  artifact_id   uuid        NOT NULL,
  version       integer     NOT NULL CHECK (version >= 1),
  content_key   text        NOT NULL CHECK (content_key LIKE 'derived/tenants/%'),
  content_hash  text        NOT NULL CHECK (content_hash ~ '^[0-9a-f]{64}$'),
  content_bytes bigint      NOT NULL CHECK (content_bytes > 0),
  block_count   integer     NOT NULL CHECK (block_count >= 0),
  -- Required, and recorded by the server: who produced the version, from what inputs and sources.
  provenance    jsonb       NOT NULL CHECK (jsonb_typeof(provenance) = 'object' AND provenance ? 'producer'
                                            AND provenance ? 'inputs' AND provenance ? 'sources'),
  created_by    text        NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT artifact_versions_unique UNIQUE (tenant_id, artifact_id, version),
  FOREIGN KEY (tenant_id, artifact_id) REFERENCES artifacts (tenant_id, artifact_id) ON DELETE CASCADE
);

ALTER TABLE artifacts ENABLE ROW LEVEL SECURITY;
ALTER TABLE artifacts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON artifacts
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());

ALTER TABLE artifact_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE artifact_versions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON artifact_versions
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());

-- Versions are never updated or deleted one by one: history is append-only.
GRANT SELECT, INSERT, UPDATE, DELETE ON artifacts TO {{app_role}};
GRANT SELECT, INSERT ON artifact_versions TO {{app_role}};
