"""The objects the chunk and embed steps leave for the index step: their keys and their encodings."""

import json
import math
import uuid
from collections.abc import Sequence

import pytest

from shared.domain.attempt_work import (
    EmbeddedBatch,
    chunk_batch_key,
    chunk_manifest_key,
    parse_work_key,
    vector_batch_key,
    work_prefix,
)
from shared.domain.capabilities import CapabilityStatus
from shared.domain.similarity import MINILM_SCALE
from shared.domain.uploads import storage_key
from shared.domain.usage import Usage
from shared.services.indexing import Indexer

FILE = uuid.UUID("6f1c7a52-1111-4d1e-8c3a-0b7f4a2e9d10")
VERSION = uuid.UUID("0b8e1c52-7d3f-4f5e-8f0a-1a2b3c4d5e6f")


def test_vectors_survive_their_float32_encoding_exactly_when_they_are_float32() -> None:
    vectors = [[0.5, -1.25, 3.0], [1e-3, 0.0, -7.5]]
    batch = EmbeddedBatch.of(4, vectors, model="minilm", tokens=12)
    decoded = EmbeddedBatch.model_validate_json(batch.model_dump_json()).vectors()
    assert decoded is not None
    assert [[pytest.approx(v, rel=1e-6) for v in row] for row in decoded] == vectors
    assert (batch.count, batch.dimension, batch.tokens, batch.gap) == (2, 3, 12, None)


def test_float32_vectors_take_about_a_third_of_their_json_size() -> None:
    vectors = [[math.sin(i * j) for j in range(1024)] for i in range(16)]
    packed = EmbeddedBatch.of(0, vectors, model="titan", tokens=1).model_dump_json()
    assert len(packed) < len(json.dumps(vectors)) / 3


def test_vectors_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="different lengths"):
        EmbeddedBatch.of(0, [[1.0, 2.0], [1.0]], model="m", tokens=1)


def test_a_missing_batch_carries_its_reason_and_no_vectors() -> None:
    missing = EmbeddedBatch.missing(2, 64, "no embedding model is configured")
    assert missing.vectors() is None and missing.gap == "no embedding model is configured"


def test_a_truncated_vector_payload_is_refused_rather_than_misaligned() -> None:
    batch = EmbeddedBatch.of(0, [[1.0, 2.0], [3.0, 4.0]], model="m", tokens=1)
    damaged = batch.model_copy(update={"count": 3})
    with pytest.raises(ValueError, match="holds 4 values, not 3x2"):
        damaged.vectors()


def test_work_keys_live_beside_the_original_per_attempt_and_parse_back() -> None:
    prefix = work_prefix("acme", FILE, VERSION, 3)
    assert prefix == f"derived/{storage_key('acme', FILE, VERSION)}/work-3/"
    for key in (chunk_manifest_key(prefix), chunk_batch_key(prefix, 7), vector_batch_key(prefix, 12)):
        parsed = parse_work_key(key)
        assert parsed is not None
        assert (parsed.original.tenant_id, parsed.original.version_id, parsed.attempt) == ("acme", VERSION, 3)


@pytest.mark.parametrize(
    "key",
    [
        f"derived/{storage_key('acme', FILE, VERSION)}/document-3.json",
        f"derived/{storage_key('acme', FILE, VERSION)}/work-3/notes.txt",
        "derived/tenants/acme/elsewhere/work-3/chunks.json",
        f"{storage_key('acme', FILE, VERSION)}/work-3/chunks.json",
    ],
)
def test_other_keys_are_not_work(key: str) -> None:
    assert parse_work_key(key) is None


class CountingEmbedder:
    """A fake EmbeddingProvider: a vector that names its text, and every text it was sent."""

    languages: frozenset[str] | None = None  # every language, as a multilingual model
    similarity_scale = MINILM_SCALE

    model_id = "counting"
    dimension = 2
    max_tokens = 100

    def __init__(self) -> None:
        self.sent: list[str] = []

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready("counting")

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.sent.extend(texts)
        return [[float(len(text)), float(text.count("a"))] for text in texts]

    def usage(self, tokens: int) -> Usage:
        return Usage(provider="counting", operation="embed", model=self.model_id, priced=False, input_tokens=tokens)

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        return self.embed(questions)


def test_each_distinct_text_is_embedded_once_and_every_text_gets_its_vector() -> None:
    # A file of one line repeated (or running headers): thousands of equal chunks cost one embedding.
    embedder = CountingEmbedder()
    indexer = Indexer(knowledge=None, embedder=embedder, detector=None, embed_batch=2)  # type: ignore[arg-type]
    texts = ["<<<<", "banana", "<<<<", "<<<<", "apple", "banana"]
    vectors, gap = indexer.embed(texts)
    assert gap is None
    assert embedder.sent == ["<<<<", "banana", "apple"]
    assert vectors == [[4.0, 0.0], [6.0, 3.0], [4.0, 0.0], [4.0, 0.0], [5.0, 1.0], [6.0, 3.0]]
