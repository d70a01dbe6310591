-- The title lane: each indexed version's titles (its first heading, its filename without the extension) by
-- their normalised key (shared/domain/titles.py: NFKC, case-folded, letters and digits, single spaces). A
-- question's word n-grams are looked up here by btree equality (leakproof, so usable under row-level
-- security), never by a scan of the titles. Titles longer than 20 words or 200 characters are not indexed.
--
-- No collection is stored: a title row only names a version, and the lookup joins the version's first chunk
-- for its collection and the search filters, so a move (chunks re-inserted under the new collection) needs
-- nothing here and a title can never be matched where its chunks are not readable.
CREATE TABLE document_titles (
  tenant_id  text NOT NULL,
  version_id uuid NOT NULL,
  title_key  text NOT NULL CHECK (length(title_key) BETWEEN 1 AND 200),
  file_id    uuid NOT NULL,
  source     text NOT NULL CHECK (source IN ('heading', 'filename')),
  -- The key the lookup probes: (tenant, title) first.
  PRIMARY KEY (tenant_id, title_key, version_id),
  FOREIGN KEY (tenant_id, version_id) REFERENCES file_versions (tenant_id, version_id) ON DELETE CASCADE
);
-- What removes a version's titles (the trigger below, the foreign key's cascade).
CREATE INDEX document_titles_by_version ON document_titles (tenant_id, version_id);
ALTER TABLE document_titles ENABLE ROW LEVEL SECURITY;
ALTER TABLE document_titles FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON document_titles
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
-- Written with a version's chunks and removed with them, never changed in place.
GRANT SELECT, INSERT, DELETE ON document_titles TO {{app_role}};

-- A version's titles go when its last chunk goes, whichever statement removes it (a new version's index, a
-- superseded version, a deleted file or collection). A move deletes and re-inserts the chunks in one
-- statement, so by the end of it the version still has chunks and keeps its titles.
CREATE FUNCTION knowledge_chunks_drop_titles() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM document_titles AS t
    USING (SELECT DISTINCT tenant_id, version_id FROM removed) AS r
    WHERE t.tenant_id = r.tenant_id AND t.version_id = r.version_id
      AND NOT EXISTS (SELECT 1 FROM knowledge_chunks AS c
                      WHERE c.tenant_id = r.tenant_id AND c.version_id = r.version_id);
  RETURN NULL;
END $$;
CREATE TRIGGER knowledge_chunks_drop_titles AFTER DELETE ON knowledge_chunks
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunks_drop_titles();

-- Backfill from what is indexed: the filename of the first chunk, and the outermost heading of the first chunk
-- under a heading (new writes carry the first heading itself; a trimmed heading path may have lost it). The
-- key is approximated in SQL (lower() for case folding; stopword-only titles are not skipped): a title that
-- differs is right again after its version is next indexed. Row-level security binds the owner too, so each
-- tenant is filled under its own setting.
DO $$
DECLARE
  tenant text;
BEGIN
  FOR tenant IN SELECT tenant_id FROM tenants LOOP
    PERFORM set_config('quire.tenant_id', tenant, true);
    INSERT INTO document_titles (tenant_id, version_id, title_key, file_id, source)
    SELECT DISTINCT ON (version_id, title_key) tenant, version_id, title_key, file_id, source
    FROM (
      SELECT f.version_id, f.file_id, s.source,
             btrim(regexp_replace(lower(normalize(s.title, NFKC)), '[^[:alnum:]]+', ' ', 'g')) AS title_key
      FROM (SELECT DISTINCT ON (version_id) version_id, file_id, filename FROM knowledge_chunks
            WHERE tenant_id = tenant ORDER BY version_id, ordinal) AS f
      CROSS JOIN LATERAL (
        SELECT 'heading' AS source, h.heading_path[1] AS title FROM (
          SELECT c.heading_path FROM knowledge_chunks AS c
          WHERE c.tenant_id = tenant AND c.version_id = f.version_id AND cardinality(c.heading_path) > 0
          ORDER BY c.ordinal LIMIT 1) AS h
        UNION ALL
        -- The last extension off, as long as something is left before it (".env" stays).
        SELECT 'filename', regexp_replace(f.filename, '(.)\.[^.]*$', '\1')
      ) AS s
    ) AS titles
    WHERE title_key ~ '[[:alpha:]]' AND length(title_key) <= 200
      AND cardinality(string_to_array(title_key, ' ')) <= 20
    ORDER BY version_id, title_key, source = 'filename';
  END LOOP;
  PERFORM set_config('quire.tenant_id', '', true);
END $$;
