-- A search's rerank call (a Bedrock rerank model reordering its best candidates, shared/services/reranking.py) is a
-- model call made inside a request: booked in request_usage as kind 'rerank', one row per collection it was made
-- for, no tokens (Bedrock prices rerank per query and reports none). The daily rerank limit counts its calls.
ALTER TABLE request_usage DROP CONSTRAINT request_usage_kind_check;
ALTER TABLE request_usage ADD CONSTRAINT request_usage_kind_check CHECK (kind IN ('answer', 'summary', 'rerank'));
