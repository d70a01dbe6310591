-- Postings for the keyword lane: one row per (chunk, term) with the term's frequency and the chunk's
-- length. Under row-level security PostgreSQL will not use knowledge_chunks' GIN index for `@@` (the
-- operator is not leakproof, so it may not run before the policy), and the lane had to test every row of
-- the tenant; btree equality on text is leakproof, so these rows are found through their primary key.
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

INSERT INTO keyword_postings (tenant_id, collection_id, term, chunk_id, frequency, chunk_length)
  SELECT c.tenant_id, c.collection_id, t.lexeme, c.chunk_id, cardinality(t.positions), c.lexical_length
  FROM knowledge_chunks AS c, unnest(c.search_vector) AS t;

-- The statistics triggers keep the postings too, in the same statements.
CREATE OR REPLACE FUNCTION knowledge_chunks_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION knowledge_chunks_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
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
