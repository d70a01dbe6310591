-- Grounded answers (issue 18, seeds/003 "persistence"): the question and its answer, the answer's claims and
-- numbered citations (each a stored snapshot), which citations bear out which claim, and feedback on answers.
-- Appended, never rewritten: the application may read and insert, not update or delete. And a generation
-- counter per collection, bumped whenever its searchable chunks change, from which the answer cache's index
-- version is derived (an answer is never served from cache after a relevant document changed).

CREATE TABLE answers (
  tenant_id        text        NOT NULL,
  answer_id        uuid        NOT NULL,
  subject          text        NOT NULL CHECK (length(subject) BETWEEN 1 AND 255),
  question         text        NOT NULL CHECK (length(question) BETWEEN 1 AND 2000),
  cache_key        text        NOT NULL CHECK (length(cache_key) BETWEEN 1 AND 256),
  outcome          text        NOT NULL CHECK (outcome IN ('answered', 'evidence_only', 'refused')),
  method           text        CHECK (method IN ('generated', 'extractive')),
  refusal_reason   text        CHECK (refusal_reason IN ('no_access', 'no_match', 'below_floor',
                                 'insufficient_evidence', 'conflicting_evidence', 'out_of_scope')),
  refusal_sentence text        CHECK (length(refusal_sentence) BETWEEN 1 AND 1000),
  assumptions      text[]      NOT NULL DEFAULT '{}'
                   CHECK (cardinality(assumptions) <= 32 AND length(array_to_string(assumptions, '')) <= 32000),
  needs_review     boolean     NOT NULL,
  confidence       jsonb       NOT NULL
                   CHECK (jsonb_typeof(confidence) = 'object' AND length(confidence::text) <= 4000),
  withheld         integer     NOT NULL CHECK (withheld BETWEEN 0 AND 1000),
  fallback         text        CHECK (length(fallback) BETWEEN 1 AND 500),
  vector_available boolean     NOT NULL,
  model            text        CHECK (length(model) BETWEEN 1 AND 255),
  prompt_version   text        NOT NULL CHECK (length(prompt_version) BETWEEN 1 AND 64),
  index_version    text        NOT NULL CHECK (length(index_version) BETWEEN 1 AND 64),
  -- The collections its citations were read from: re-checked against the caller's on every read.
  collection_ids   text[]      NOT NULL CHECK (cardinality(collection_ids) <= 256),
  created_at       timestamptz NOT NULL,
  recorded_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, answer_id),
  -- A refusal has a reason and no method; anything else has a method and no reason (shared/domain/answers.py).
  CONSTRAINT a_refusal_has_a_reason_and_no_method CHECK (
    (outcome = 'refused') = (refusal_reason IS NOT NULL)
    AND (outcome = 'refused') = (method IS NULL)
    AND (refusal_reason IS NULL) = (refusal_sentence IS NULL))
);
-- The cache lookup: the newest answer under a key.
CREATE INDEX answers_by_cache_key ON answers (tenant_id, cache_key, created_at DESC);

CREATE TABLE answer_claims (
  tenant_id  text    NOT NULL,
  answer_id  uuid    NOT NULL,
  position   integer NOT NULL CHECK (position BETWEEN 0 AND 63),
  text       text    NOT NULL CHECK (length(text) BETWEEN 1 AND 600),
  kind       text    NOT NULL CHECK (kind IN ('direct', 'inferred', 'extractive')),
  quote      text    CHECK (length(quote) <= 4000),
  -- No `supported` column: a claim is supported exactly when a citation names it (answer_claim_citations).
  PRIMARY KEY (tenant_id, answer_id, position),
  FOREIGN KEY (tenant_id, answer_id) REFERENCES answers (tenant_id, answer_id) ON DELETE CASCADE
);

CREATE TABLE answer_citations (
  tenant_id     text             NOT NULL,
  answer_id     uuid             NOT NULL,
  number        integer          NOT NULL CHECK (number BETWEEN 1 AND 64),
  chunk_id      text             NOT NULL CHECK (length(chunk_id) BETWEEN 1 AND 255),
  file_id       uuid             NOT NULL,
  version_id    uuid             NOT NULL,
  collection_id text             NOT NULL CHECK (collection_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  -- The search citation snapshot, whole (shared/domain/search.py Citation): evidence after the file is gone.
  citation      jsonb            NOT NULL CHECK (jsonb_typeof(citation) = 'object' AND length(citation::text) <= 65536),
  -- Finite: NaN compares above every number in PostgreSQL, so `< 'Infinity'` excludes it too.
  score         double precision NOT NULL CHECK (score > '-Infinity' AND score < 'Infinity'),
  PRIMARY KEY (tenant_id, answer_id, number),
  FOREIGN KEY (tenant_id, answer_id) REFERENCES answers (tenant_id, answer_id) ON DELETE CASCADE,
  -- The columns are the snapshot's own ids, kept beside it so answers citing a file can be found.
  CONSTRAINT the_columns_are_the_snapshots_ids CHECK (
    citation ->> 'file_id' = file_id::text AND citation ->> 'version_id' = version_id::text
    AND citation ->> 'collection_id' = collection_id)
);
CREATE INDEX answer_citations_by_file ON answer_citations (tenant_id, file_id);

-- Which citations bear out which claim, in the claim's own order of them.
CREATE TABLE answer_claim_citations (
  tenant_id text    NOT NULL,
  answer_id uuid    NOT NULL,
  position  integer NOT NULL,
  rank      integer NOT NULL CHECK (rank BETWEEN 0 AND 63),
  number    integer NOT NULL,
  PRIMARY KEY (tenant_id, answer_id, position, rank),
  UNIQUE (tenant_id, answer_id, position, number),
  FOREIGN KEY (tenant_id, answer_id, position) REFERENCES answer_claims (tenant_id, answer_id, position)
    ON DELETE CASCADE,
  FOREIGN KEY (tenant_id, answer_id, number) REFERENCES answer_citations (tenant_id, answer_id, number)
    ON DELETE CASCADE
);

CREATE TABLE answer_feedback (
  tenant_id   text        NOT NULL,
  feedback_id uuid        NOT NULL DEFAULT gen_random_uuid(),
  answer_id   uuid        NOT NULL,
  subject     text        NOT NULL CHECK (length(subject) BETWEEN 1 AND 255),
  verdict     text        NOT NULL CHECK (verdict IN ('helpful', 'wrong_citation', 'wrong_answer')),
  note        text        CHECK (length(note) <= 2000),
  -- Which citation was wrong; it must be one of the answer's (MATCH SIMPLE: no number, no check).
  citation    integer,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, feedback_id),
  FOREIGN KEY (tenant_id, answer_id) REFERENCES answers (tenant_id, answer_id) ON DELETE CASCADE,
  FOREIGN KEY (tenant_id, answer_id, citation) REFERENCES answer_citations (tenant_id, answer_id, number)
    ON DELETE CASCADE
);
CREATE INDEX answer_feedback_by_answer ON answer_feedback (tenant_id, answer_id, created_at);

ALTER TABLE answers ENABLE ROW LEVEL SECURITY;
ALTER TABLE answers FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON answers
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
ALTER TABLE answer_claims ENABLE ROW LEVEL SECURITY;
ALTER TABLE answer_claims FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON answer_claims
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
ALTER TABLE answer_citations ENABLE ROW LEVEL SECURITY;
ALTER TABLE answer_citations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON answer_citations
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
ALTER TABLE answer_claim_citations ENABLE ROW LEVEL SECURITY;
ALTER TABLE answer_claim_citations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON answer_claim_citations
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
ALTER TABLE answer_feedback ENABLE ROW LEVEL SECURITY;
ALTER TABLE answer_feedback FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON answer_feedback
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
-- Appended and read, never changed: what was answered, and what a person said of it, stays as it was.
GRANT SELECT, INSERT ON answers, answer_claims, answer_citations, answer_claim_citations, answer_feedback
  TO {{app_role}};

-- The index generation of each collection: bumped once per statement that inserts, deletes or updates its
-- chunks (indexing, re-indexing with any chunk count, deleting a file or a collection, a move, which deletes
-- and re-inserts the file's chunks, a rename, which is a new version indexed under the new name). Only ever
-- increases, so an index version derived from it never comes back to an earlier value. O(collections) to read.
CREATE TABLE collection_index_generations (
  tenant_id     text   NOT NULL,
  collection_id text   NOT NULL,
  generation    bigint NOT NULL CHECK (generation > 0),
  PRIMARY KEY (tenant_id, collection_id)
);
ALTER TABLE collection_index_generations ENABLE ROW LEVEL SECURITY;
ALTER TABLE collection_index_generations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON collection_index_generations
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
-- Read only: the trigger below writes as the owner, so the application can never set a generation back (which
-- would bring a stale cached answer back).
GRANT SELECT ON collection_index_generations TO {{app_role}};

-- SECURITY DEFINER, made safe as tenant_ids_for_sweeps() is (0014): names schema-qualified, a fixed search_path
-- with pg_temp last. FORCE ROW LEVEL SECURITY binds the owner too, so it writes the current tenant's rows only,
-- and the chunks it counts were already checked against that tenant.
CREATE FUNCTION knowledge_chunks_bump_generation() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  -- In collection order, after the statistics triggers (trigger names sort `count` before `generation`):
  -- every writer locks keyword_collections rows, then these, in one order, so none deadlocks another.
  INSERT INTO public.collection_index_generations AS g (tenant_id, collection_id, generation)
    SELECT DISTINCT tenant_id, collection_id, 1::bigint FROM changed ORDER BY tenant_id, collection_id
  ON CONFLICT (tenant_id, collection_id) DO UPDATE SET generation = g.generation + 1;
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION knowledge_chunks_bump_generation() FROM PUBLIC;

-- A statement that touches no chunk (a first indexing deletes nothing) bumps nothing: `changed` is empty.
CREATE TRIGGER knowledge_chunks_generation_added AFTER INSERT ON knowledge_chunks
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunks_bump_generation();
CREATE TRIGGER knowledge_chunks_generation_removed AFTER DELETE ON knowledge_chunks
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunks_bump_generation();
-- A chunk's text and collection are immutable (0005), but its stored embedding or location may be rewritten.
CREATE TRIGGER knowledge_chunks_generation_updated AFTER UPDATE ON knowledge_chunks
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunks_bump_generation();
