"""BedrockTitanEmbedder against a real bedrock-runtime client whose calls botocore's Stubber answers."""

import io
import json
import math
import threading
import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from shared.adapters.aws.bedrock_embeddings import BedrockTitanEmbedder
from shared.domain.errors import CapabilityUnavailable, EmbeddingFailed
from shared.ports import EmbeddingProvider
from tests.builders.aws import Delays, bedrock_client

MODEL = "amazon.titan-embed-text-v2:0"


def embedder(
    client: Any, *, dimension: int = 256, delays: Delays | None = None, jitter: float = 1.0, **kwargs: Any
) -> BedrockTitanEmbedder:
    return BedrockTitanEmbedder(
        client, dimension=dimension, sleep=delays or Delays(), random=lambda: jitter, concurrency=1, **kwargs
    )


def one_hot(position: int, dimension: int = 256) -> list[float]:
    return [1.0 if i == position else 0.0 for i in range(dimension)]


def titan_answer(vector: list[float], tokens: int = 3) -> dict[str, Any]:
    """An InvokeModel response carrying a V2 body as documented."""
    payload = json.dumps(
        {"embedding": vector, "inputTextTokenCount": tokens, "embeddingsByType": {"float": vector}}
    ).encode()
    return {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"}


def expected_call(text: str, dimension: int = 256) -> dict[str, Any]:
    body = json.dumps({"inputText": text, "dimensions": dimension, "normalize": True, "embeddingTypes": ["float"]})
    return {"modelId": MODEL, "body": body.encode(), "contentType": "application/json", "accept": "application/json"}


def test_the_request_is_the_documented_v2_body_sent_as_json() -> None:
    client = bedrock_client()
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "before-parameter-build.bedrock-runtime.InvokeModel", lambda params, **_: sent.append(dict(params))
    )
    stub = Stubber(client)
    stub.add_response(
        "invoke_model",
        titan_answer(one_hot(0, 512)),
        {"modelId": MODEL, "body": ANY, "contentType": "application/json", "accept": "application/json"},
    )
    with stub:
        embedder(client, dimension=512).embed(["Quarterly revenue grew 12 percent."])
    stub.assert_no_pending_responses()
    assert len(sent) == 1
    assert json.loads(sent[0]["body"]) == {
        "inputText": "Quarterly revenue grew 12 percent.",
        "dimensions": 512,
        "normalize": True,
        "embeddingTypes": ["float"],
    }


def test_vectors_come_back_parsed_and_in_input_order() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    texts = ["alpha", "beta", "gamma"]
    for position, text in enumerate(texts):
        stub.add_response("invoke_model", titan_answer(one_hot(position)), expected_call(text))
    with stub:
        vectors = embedder(client).embed(texts)
    stub.assert_no_pending_responses()
    assert [vector.index(1.0) for vector in vectors] == [0, 1, 2]
    assert all(len(vector) == 256 for vector in vectors)


def test_the_embeddings_by_type_float_list_is_used_when_embedding_is_absent() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    payload = json.dumps({"inputTextTokenCount": 1, "embeddingsByType": {"float": one_hot(7)}}).encode()
    stub.add_response(
        "invoke_model",
        {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"},
        expected_call("x"),
    )
    with stub:
        assert embedder(client).embed(["x"])[0].index(1.0) == 7


def test_a_vector_that_is_not_unit_length_is_renormalised() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_response("invoke_model", titan_answer([3.0, 4.0] + [0.0] * 254), expected_call("x"))
    with stub:
        [vector] = embedder(client).embed(["x"])
    assert vector[:2] == pytest.approx([0.6, 0.8])
    assert math.fsum(v * v for v in vector) == pytest.approx(1.0)


def test_an_empty_batch_makes_no_call() -> None:
    client = bedrock_client()
    with Stubber(client):  # any call would raise UnStubbedResponseError
        assert embedder(client).embed([]) == []


def test_a_vector_of_the_wrong_dimension_is_refused_naming_both_numbers() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_response("invoke_model", titan_answer(one_hot(0, 1024)), expected_call("x", 512))
    with stub, pytest.raises(EmbeddingFailed, match=r"1024.*512"):
        embedder(client, dimension=512).embed(["x"])


def test_throttling_is_retried_with_growing_jittered_delays_then_succeeds() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
    stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
    stub.add_response("invoke_model", titan_answer(one_hot(3)), expected_call("x"))
    delays = Delays()
    with stub:
        [vector] = embedder(client, delays=delays).embed(["x"])
    stub.assert_no_pending_responses()
    assert vector.index(1.0) == 3
    # random() at its upper end gives the ceiling itself: 0.2 s, then twice that.
    assert delays.asked == pytest.approx([0.2, 0.4])


def test_full_jitter_scales_each_delay_by_the_random_draw() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_client_error("invoke_model", service_error_code="ServiceUnavailableException", http_status_code=503)
    stub.add_client_error("invoke_model", service_error_code="ModelNotReadyException", http_status_code=429)
    stub.add_response("invoke_model", titan_answer(one_hot(0)), expected_call("x"))
    delays = Delays()
    with stub:
        embedder(client, delays=delays, jitter=0.25).embed(["x"])
    assert delays.asked == pytest.approx([0.05, 0.1])


def test_throttling_past_max_attempts_fails_after_capped_delays() -> None:
    client = bedrock_client()
    stub = Stubber(client)
    for _ in range(9):
        stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
    delays = Delays()
    with stub, pytest.raises(EmbeddingFailed, match=r"throttled/unavailable after 9 attempts"):
        embedder(client, delays=delays, max_attempts=9).embed(["x"])
    stub.assert_no_pending_responses()
    # Eight pauses between nine calls: doubling from 0.2 s until the 10 s cap holds them.
    assert delays.asked == pytest.approx([0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10.0, 10.0])


def test_a_validation_error_is_not_retried_and_names_the_text_with_aws_words_only_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_response("invoke_model", titan_answer(one_hot(0)), expected_call("fine"))
    stub.add_client_error(
        "invoke_model",
        service_error_code="ValidationException",
        service_message="Too many tokens",
        http_status_code=400,
    )
    delays = Delays()
    with stub, pytest.raises(EmbeddingFailed) as raised:
        embedder(client, delays=delays).embed(["fine", "too long"])
    assert str(raised.value) == f"{MODEL} refused text 1 (ValidationException)"
    assert "Too many tokens" in caplog.text
    stub.assert_no_pending_responses()
    assert delays.asked == []


@pytest.mark.parametrize("code", ["AccessDeniedException", "ResourceNotFoundException"])
def test_a_model_without_access_makes_the_embedder_unavailable_and_logs_the_fix(
    code: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = bedrock_client()
    stub = Stubber(client)
    stub.add_client_error("invoke_model", service_error_code=code, http_status_code=403)
    delays = Delays()
    with stub, pytest.raises(CapabilityUnavailable) as raised:
        embedder(client, delays=delays).embed(["x"])
    assert raised.value.capability == "embedder"
    # The reason reaches API callers: no IAM action, no region; the console step is the operator's, in the log.
    assert raised.value.reason == (
        f"the embedding model {MODEL} is not enabled for this deployment: an operator must enable access to it"
        " (the cause is in the function's log)"
    )
    assert "Enable model access" in caplog.text and "bedrock:InvokeModel" in caplog.text and "us-east-1" in caplog.text
    assert delays.asked == []


def test_a_text_over_the_character_limit_is_refused_before_any_call() -> None:
    client = bedrock_client()
    with Stubber(client), pytest.raises(EmbeddingFailed, match=r"text 1 .*50,000"):
        embedder(client).embed(["short", "x" * 50_001])


@pytest.mark.parametrize("dimension", [0, 128, 384, 768, 1536])
def test_a_dimension_titan_does_not_offer_is_refused(dimension: int) -> None:
    with pytest.raises(ValueError, match=r"256, 512, 1024") as raised:
        BedrockTitanEmbedder(bedrock_client(), dimension=dimension)
    assert "QUIRE_EMBEDDING_DIMENSION" in str(raised.value)


def test_the_model_id_names_the_dimension_and_the_capability_is_ready() -> None:
    provider: EmbeddingProvider = BedrockTitanEmbedder(bedrock_client(), dimension=512)
    assert provider.model_id == "amazon.titan-embed-text-v2:0@512"
    assert provider.dimension == 512
    assert provider.max_tokens == 8192
    status = provider.capability()
    assert status.available
    assert status.provider == "bedrock:amazon.titan-embed-text-v2:0@512"


def test_from_region_builds_its_client_on_first_use_with_sdk_retries_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    built: list[Any] = []
    real_client = boto3.client

    def stubbed_client(*args: Any, **kwargs: Any) -> Any:
        client = real_client(*args, **kwargs)
        stub = Stubber(client)
        stub.add_response("invoke_model", titan_answer(one_hot(9, 1024)), expected_call("hello", 1024))
        stub.activate()
        built.append(client)
        return client

    monkeypatch.setattr(boto3, "client", stubbed_client)
    provider = BedrockTitanEmbedder.from_region("eu-west-1", dimension=1024, concurrency=16)
    assert provider.embed([]) == []
    assert built == []  # nothing embedded yet, no client built
    [vector] = provider.embed(["hello"])
    assert vector.index(1.0) == 9
    [client] = built
    assert client.meta.region_name == "eu-west-1"
    assert client.meta.config.retries["total_max_attempts"] == 1
    assert client.meta.config.max_pool_connections >= 16


class FakeBedrock:
    """A thread-safe stand-in for the client: answers each text with a one-hot vector at the number it holds.

    Calls wait at a barrier of `concurrency` parties, so the batch only completes if that many calls are
    truly in flight together; lower numbers sleep longer, so answers arrive out of input order.
    """

    def __init__(self, concurrency: int) -> None:
        self.barrier = threading.Barrier(concurrency, timeout=5)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.finished: list[int] = []

    def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
        number = int(json.loads(kwargs["body"])["inputText"])
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            self.barrier.wait()
            time.sleep(0.02 * (4 - number % 4))
        finally:
            with self.lock:
                self.in_flight -= 1
                self.finished.append(number)
        return titan_answer(one_hot(number))


def test_concurrent_calls_are_bounded_and_results_keep_input_order() -> None:
    fake = FakeBedrock(concurrency=4)
    provider = BedrockTitanEmbedder(fake, dimension=256, concurrency=4, sleep=Delays(), random=lambda: 1.0)  # type: ignore[arg-type]
    vectors = provider.embed([str(n) for n in range(8)])
    assert [vector.index(1.0) for vector in vectors] == list(range(8))
    assert fake.most_in_flight == 4
    assert fake.finished != sorted(fake.finished)  # answers really did arrive out of order


class TimesOutOnce:
    def __init__(self) -> None:
        self.calls = 0
        self.meta = bedrock_client().meta

    def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
        self.calls += 1
        if self.calls == 1:
            raise ReadTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")
        return titan_answer(one_hot(1))


def test_a_read_timeout_is_retried() -> None:
    fake = TimesOutOnce()
    delays = Delays()
    [vector] = embedder(fake, delays=delays).embed(["x"])
    assert vector.index(1.0) == 1
    assert fake.calls == 2
    assert delays.asked == pytest.approx([0.2])


def refusal(code: str, message: str = "refused") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "InvokeModel")


class RefusesFive:
    def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
        if json.loads(kwargs["body"])["inputText"] == "5":
            raise refusal("ValidationException")
        return titan_answer(one_hot(0))


def test_a_failure_under_concurrency_is_reported_with_its_own_index() -> None:
    provider = BedrockTitanEmbedder(RefusesFive(), dimension=256, concurrency=3, sleep=Delays(), random=lambda: 1.0)  # type: ignore[arg-type]
    with pytest.raises(EmbeddingFailed, match=r"text 5\b"):
        provider.embed([str(n) for n in range(10)])


class ThrottlesZeroRefusesOne:
    """Text 0 is throttled; text 1 is refused once text 0 has been tried (so the order is fixed)."""

    def __init__(self) -> None:
        self.zero_tried = threading.Event()
        self.calls = {"0": 0, "1": 0}

    def invoke_model(self, **kwargs: Any) -> dict[str, Any]:
        text = json.loads(kwargs["body"])["inputText"]
        self.calls[text] += 1
        if text == "0":
            self.zero_tried.set()
            raise refusal("ThrottlingException")
        assert self.zero_tried.wait(timeout=5)
        raise refusal("ValidationException", "Malformed input request")


def test_a_refusal_stops_the_other_texts_retries_and_is_the_error_reported() -> None:
    fake = ThrottlesZeroRefusesOne()
    # A real (short) pause: the refusal of text 1 lands while text 0 waits to retry.
    provider = BedrockTitanEmbedder(
        fake,  # type: ignore[arg-type]
        dimension=256,
        concurrency=2,
        sleep=lambda _: time.sleep(0.2),
        random=lambda: 1.0,
    )
    with pytest.raises(EmbeddingFailed, match=r"text 1\b"):
        provider.embed(["0", "1"])
    assert fake.calls == {"0": 1, "1": 1}


ENGLISH = [
    "The quick brown fox jumps over the lazy dog.",
    "Invoices issued after 1 March 2025 are payable within 30 days, net of VAT (20%).",
    "See https://example.com/docs/v2/api?query=embeddings&limit=10 for details.",
    "def count_tokens(self, text: str) -> int: return max(by_bytes, by_pieces)",
    "a, b, c, d, e; f: g! h? i.",
    "x = a + b * c - d / e",
    "Call 555-0100 or 555-0199 between 9 and 5.",
]


@pytest.mark.parametrize("text", ENGLISH)
def test_the_token_estimate_is_at_least_a_word_count_and_the_documented_average(text: str) -> None:
    provider = BedrockTitanEmbedder(bedrock_client(), dimension=256)
    estimate = provider.count_tokens(text)
    assert estimate >= len(text.split())
    # AWS documents 4.7 characters per token on average for English: an upper estimate must not be below it.
    assert estimate >= len(text) / 4.7


def test_the_token_estimate_never_shrinks_as_text_grows() -> None:
    provider = BedrockTitanEmbedder(bedrock_client(), dimension=256)
    text = " ".join(ENGLISH)
    counts = [provider.count_tokens(text[:end]) for end in range(len(text) + 1)]
    assert counts == sorted(counts)
    assert counts[0] == 0
    assert counts[-1] > counts[len(counts) // 2]
