-- The index: chunks carry what both lanes filter on and what a citation snapshots, so a search touches
-- one table; the keyword lane's BM25 statistics and postings live beside them, kept exact by triggers.

-- knowledge_chunks has never held rows (nothing wrote to it before this migration), so NOT NULL
-- columns need no defaults.
ALTER TABLE knowledge_chunks
  ADD COLUMN collection_id  text        NOT NULL,
  ADD COLUMN filename       text        NOT NULL,
  ADD COLUMN media_type     text        NOT NULL,
  ADD COLUMN uploaded_at    timestamptz NOT NULL,
  ADD COLUMN block_kind     text        NOT NULL,
  ADD COLUMN location       jsonb       NOT NULL,
  ADD COLUMN heading_path   text[]      NOT NULL,
  ADD COLUMN parent_block   integer,
  ADD COLUMN block_start    integer     NOT NULL,
  ADD COLUMN block_end      integer     NOT NULL,
  -- `content` is the heading path then the body; the body (what an excerpt quotes) starts here.
  ADD COLUMN body_offset    integer     NOT NULL CHECK (body_offset >= 0),
  ADD COLUMN token_count    integer     NOT NULL CHECK (token_count > 0),
  -- Words in `content` as the `simple` parser counts them: BM25's document length.
  ADD COLUMN lexical_length integer     NOT NULL DEFAULT 0,
  ADD CONSTRAINT embedding_names_its_model CHECK (embedding IS NULL OR embedding_model IS NOT NULL),
  ADD CONSTRAINT subjects_are_the_collection CHECK (subjects = ARRAY[collection_id]);

CREATE INDEX knowledge_chunks_by_file ON knowledge_chunks (tenant_id, file_id);
-- Stale and lexical-only sources are found from what is stored (no re-index cursor to lose).
CREATE INDEX knowledge_chunks_by_model ON knowledge_chunks (tenant_id, embedding_model, version_id);

-- Document frequency of every term, per tenant and collection: a caller's IDF counts only the
-- collections it may read, so a score never reflects rows it cannot see.
CREATE TABLE keyword_terms (
  tenant_id     text    NOT NULL,
  collection_id text    NOT NULL,
  term          text    NOT NULL,
  chunk_count   integer NOT NULL CHECK (chunk_count >= 0),
  PRIMARY KEY (tenant_id, collection_id, term)
);
CREATE TABLE keyword_collections (
  tenant_id     text   NOT NULL,
  collection_id text   NOT NULL,
  chunk_count   bigint NOT NULL CHECK (chunk_count >= 0),
  total_length  bigint NOT NULL CHECK (total_length >= 0),
  PRIMARY KEY (tenant_id, collection_id)
);
ALTER TABLE keyword_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE keyword_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON keyword_terms
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
ALTER TABLE keyword_collections ENABLE ROW LEVEL SECURITY;
ALTER TABLE keyword_collections FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON keyword_collections
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON keyword_terms, keyword_collections TO {{app_role}};

-- Postings for the keyword lane: one row per (chunk, term) with the term's frequency and the chunk's
-- length. Under row-level security PostgreSQL will not use a GIN index for `@@` (the operator is not
-- leakproof, so it may not run before the policy) and the lane would test every row of the tenant;
-- btree equality on text is leakproof, so postings are found through their primary key.
CREATE TABLE keyword_postings (
  tenant_id     text    NOT NULL,
  collection_id text    NOT NULL,
  term          text    NOT NULL,
  chunk_id      text    NOT NULL,
  frequency     integer NOT NULL CHECK (frequency > 0),
  chunk_length  integer NOT NULL CHECK (chunk_length >= 0),
  PRIMARY KEY (tenant_id, collection_id, term, chunk_id)
);
ALTER TABLE keyword_postings ENABLE ROW LEVEL SECURITY;
ALTER TABLE keyword_postings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON keyword_postings
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON keyword_postings TO {{app_role}};

-- A chunk's text never changes in place (a version is re-indexed by replacing its chunks), so the
-- statistics follow inserts and deletes only. Generated columns are not computed yet in a BEFORE
-- trigger, hence to_tsvector here rather than search_vector.
CREATE FUNCTION knowledge_chunks_before_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF NEW.content IS DISTINCT FROM OLD.content OR NEW.collection_id IS DISTINCT FROM OLD.collection_id
       OR NEW.tenant_id IS DISTINCT FROM OLD.tenant_id THEN
      RAISE EXCEPTION 'a chunk''s text and collection are immutable: replace the version''s chunks instead';
    END IF;
    RETURN NEW;
  END IF;
  NEW.lexical_length := (SELECT coalesce(sum(array_length(t.positions, 1)), 0)
                         FROM unnest(to_tsvector('simple', NEW.content)) AS t);
  RETURN NEW;
END $$;
CREATE TRIGGER knowledge_chunks_before_write BEFORE INSERT OR UPDATE ON knowledge_chunks
  FOR EACH ROW EXECUTE FUNCTION knowledge_chunks_before_write();

-- Statement triggers over transition tables: one aggregated upsert per statement, not one per row.
-- Each locks its collection rows (in order) before any term row, and holds them to commit: concurrent
-- writers of one collection queue behind each other instead of deadlocking over terms.
CREATE FUNCTION knowledge_chunks_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO keyword_collections AS s (tenant_id, collection_id, chunk_count, total_length)
    SELECT tenant_id, collection_id, count(*), sum(lexical_length) FROM added
    GROUP BY tenant_id, collection_id ORDER BY tenant_id, collection_id
  ON CONFLICT (tenant_id, collection_id) DO UPDATE
    SET chunk_count = s.chunk_count + excluded.chunk_count, total_length = s.total_length + excluded.total_length;
  INSERT INTO keyword_terms AS s (tenant_id, collection_id, term, chunk_count)
    SELECT a.tenant_id, a.collection_id, t.lexeme, count(*) FROM added AS a, unnest(a.search_vector) AS t
    GROUP BY a.tenant_id, a.collection_id, t.lexeme
  ON CONFLICT (tenant_id, collection_id, term) DO UPDATE SET chunk_count = s.chunk_count + excluded.chunk_count;
  INSERT INTO keyword_postings (tenant_id, collection_id, term, chunk_id, frequency, chunk_length)
    SELECT a.tenant_id, a.collection_id, t.lexeme, a.chunk_id, cardinality(t.positions), a.lexical_length
    FROM added AS a, unnest(a.search_vector) AS t;
  RETURN NULL;
END $$;

CREATE FUNCTION knowledge_chunks_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE keyword_collections AS s
    SET chunk_count = s.chunk_count - r.chunks, total_length = s.total_length - r.total
    FROM (SELECT tenant_id, collection_id, count(*) AS chunks, sum(lexical_length) AS total FROM removed
          GROUP BY tenant_id, collection_id ORDER BY tenant_id, collection_id) AS r
    WHERE s.tenant_id = r.tenant_id AND s.collection_id = r.collection_id;
  UPDATE keyword_terms AS s SET chunk_count = s.chunk_count - g.chunks
    FROM (SELECT r.tenant_id, r.collection_id, t.lexeme AS term, count(*) AS chunks
          FROM removed AS r, unnest(r.search_vector) AS t
          GROUP BY r.tenant_id, r.collection_id, t.lexeme) AS g
    WHERE s.tenant_id = g.tenant_id AND s.collection_id = g.collection_id AND s.term = g.term;
  -- Only the terms just decremented are looked at (by primary key), never the collection's vocabulary.
  DELETE FROM keyword_terms AS s
    USING (SELECT DISTINCT r.tenant_id, r.collection_id, t.lexeme AS term
           FROM removed AS r, unnest(r.search_vector) AS t) AS g
    WHERE s.tenant_id = g.tenant_id AND s.collection_id = g.collection_id AND s.term = g.term
      AND s.chunk_count = 0;
  DELETE FROM keyword_postings AS p
    USING (SELECT r.tenant_id, r.collection_id, t.lexeme AS term, r.chunk_id
           FROM removed AS r, unnest(r.search_vector) AS t) AS g
    WHERE p.tenant_id = g.tenant_id AND p.collection_id = g.collection_id AND p.term = g.term
      AND p.chunk_id = g.chunk_id;
  RETURN NULL;
END $$;

CREATE TRIGGER knowledge_chunks_count_added AFTER INSERT ON knowledge_chunks
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunks_count_added();
CREATE TRIGGER knowledge_chunks_count_removed AFTER DELETE ON knowledge_chunks
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunks_count_removed();

-- What indexing did to each version, written in the transaction that swaps its chunks.
ALTER TABLE file_versions
  ADD COLUMN chunk_count          integer NOT NULL DEFAULT 0 CHECK (chunk_count >= 0),
  ADD COLUMN embedded_chunk_count integer NOT NULL DEFAULT 0 CHECK (embedded_chunk_count BETWEEN 0 AND chunk_count),
  ADD COLUMN embedding_model      text,
  ADD COLUMN embedding_gap        text,
  ADD COLUMN indexed_at           timestamptz;

-- An extracted version whose worker died before indexing is picked up by the sweep too.
DROP INDEX file_versions_awaiting_processing;
CREATE INDEX file_versions_awaiting_processing ON file_versions (tenant_id, updated_at, version_id)
  WHERE state = 'stored' AND processing_state IN ('not_started', 'queued', 'extracting', 'extracted', 'indexing',
                                                  'failed');
CREATE INDEX file_versions_indexed ON file_versions (tenant_id, updated_at, version_id)
  WHERE state = 'stored' AND processing_state = 'indexed' AND chunk_count > 0;
