-- The audit record of agent tool calls (MCP and HTTP): who called which tool, on which ids, in which collections,
-- how it ended and how long it took. Ids only, never free text (shared/domain/audit.py bounds every field).

CREATE TABLE tool_calls (
  tenant_id      text        NOT NULL,
  call_id        uuid        NOT NULL DEFAULT gen_random_uuid(),
  subject        text        NOT NULL CHECK (length(subject) BETWEEN 1 AND 255),
  tool           text        NOT NULL CHECK (length(tool) BETWEEN 1 AND 64),
  surface        text        NOT NULL CHECK (surface IN ('mcp', 'http')),
  argument_ids   jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(argument_ids) = 'object'),
  -- Empty when the call was refused before any collection was known (an id that was not found).
  collection_ids text[]      NOT NULL DEFAULT '{}' CHECK (cardinality(collection_ids) <= 256),
  outcome        text        NOT NULL CHECK (length(outcome) BETWEEN 1 AND 64),
  duration_ms    integer     NOT NULL CHECK (duration_ms >= 0),
  called_at      timestamptz NOT NULL,
  recorded_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, call_id)
);
-- A tenant's calls, newest first, in keyset pages of (called_at, call_id).
CREATE INDEX tool_calls_newest_first ON tool_calls (tenant_id, called_at DESC, call_id DESC);
ALTER TABLE tool_calls ENABLE ROW LEVEL SECURITY;
ALTER TABLE tool_calls FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tool_calls
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
-- Appended and read, never changed: the application may not rewrite or remove what an agent did.
GRANT SELECT, INSERT ON tool_calls TO {{app_role}};
