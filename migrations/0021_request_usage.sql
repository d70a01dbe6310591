-- Model calls made inside a request (a grounded answer's draft, the summarize_document tool's summary): they
-- have no file version, so they are not in usage_records. One row per (call, collection it was spent for), the
-- call's tokens shared out over its collections (shared/domain/usage.py collection_shares): a report over the
-- caller's readable collections sums exactly their shares and never shows spend in a collection they cannot read.

CREATE TABLE request_usage (
  tenant_id     text        NOT NULL,
  usage_id      uuid        NOT NULL,
  collection_id text        NOT NULL CHECK (length(collection_id) BETWEEN 1 AND 255),
  kind          text        NOT NULL CHECK (kind IN ('answer', 'summary')),
  -- Who asked (the principal's subject): the tenant's admin can tell spend apart without a second table.
  subject       text        NOT NULL CHECK (length(subject) BETWEEN 1 AND 255),
  provider      text        NOT NULL,
  operation     text        NOT NULL,
  model         text,
  priced        boolean     NOT NULL,
  input_tokens  bigint      NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
  output_tokens bigint      NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
  recorded_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, usage_id, collection_id)
);
-- The daily generation limit sums the tenant's day; a usage report scans its period.
CREATE INDEX request_usage_by_period ON request_usage (tenant_id, recorded_at);
ALTER TABLE request_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE request_usage FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON request_usage
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
-- Appended and read, never changed: the application may not rewrite what was charged.
GRANT SELECT, INSERT ON request_usage TO {{app_role}};
