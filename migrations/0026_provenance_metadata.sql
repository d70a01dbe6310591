-- An export's provenance (issue 33): the file versions it rendered, each with its file's metadata and
-- metadataRevision as of the claim (for an artifact version, as the version recorded them in its provenance), a
-- snapshot that later metadata changes leave as it is. Artifact versions need no column: their provenance (jsonb,
-- 0010) carries the same snapshot in each source.
ALTER TABLE exports
  ADD COLUMN sources jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(sources) = 'array');

-- Exports claimed before this migration name their sources too (without metadata: there was none to snapshot).
-- Row-level security binds the owner too, so each tenant is filled in under its own setting (as 0023).
DO $$
DECLARE
  tenant text;
BEGIN
  FOR tenant IN SELECT tenant_id FROM tenants LOOP
    PERFORM set_config('quire.tenant_id', tenant, true);
    UPDATE exports AS e SET sources = v.provenance -> 'sources'
      FROM artifact_versions AS v
      WHERE e.tenant_id = tenant AND e.kind = 'artifact'
        AND v.tenant_id = e.tenant_id AND v.artifact_id = e.artifact_id AND v.version = e.version;
    UPDATE exports
      SET sources = jsonb_build_array(jsonb_build_object('file_id', source_file_id, 'version_id', source_version_id))
      WHERE tenant_id = tenant AND kind = 'conversion';
    UPDATE exports SET sources = coalesce(
        (SELECT jsonb_agg(DISTINCT jsonb_build_object('file_id', i ->> 'fileId', 'version_id', i ->> 'versionId'))
         FROM jsonb_array_elements(operation -> 'inputs') AS i),
        '[]'::jsonb)
      WHERE tenant_id = tenant AND kind = 'pdf';
  END LOOP;
END $$;
