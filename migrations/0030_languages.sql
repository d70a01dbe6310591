-- Every language (issue 36; docs/search.md#languages). Each chunk records the language it is written in and the
-- analyser that reads it: Snowball's for the languages PostgreSQL has one for, `cjk` (character bigrams, read by
-- `simple`) for Chinese, Japanese and Korean, `simple` otherwise. The application gives each chunk its tsvector
-- from text it has folded itself (shared/domain/languages.py:keyword_text), so the embedded server's C locale and
-- Aurora's UTF-8 one produce the same terms: search_vector is no longer generated from the content.
--
-- The keyword lane's statistics are kept per analyser: a German term's document frequency is counted among German
-- chunks, and a German chunk's length against German chunks' average. The Python step beside this file
-- (0030_languages.py) detects every stored chunk's language, writes its terms again and rebuilds the statistics,
-- tenant by tenant under row-level security; the lengths it writes bump every collection's index generation (0020),
-- so no answer cached before this is served after it.

ALTER TABLE knowledge_chunks DROP COLUMN search_vector;
ALTER TABLE knowledge_chunks
  ADD COLUMN language text CHECK (language ~ '^[a-z]{2}$'),
  ADD COLUMN analyser text NOT NULL DEFAULT 'english' CHECK (analyser ~ '^[a-z]{1,32}$'),
  ADD COLUMN search_vector tsvector NOT NULL DEFAULT ''::tsvector;
-- Every writer names both from here on (the defaults only let the columns be added to existing rows).
ALTER TABLE knowledge_chunks ALTER COLUMN analyser DROP DEFAULT, ALTER COLUMN search_vector DROP DEFAULT;
-- Its GIN index is built by the Python step once every chunk's terms are written (one build, not a million updates).
COMMENT ON COLUMN knowledge_chunks.language IS
  'ISO 639-1 code of the language the chunk is written in (detected, or declared for its file); NULL: not known';
COMMENT ON COLUMN knowledge_chunks.analyser IS
  'The text search configuration its terms were made with (a Snowball language, simple), or cjk (bigrams, simple)';
COMMENT ON COLUMN knowledge_chunks.lexical_length IS
  'Terms of the chunk as its analyser keeps them (stopwords dropped): BM25''s document length';

-- A version's languages: the one its uploader declared (every chunk's, no detection), and what indexing found
-- (the most common first).
ALTER TABLE file_versions
  ADD COLUMN declared_language text CHECK (declared_language ~ '^[a-z]{2}$'),
  ADD COLUMN languages text[] NOT NULL DEFAULT '{}'
    CHECK (cardinality(languages) <= 32 AND array_to_string(languages, ',') ~ '^([a-z]{2}(,[a-z]{2})*)?$');

CREATE OR REPLACE FUNCTION knowledge_chunks_before_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF NEW.content IS DISTINCT FROM OLD.content OR NEW.collection_id IS DISTINCT FROM OLD.collection_id
       OR NEW.tenant_id IS DISTINCT FROM OLD.tenant_id OR NEW.analyser IS DISTINCT FROM OLD.analyser
       OR NEW.search_vector IS DISTINCT FROM OLD.search_vector THEN
      RAISE EXCEPTION 'a chunk''s text, terms and collection are immutable: replace the version''s chunks instead';
    END IF;
    RETURN NEW;
  END IF;
  NEW.lexical_length := (SELECT coalesce(sum(array_length(t.positions, 1)), 0) FROM unnest(NEW.search_vector) AS t);
  RETURN NEW;
END $$;

-- The statistics, keyed by analyser. Emptied here and rebuilt by the Python step.
TRUNCATE keyword_postings, keyword_terms, keyword_collections;
ALTER TABLE keyword_collections ADD COLUMN analyser text NOT NULL;
ALTER TABLE keyword_collections DROP CONSTRAINT keyword_collections_pkey,
  ADD PRIMARY KEY (tenant_id, collection_id, analyser);
ALTER TABLE keyword_terms ADD COLUMN analyser text NOT NULL;
ALTER TABLE keyword_terms DROP CONSTRAINT keyword_terms_pkey, ADD PRIMARY KEY (tenant_id, collection_id, analyser, term);
ALTER TABLE keyword_postings ADD COLUMN analyser text NOT NULL;
ALTER TABLE keyword_postings DROP CONSTRAINT keyword_postings_pkey,
  ADD PRIMARY KEY (tenant_id, collection_id, analyser, term, chunk_id);

CREATE OR REPLACE FUNCTION knowledge_chunks_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO keyword_collections AS s (tenant_id, collection_id, analyser, chunk_count, total_length)
    SELECT tenant_id, collection_id, analyser, count(*), sum(lexical_length) FROM added
    GROUP BY tenant_id, collection_id, analyser ORDER BY tenant_id, collection_id, analyser
  ON CONFLICT (tenant_id, collection_id, analyser) DO UPDATE
    SET chunk_count = s.chunk_count + excluded.chunk_count, total_length = s.total_length + excluded.total_length;
  INSERT INTO keyword_terms AS s (tenant_id, collection_id, analyser, term, chunk_count)
    SELECT a.tenant_id, a.collection_id, a.analyser, t.lexeme, count(*) FROM added AS a, unnest(a.search_vector) AS t
    GROUP BY a.tenant_id, a.collection_id, a.analyser, t.lexeme
  ON CONFLICT (tenant_id, collection_id, analyser, term) DO UPDATE SET chunk_count = s.chunk_count + excluded.chunk_count;
  INSERT INTO keyword_postings (tenant_id, collection_id, analyser, term, chunk_id, frequency, chunk_length)
    SELECT a.tenant_id, a.collection_id, a.analyser, t.lexeme, a.chunk_id, cardinality(t.positions), a.lexical_length
    FROM added AS a, unnest(a.search_vector) AS t;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION knowledge_chunks_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE keyword_collections AS s
    SET chunk_count = s.chunk_count - r.chunks, total_length = s.total_length - r.total
    FROM (SELECT tenant_id, collection_id, analyser, count(*) AS chunks, sum(lexical_length) AS total FROM removed
          GROUP BY tenant_id, collection_id, analyser ORDER BY tenant_id, collection_id, analyser) AS r
    WHERE s.tenant_id = r.tenant_id AND s.collection_id = r.collection_id AND s.analyser = r.analyser;
  UPDATE keyword_terms AS s SET chunk_count = s.chunk_count - g.chunks
    FROM (SELECT r.tenant_id, r.collection_id, r.analyser, t.lexeme AS term, count(*) AS chunks
          FROM removed AS r, unnest(r.search_vector) AS t
          GROUP BY r.tenant_id, r.collection_id, r.analyser, t.lexeme) AS g
    WHERE s.tenant_id = g.tenant_id AND s.collection_id = g.collection_id AND s.analyser = g.analyser
      AND s.term = g.term;
  -- Only the terms just decremented are looked at (by primary key), never the collection's vocabulary.
  DELETE FROM keyword_terms AS s
    USING (SELECT DISTINCT r.tenant_id, r.collection_id, r.analyser, t.lexeme AS term
           FROM removed AS r, unnest(r.search_vector) AS t) AS g
    WHERE s.tenant_id = g.tenant_id AND s.collection_id = g.collection_id AND s.analyser = g.analyser
      AND s.term = g.term AND s.chunk_count = 0;
  DELETE FROM keyword_postings AS p
    USING (SELECT r.tenant_id, r.collection_id, r.analyser, t.lexeme AS term, r.chunk_id
           FROM removed AS r, unnest(r.search_vector) AS t) AS g
    WHERE p.tenant_id = g.tenant_id AND p.collection_id = g.collection_id AND p.analyser = g.analyser
      AND p.term = g.term AND p.chunk_id = g.chunk_id;
  RETURN NULL;
END $$;
