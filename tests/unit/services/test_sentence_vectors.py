"""The sentence vector cache (shared/services/sentence_vectors.py): misses embedded in one call, hits never
embedded again, keys per tenant and model, bounded in entries and bytes."""

from collections.abc import Sequence

import pytest

from shared.services.sentence_vectors import ENTRY_OVERHEAD_BYTES, SentenceVectors
from tests.unit.retrieval_fakes import FakeEmbedder


class FakeRecordingEmbedder(FakeEmbedder):
    """A vector per text that depends on the text (and on whether it is embedded as a query), and every call
    recorded."""

    def __init__(self, model_id: str = "fake") -> None:
        super().__init__()
        self.model_id = model_id
        self.calls: list[tuple[str, list[str]]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(("embed", list(texts)))
        return [[float(len(text)), 1.0, 0.0] for text in texts]

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        self.calls.append(("query", list(questions)))
        return [[float(len(text)), 0.0, 1.0] for text in questions]


def test_misses_are_embedded_in_one_call_and_hits_never_again() -> None:
    cache, embedder = SentenceVectors(), FakeRecordingEmbedder()
    first = cache.sentences("t1", embedder, ["one sentence.", "another, longer sentence."])
    second = cache.sentences("t1", embedder, ["another, longer sentence.", "a third.", "one sentence."])
    assert embedder.calls == [
        ("embed", ["one sentence.", "another, longer sentence."]),
        ("embed", ["a third."]),
    ]
    assert second == [first[1], [8.0, 1.0, 0.0], first[0]]
    assert (cache.hits, cache.misses) == (2, 3)


def test_a_text_twice_in_one_call_is_embedded_once() -> None:
    cache, embedder = SentenceVectors(), FakeRecordingEmbedder()
    vectors = cache.sentences("t1", embedder, ["same.", "other.", "same."])
    assert embedder.calls == [("embed", ["same.", "other."])]
    assert vectors[0] == vectors[2] != vectors[1]


def test_a_question_is_embedded_as_a_query_and_kept_apart_from_the_same_text_as_a_sentence() -> None:
    cache, embedder = SentenceVectors(), FakeRecordingEmbedder()
    asked = cache.question("t1", embedder, "Who won?")
    quoted = cache.sentences("t1", embedder, ["Who won?"])[0]
    assert asked == [8.0, 0.0, 1.0] and quoted == [8.0, 1.0, 0.0]
    assert cache.question("t1", embedder, "Who won?") == asked
    assert embedder.calls == [("query", ["Who won?"]), ("embed", ["Who won?"])]


def test_another_tenant_or_another_model_never_reads_a_cached_vector() -> None:
    cache, embedder, other_model = SentenceVectors(), FakeRecordingEmbedder(), FakeRecordingEmbedder("other")
    cache.sentences("t1", embedder, ["The fee is due in March."])
    cache.sentences("t2", embedder, ["The fee is due in March."])
    cache.sentences("t1", other_model, ["The fee is due in March."])
    assert len(embedder.calls) == 2 and len(other_model.calls) == 1
    assert len(cache) == 3


def test_the_least_recently_used_vector_goes_first_when_the_entries_are_full() -> None:
    cache, embedder = SentenceVectors(max_entries=2), FakeRecordingEmbedder()
    cache.sentences("t1", embedder, ["first sentence.", "second sentence."])
    cache.sentences("t1", embedder, ["first sentence."])  # used again: the second is now the oldest
    cache.sentences("t1", embedder, ["third sentence."])
    assert len(cache) == 2
    embedder.calls.clear()
    cache.sentences("t1", embedder, ["first sentence.", "third sentence.", "second sentence."])
    assert embedder.calls == [("embed", ["second sentence."])]


def test_the_bytes_held_stay_within_the_bound() -> None:
    entry = 3 * 8 + ENTRY_OVERHEAD_BYTES  # three float64s and the entry's own cost
    cache, embedder = SentenceVectors(max_bytes=2 * entry + 1), FakeRecordingEmbedder()
    cache.sentences("t1", embedder, [f"sentence number {number}." for number in range(5)])
    assert len(cache) == 2 and cache.size_bytes == 2 * entry
    cache.clear()
    assert len(cache) == 0 and cache.size_bytes == 0


def test_a_cache_of_no_entries_embeds_every_time_and_a_negative_bound_is_refused() -> None:
    cache, embedder = SentenceVectors(max_entries=0), FakeRecordingEmbedder()
    cache.sentences("t1", embedder, ["again."])
    cache.sentences("t1", embedder, ["again."])
    assert len(embedder.calls) == 2 and len(cache) == 0
    with pytest.raises(ValueError, match="cannot be negative"):
        SentenceVectors(max_bytes=-1)
