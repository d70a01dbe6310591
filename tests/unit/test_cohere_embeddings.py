"""BedrockCohereEmbedder against a real bedrock-runtime client whose calls botocore's Stubber answers, and the setting
that chooses between it and Titan."""

import io
import json
import threading
from typing import Any

import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from shared.adapters.aws.bedrock_embeddings import BedrockTitanEmbedder
from shared.adapters.aws.cohere_embeddings import BedrockCohereEmbedder
from shared.bootstrap import ConfigurationError, Container
from shared.config import Settings
from shared.domain.errors import CapabilityUnavailable, EmbeddingFailed
from shared.ports import EmbeddingProvider
from tests.builders.aws import Delays, bedrock_client

MODEL = "cohere.embed-multilingual-v3"
DIMENSION = 1024


def embedder(client: Any, *, delays: Delays | None = None, jitter: float = 1.0, **kwargs: Any) -> BedrockCohereEmbedder:
    return BedrockCohereEmbedder(client, sleep=delays or Delays(), random=lambda: jitter, concurrency=1, **kwargs)


def one_hot(position: int) -> list[float]:
    return [1.0 if i == position else 0.0 for i in range(DIMENSION)]


def cohere_answer(vectors: list[list[float]], texts: list[str], *, by_type: bool = True) -> dict[str, Any]:
    """An InvokeModel response carrying an Embed v3 body as documented: keyed by type when types were asked for."""
    embeddings: object = {"float": vectors} if by_type else vectors
    payload = json.dumps(
        {
            "id": "5e3e2c8a-0000-4000-8000-000000000000",
            "response_type": "embeddings_by_type" if by_type else "embeddings_floats",
            "embeddings": embeddings,
            "texts": texts,
        }
    ).encode()
    return {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"}


def invoke_params() -> dict[str, Any]:
    return {"modelId": MODEL, "body": ANY, "contentType": "application/json", "accept": "application/json"}


def recording(client: Any) -> list[dict[str, Any]]:
    """The JSON bodies the client sends, in order."""
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "before-parameter-build.bedrock-runtime.InvokeModel",
        lambda params, **_: sent.append(json.loads(params["body"])),
    )
    return sent


def test_chunks_are_sent_as_search_documents_never_truncated() -> None:
    client = bedrock_client()
    sent = recording(client)
    stub = Stubber(client)
    texts = ["Quarterly revenue grew 12 percent.", "Le chiffre d'affaires a augmenté."]
    stub.add_response("invoke_model", cohere_answer([one_hot(0), one_hot(1)], texts), invoke_params())
    with stub:
        vectors = embedder(client).embed(texts)
    stub.assert_no_pending_responses()
    assert sent == [{"texts": texts, "input_type": "search_document", "truncate": "NONE", "embedding_types": ["float"]}]
    assert [vector.index(1.0) for vector in vectors] == [0, 1]


def test_questions_are_sent_as_search_queries() -> None:
    client = bedrock_client()
    sent = recording(client)
    stub = Stubber(client)
    stub.add_response("invoke_model", cohere_answer([one_hot(5)], ["¿Cuándo vence la factura?"]), invoke_params())
    with stub:
        [vector] = embedder(client).embed_queries(["¿Cuándo vence la factura?"])
    assert sent == [
        {
            "texts": ["¿Cuándo vence la factura?"],
            "input_type": "search_query",
            "truncate": "END",
            "embedding_types": ["float"],
        }
    ]
    assert vector.index(1.0) == 5


def test_a_plain_list_of_vectors_is_read_too() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_response("invoke_model", cohere_answer([one_hot(3)], ["x"], by_type=False), invoke_params())
    with stub:
        assert embedder(client).embed(["x"])[0].index(1.0) == 3


def test_more_than_96_texts_go_in_calls_of_96_and_come_back_in_input_order() -> None:
    client = bedrock_client()
    sent = recording(client)
    stub = Stubber(client)
    texts = [f"text number {n}" for n in range(200)]
    for start, end in ((0, 96), (96, 192), (192, 200)):
        stub.add_response(
            "invoke_model",
            cohere_answer([one_hot(n) for n in range(start, end)], texts[start:end]),
            invoke_params(),
        )
    with stub:
        vectors = embedder(client).embed(texts)
    stub.assert_no_pending_responses()
    assert [len(body["texts"]) for body in sent] == [96, 96, 8]
    assert [text for body in sent for text in body["texts"]] == texts
    assert [vector.index(1.0) for vector in vectors] == list(range(200))


class SlowFirstBatch:
    """Answers each call with one-hot vectors at the numbers its texts hold; the first call (texts 0..95) waits until
    the second has answered, so the batches finish out of order and only run together."""

    def __init__(self) -> None:
        self.second_answered = threading.Event()
        self.calls = 0
        self.lock = threading.Lock()

    def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
        texts = json.loads(kwargs["body"])["texts"]
        with self.lock:
            self.calls += 1
        numbers = [int(text) for text in texts]
        if numbers[0] == 0:
            assert self.second_answered.wait(timeout=5)
        answer = cohere_answer([one_hot(n) for n in numbers], texts)
        if numbers[0] != 0:
            self.second_answered.set()
        return answer


def test_batches_run_concurrently_and_keep_input_order() -> None:
    fake = SlowFirstBatch()
    provider = BedrockCohereEmbedder(fake, concurrency=2, sleep=Delays(), random=lambda: 1.0)  # type: ignore[arg-type]
    vectors = provider.embed([str(n) for n in range(150)])
    assert fake.calls == 2
    assert [vector.index(1.0) for vector in vectors] == list(range(150))


def test_throttling_is_retried_with_the_titan_adapters_back_off() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
    stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
    stub.add_response("invoke_model", cohere_answer([one_hot(2)], ["x"]), invoke_params())
    delays = Delays()
    with stub:
        [vector] = embedder(client, delays=delays).embed(["x"])
    stub.assert_no_pending_responses()
    assert vector.index(1.0) == 2
    assert delays.asked == pytest.approx([0.2, 0.4])


def test_throttling_past_max_attempts_names_the_batch() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    for _ in range(3):
        stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
    with stub, pytest.raises(EmbeddingFailed, match=r"throttled/unavailable after 3 attempts at texts 0 to 1\b"):
        embedder(client, max_attempts=3).embed(["a", "b"])
    stub.assert_no_pending_responses()


def test_a_text_over_2048_characters_is_refused_before_any_call_never_cut() -> None:
    client = bedrock_client()
    with Stubber(client), pytest.raises(EmbeddingFailed, match=r"text 1 has 2,049 characters: .* at most 2,048"):
        embedder(client).embed(["short", "x" * 2049])
    with Stubber(client), pytest.raises(EmbeddingFailed, match=r"text 0 has 2,049 characters"):
        embedder(client).embed_queries(["x" * 2049])


def test_a_text_of_exactly_2048_characters_is_sent() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_response("invoke_model", cohere_answer([one_hot(0)], ["x" * 2048]), invoke_params())
    with stub:
        assert len(embedder(client).embed(["x" * 2048])) == 1


def test_a_refusal_names_the_batch_and_is_not_retried() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_client_error("invoke_model", service_error_code="ValidationException", http_status_code=400)
    delays = Delays()
    with stub, pytest.raises(EmbeddingFailed) as raised:
        embedder(client, delays=delays).embed(["a", "b", "c"])
    assert str(raised.value) == f"{MODEL} refused texts 0 to 2 (ValidationException)"
    assert delays.asked == []


@pytest.mark.parametrize("code", ["AccessDeniedException", "ResourceNotFoundException"])
def test_a_model_without_access_makes_the_embedder_unavailable(code: str, caplog: pytest.LogCaptureFixture) -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_client_error("invoke_model", service_error_code=code, http_status_code=403)
    delays = Delays()
    with stub, pytest.raises(CapabilityUnavailable) as raised:
        embedder(client, delays=delays).embed_queries(["x"])
    assert raised.value.capability == "embedder"
    assert raised.value.reason == (
        f"the embedding model {MODEL} is not enabled for this deployment: an operator must enable access to it"
        " (the cause is in the function's log)"
    )
    assert "bedrock:InvokeModel" in caplog.text
    assert delays.asked == []


def test_an_answer_with_fewer_vectors_than_texts_is_refused() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_response("invoke_model", cohere_answer([one_hot(0)], ["a"]), invoke_params())
    with stub, pytest.raises(EmbeddingFailed, match=r"texts 0 to 1 with 1 float embeddings for 2 texts"):
        embedder(client).embed(["a", "b"])


def test_a_vector_of_another_dimension_is_refused_naming_the_text() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_response("invoke_model", cohere_answer([one_hot(0), [1.0] * 384], ["a", "b"]), invoke_params())
    with stub, pytest.raises(EmbeddingFailed, match=r"text 1 with 384 dimensions where 1024"):
        embedder(client).embed(["a", "b"])


@pytest.mark.parametrize("dimension", [256, 384, 512, 1536])
def test_a_dimension_other_than_1024_is_refused_naming_the_setting(dimension: int) -> None:
    with pytest.raises(ValueError, match=r"1024 dimensions only") as raised:
        BedrockCohereEmbedder(bedrock_client(), dimension=dimension)
    assert "QUIRE_EMBEDDING_DIMENSION must be 1024" in str(raised.value)


def test_the_model_declares_its_id_limits_and_languages() -> None:
    provider: EmbeddingProvider = BedrockCohereEmbedder(bedrock_client())
    assert provider.model_id == "cohere.embed-multilingual-v3@1024"
    assert provider.dimension == 1024
    assert provider.languages is None
    # The model reads 512 tokens, its special tokens among them.
    assert 480 <= provider.max_tokens < 512
    assert provider.capability().provider == "bedrock:cohere.embed-multilingual-v3@1024"
    usage = provider.usage(1200)
    assert (usage.operation, usage.model, usage.priced, usage.input_tokens) == (
        "bedrock:InvokeModel",
        "cohere.embed-multilingual-v3@1024",
        True,
        1200,
    )


@pytest.mark.parametrize(
    "text",
    [
        "Invoices issued after 1 March 2025 are payable within 30 days, net of VAT (20%).",
        "Les factures émises après le 1er mars 2025 sont payables sous 30 jours.",
        "請求書は30日以内にお支払いください。",
        "Счета-фактуры оплачиваются в течение 30 дней.",
    ],
)
def test_the_token_estimate_is_at_least_the_documented_four_characters_a_token(text: str) -> None:
    provider = BedrockCohereEmbedder(bedrock_client())
    assert provider.count_tokens(text) >= len(text) / 4
    assert provider.count_tokens(text) >= len(text.split())


def test_a_chunk_within_max_tokens_is_within_the_character_limit() -> None:
    # The chunker keeps a chunk within max_tokens by count_tokens: the estimate must keep it under 2,048 characters
    # in any script, so the adapter's refusal of longer texts never meets a chunk.
    provider = BedrockCohereEmbedder(bedrock_client())
    for piece in ("a", "é", "語", "😀", "a1."):
        text = piece
        while provider.count_tokens(text + piece) <= provider.max_tokens:
            text += piece
        assert len(text) <= 2048, piece


def aws(**settings: Any) -> Container:
    return Container(Settings(runtime="aws", **settings))


def test_the_setting_chooses_cohere_or_titan() -> None:
    cohere = aws(bedrock_embedding_model_id=MODEL, embedding_dimension=1024).embedder
    titan = aws(bedrock_embedding_model_id="amazon.titan-embed-text-v2:0", embedding_dimension=512).embedder
    assert isinstance(cohere, BedrockCohereEmbedder) and cohere.model_id == "cohere.embed-multilingual-v3@1024"
    assert isinstance(titan, BedrockTitanEmbedder) and titan.model_id == "amazon.titan-embed-text-v2:0@512"


@pytest.mark.parametrize("model_id", ["cohere.embed-english-v3", "amazon.titan-embed-text-v1", "cohere.embed-v4:0", ""])
def test_another_model_is_refused_naming_the_setting_and_the_two_it_takes(model_id: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        _ = aws(bedrock_embedding_model_id=model_id, embedding_dimension=1024).embedder
    message = str(raised.value)
    assert "QUIRE_BEDROCK_EMBEDDING_MODEL_ID" in message and repr(model_id) in message
    assert "amazon.titan-embed-text-v2:0" in message and "cohere.embed-multilingual-v3" in message


def test_cohere_with_a_dimension_it_does_not_give_is_unavailable_and_says_which_it_does() -> None:
    provider = aws(bedrock_embedding_model_id=MODEL, embedding_dimension=512).embedder
    status = provider.capability()
    assert not status.available
    assert "1024" in (status.reason or "") and "QUIRE_EMBEDDING_DIMENSION" in (status.reason or "")
    with pytest.raises(CapabilityUnavailable, match="embedder"):
        provider.embed(["text"])
