-- Duplicates (issue 37; docs/search.md#duplicates, docs/files.md#the-same-bytes-twice).
--
-- A chunk's text is found by its SHA-256: search collapses hits whose text is identical and lists the other places
-- under the hit kept (`alsoIn`). content_hash (0003) cannot serve: it hashes what is embedded (the heading path and
-- the body), so the same paragraph under two headings would not meet. The body is the content past body_offset.
ALTER TABLE knowledge_chunks ADD COLUMN text_sha256 text CHECK (text_sha256 ~ '^[0-9a-f]{64}$');
COMMENT ON COLUMN knowledge_chunks.text_sha256 IS
  'SHA-256 (hex) of the chunk''s body as UTF-8 (substr(content, body_offset + 1)): identical texts share it';

-- The chunks stored before, tenant by tenant: row-level security binds the owner too (as in 0023 and 0030).
-- convert_to is not immutable, so the column cannot be generated; every writer names it from here on.
DO $$
DECLARE
  tenant text;
BEGIN
  FOR tenant IN SELECT tenant_id FROM tenants ORDER BY tenant_id LOOP
    PERFORM set_config('quire.tenant_id', tenant, true);
    UPDATE knowledge_chunks
      SET text_sha256 = encode(sha256(convert_to(substr(content, body_offset + 1), 'UTF8')), 'hex')
      WHERE tenant_id = tenant;
  END LOOP;
  PERFORM set_config('quire.tenant_id', '', true);
END $$;

-- An equality on a plain column: under row-level security the planner may use this index (an expression over the
-- content would not be leakproof; docs/adr/0001).
CREATE INDEX knowledge_chunks_text ON knowledge_chunks (tenant_id, text_sha256);

-- The bytes' SHA-256 (hex): `content_sha256` as the extract step read them, `declared_sha256` as the upload's ticket
-- declared it (S3 verifies it against the bytes on AWS; the local S3 does not, so only the first is relied on).
ALTER TABLE file_versions
  ADD COLUMN content_sha256  text CHECK (content_sha256 ~ '^[0-9a-f]{64}$'),
  ADD COLUMN declared_sha256 text CHECK (declared_sha256 ~ '^[0-9a-f]{64}$');
CREATE INDEX file_versions_content_sha256 ON file_versions (tenant_id, content_sha256)
  WHERE content_sha256 IS NOT NULL;
