-- Chunks' situating sentences (issue 37; docs/search.md#contextual-chunks): on AWS, when QUIRE_CHUNK_CONTEXT_MODEL_ID
-- names a model, it writes one sentence per chunk on where the chunk sits in its document, indexed as the chunk's
-- context. Kept per file, model and the hash of what the chunk is indexed with but the sentence, so a re-index of
-- the file (or a new version with the same chunks) does not pay for them again. They are derived from the file's
-- text: deleting the file deletes them (shared/adapters/postgres/file_catalog.py), as it deletes its chunks.
CREATE TABLE chunk_situations (
  tenant_id  text        NOT NULL,
  file_id    uuid        NOT NULL,
  model      text        NOT NULL CHECK (length(model) BETWEEN 1 AND 256),
  chunk_hash text        NOT NULL CHECK (chunk_hash ~ '^[0-9a-f]{64}$'),
  situation  text        NOT NULL CHECK (length(situation) BETWEEN 1 AND 1000),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, file_id, model, chunk_hash),
  FOREIGN KEY (tenant_id, file_id) REFERENCES files (tenant_id, file_id) ON DELETE CASCADE
);

ALTER TABLE chunk_situations ENABLE ROW LEVEL SECURITY;
ALTER TABLE chunk_situations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON chunk_situations
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT, DELETE ON chunk_situations TO {{app_role}};

-- The model a version's chunks were situated by (NULL: none was asked), and why some of them were indexed without a
-- sentence (the model failed, the tenant's daily generation limit was spent, the step's time ran out; NULL when
-- every chunk has one or none was asked for). Where a model is configured, a version situated by another or none,
-- or with a gap, is on the re-index work list, which asks again and pays only for what the cache does not hold.
ALTER TABLE file_versions ADD COLUMN context_model text, ADD COLUMN context_gap text;
