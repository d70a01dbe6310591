-- The evidence an answer was drawn from, with its retrieval scores (shared/domain/answers.py AnswerHit): places and
-- scores only, never text. At most the answer's evidence budget of pieces (8), each a small object.
ALTER TABLE answers
  ADD COLUMN hits jsonb NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(hits) = 'array' AND jsonb_array_length(hits) <= 50 AND length(hits::text) <= 65536);
