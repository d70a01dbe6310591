-- A product's own metadata on each file (issue 33; shared/domain/metadata.py). `metadata` is the object as the
-- product wrote it (what every view shows); `metadata_typed` is the same values by type, which filters read
-- (shared/adapters/postgres/metadata_sql.py): strings, numbers, booleans and lists under s, n, b and l, dates
-- under d as microseconds since the epoch, so values of different types never compare. Both change together, in
-- the statement that bumps `metadata_revision` (a patch names the revision it read; a stale one is refused).
-- A file's metadata is the file's, not a version's: a new version keeps it. Chunks do not copy it (a change would
-- rewrite every chunk and its vector index entry): the lanes join the file by its key.
ALTER TABLE files
  ADD COLUMN metadata          jsonb   NOT NULL DEFAULT '{}'::jsonb
                               CHECK (jsonb_typeof(metadata) = 'object' AND octet_length(metadata::text) <= 65536),
  ADD COLUMN metadata_typed    jsonb   NOT NULL DEFAULT '{"s": {}, "n": {}, "b": {}, "d": {}, "l": {}}'::jsonb
                               CHECK (jsonb_typeof(metadata_typed) = 'object'),
  ADD COLUMN metadata_revision integer NOT NULL DEFAULT 0 CHECK (metadata_revision >= 0);

-- The type each key has in a collection: declared by the collection's schema, or else the type of the first value
-- written for it (a later value of another type is refused). Written before the file row in the same
-- transaction, so two writers racing on a new key agree on one type. Also what facets and the console offer.
CREATE TABLE metadata_key_types (
  tenant_id     text NOT NULL,
  collection_id text NOT NULL,
  key           text NOT NULL CHECK (key ~ '^[a-z][a-z0-9_.-]{0,63}$'),
  type          text NOT NULL CHECK (type IN ('string', 'number', 'boolean', 'date', 'list')),
  PRIMARY KEY (tenant_id, collection_id, key)
);
ALTER TABLE metadata_key_types ENABLE ROW LEVEL SECURITY;
ALTER TABLE metadata_key_types FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON metadata_key_types
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON metadata_key_types TO {{app_role}};

-- A collection's optional metadata schema (shared/domain/metadata_schema.py), as its admin put it.
CREATE TABLE collection_metadata_schemas (
  tenant_id     text        NOT NULL,
  collection_id text        NOT NULL,
  schema        jsonb       NOT NULL CHECK (jsonb_typeof(schema) = 'object'),
  updated_by    text        NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, collection_id)
);
ALTER TABLE collection_metadata_schemas ENABLE ROW LEVEL SECURITY;
ALTER TABLE collection_metadata_schemas FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON collection_metadata_schemas
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON collection_metadata_schemas TO {{app_role}};

-- A metadata change changes what a filtered search finds and what its citations show: it bumps the collection's
-- index generation (migrations/0020) as a change of chunks does, so no cached answer outlives it. Only a change of
-- the metadata (comparing each row before and after: PostgreSQL refuses a column list beside transition tables);
-- a rename or a move bumps it through the chunks already. SECURITY DEFINER as 0020's function, for the same reason
-- (the application cannot write generations), made safe the same way.
CREATE FUNCTION files_bump_generation() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  INSERT INTO public.collection_index_generations AS g (tenant_id, collection_id, generation)
    SELECT DISTINCT a.tenant_id, a.collection_id, 1::bigint
    FROM after_change AS a JOIN before_change AS b ON b.tenant_id = a.tenant_id AND b.file_id = a.file_id
    WHERE a.metadata_typed IS DISTINCT FROM b.metadata_typed OR a.metadata IS DISTINCT FROM b.metadata
    ORDER BY 1, 2
  ON CONFLICT (tenant_id, collection_id) DO UPDATE SET generation = g.generation + 1;
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION files_bump_generation() FROM PUBLIC;
CREATE TRIGGER files_metadata_generation AFTER UPDATE ON files
  REFERENCING OLD TABLE AS before_change NEW TABLE AS after_change
  FOR EACH STATEMENT EXECUTE FUNCTION files_bump_generation();
