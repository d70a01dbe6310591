-- The file lifecycle of the files work: per-version names and outcomes, and the tenant registry the
-- sweeps walk so that they can work one tenant at a time without ever bypassing row-level security.

CREATE TABLE tenants (
  tenant_id  text        PRIMARY KEY CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  created_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
-- A tenant registers only itself; the list of ids (no content) is readable so sweeps can iterate it.
CREATE POLICY tenant_registers_itself ON tenants FOR INSERT WITH CHECK (tenant_id = current_tenant());
CREATE POLICY tenant_ids_are_listed ON tenants FOR SELECT USING (true);
GRANT SELECT, INSERT ON tenants TO {{app_role}};

ALTER TABLE file_versions
  ADD COLUMN filename                text        NOT NULL CHECK (length(filename) BETWEEN 1 AND 255),
  ADD COLUMN created_by              text        NOT NULL,
  ADD COLUMN rejection_reason        text,
  ADD COLUMN stored_at               timestamptz,
  ADD COLUMN processing_requested_at timestamptz,
  -- Each start of processing is a new attempt: its number names the Step Functions execution (names are
  -- kept for 90 days, so a retry needs a new one) and guards the steps against a superseded attempt.
  ADD COLUMN processing_attempt      integer     NOT NULL DEFAULT 0,
  -- The extraction's summary; the document itself is a derived object (document_key), never a column.
  ADD COLUMN page_count              integer     CHECK (page_count >= 0),
  ADD COLUMN block_count             integer     CHECK (block_count >= 0),
  ADD COLUMN pages_without_text      integer[]   NOT NULL DEFAULT '{}',
  ADD COLUMN extraction_warnings     text[]      NOT NULL DEFAULT '{}',
  ADD COLUMN extraction_truncated    boolean     NOT NULL DEFAULT false,
  ADD COLUMN document_key            text,
  ADD CONSTRAINT rejected_has_reason CHECK ((state = 'rejected') = (rejection_reason IS NOT NULL) OR state IN ('deleting', 'deleted')),
  ADD CONSTRAINT storage_key_unique UNIQUE (storage_key);

-- Listing shows files with a live version; the partial index keeps that test cheap.
CREATE INDEX file_versions_live ON file_versions (tenant_id, file_id) WHERE state IN ('pending', 'stored', 'rejected');
-- Reconciliation's questions, each answered from an index: what is in a transitional state, and what
-- is stored but not (yet) processed.
CREATE INDEX file_versions_transitional ON file_versions (tenant_id, updated_at, version_id)
  WHERE state IN ('pending', 'deleting');
CREATE INDEX file_versions_awaiting_processing ON file_versions (tenant_id, updated_at, version_id)
  WHERE state = 'stored' AND processing_state IN ('not_started', 'queued', 'extracting', 'indexing', 'failed');
