-- Contextual chunks (issue 37; docs/search.md#contextual-chunks). A chunk is indexed under its document's title,
-- its heading path and, for a table, its caption; the application writes the context's terms with weight A and the
-- body's with the default D (setweight), so each posting can say how many of a term's occurrences are context.
-- The keyword lane weighs those apart (QUIRE_SEARCH_CONTEXT_WEIGHT): a title names what every chunk of a document
-- is about, but it is the same in each, and a body's words are what tell one chunk from its siblings.
--
-- Chunks stored before this have no weights: their context_frequency is 0 and they score as they did, until the
-- next re-index of their version writes them with their context.
ALTER TABLE keyword_postings
  ADD COLUMN context_frequency integer NOT NULL DEFAULT 0 CHECK (context_frequency >= 0);

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
  INSERT INTO keyword_postings (tenant_id, collection_id, analyser, term, chunk_id, frequency, context_frequency,
                                chunk_length)
    SELECT a.tenant_id, a.collection_id, a.analyser, t.lexeme, a.chunk_id, cardinality(t.positions),
           cardinality(array_positions(t.weights, 'A')), a.lexical_length
    FROM added AS a, unnest(a.search_vector) AS t;
  RETURN NULL;
END $$;

-- The context version a version's chunks were indexed with (shared/domain/chunk_context.py:CONTEXT_VERSION); NULL
-- before this. A version indexed under another is on the re-index work list, as one another model embedded is.
ALTER TABLE file_versions ADD COLUMN chunk_context smallint CHECK (chunk_context > 0);
