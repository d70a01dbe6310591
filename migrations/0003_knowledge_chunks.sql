-- Chunks of indexed versions, searchable by both lanes. The vector dimension comes from settings
-- (QUIRE_EMBEDDING_DIMENSION); changing it later is a new migration plus a re-index, never an edit here.
CREATE TABLE knowledge_chunks (
  tenant_id       text        NOT NULL,
  chunk_id        text        NOT NULL,
  file_id         uuid        NOT NULL,
  version_id      uuid        NOT NULL,
  ordinal         integer     NOT NULL CHECK (ordinal >= 0),
  -- Authorization subjects (the collection, for now): filtered inside both lanes, before ranking.
  subjects        text[]      NOT NULL CHECK (cardinality(subjects) > 0),
  content         text        NOT NULL,
  content_hash    text        NOT NULL,
  embedding       vector({{embedding_dimension}}),
  embedding_model text,
  search_vector   tsvector    GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, chunk_id),
  UNIQUE (tenant_id, version_id, ordinal),
  FOREIGN KEY (tenant_id, version_id) REFERENCES file_versions (tenant_id, version_id) ON DELETE CASCADE
);
CREATE INDEX knowledge_chunks_embedding ON knowledge_chunks
  USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX knowledge_chunks_search ON knowledge_chunks USING gin (search_vector);
CREATE INDEX knowledge_chunks_subjects ON knowledge_chunks USING gin (subjects);

ALTER TABLE knowledge_chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE knowledge_chunks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON knowledge_chunks
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());

GRANT SELECT, INSERT, UPDATE, DELETE ON knowledge_chunks TO {{app_role}};
