"""The local embedding model: all-MiniLM-L6-v2 from its wheel, offline, on the CPU."""

import math

import pytest

from shared.adapters.local.sentence_embeddings import SentenceTransformerEmbedder
from shared.domain.errors import CapabilityUnavailable

# Each test here runs the real model on the CPU.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    model = SentenceTransformerEmbedder(dimension=384)
    if not model.capability().available:
        pytest.skip(f"the local model is not installed: {model.capability().reason}")
    return model


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_are_384_dimensional_unit_length_and_in_input_order(embedder: SentenceTransformerEmbedder) -> None:
    texts = ["The invoice is overdue.", "Payment for the bill is late.", "Tulips bloom in spring."]
    vectors = embedder.embed(texts)
    assert [len(vector) for vector in vectors] == [384, 384, 384]
    assert all(math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0, rel_tol=1e-4) for vector in vectors)
    # Meaning, not words: the paraphrase is nearer than the unrelated sentence.
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.3
    assert embedder.embed(texts[2:])[0] == pytest.approx(vectors[2], abs=1e-5)


def test_tokens_are_counted_as_the_model_reads_them(embedder: SentenceTransformerEmbedder) -> None:
    # Word pieces without [CLS] and [SEP] (max_tokens leaves room for those); an identifier costs several.
    assert embedder.count_tokens("") == 0
    assert embedder.count_tokens("hello world") == 2
    assert embedder.count_tokens("ERR-4021") > 3
    assert embedder.max_tokens == 254


def test_a_giant_word_costs_its_length_not_one_unknown_piece(embedder: SentenceTransformerEmbedder) -> None:
    # The tokenizer reads any word over 100 characters as a single [UNK]; a chunk must still stay short.
    assert embedder.count_tokens("A" * 5000) >= 500


def test_a_dimension_the_model_does_not_produce_is_refused_with_the_reason() -> None:
    mismatched = SentenceTransformerEmbedder(dimension=512)
    status = mismatched.capability()
    assert not status.available and "384" in (status.reason or "") and "512" in (status.reason or "")
    with pytest.raises(CapabilityUnavailable, match="QUIRE_EMBEDDING_DIMENSION"):
        mismatched.embed(["text"])
