"""ConverseCall, the one Converse caller of the model adapters, against a scripted model (a real bedrock-runtime
client answered by botocore's Stubber, tests/scripted_converse.py) and a named fake for dropped connections.
Nothing reaches the network and nothing really sleeps."""

import logging
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError
from botocore.loaders import Loader
from botocore.model import ServiceModel

from shared.adapters.aws.bedrock_answers import BedrockConverseGenerator
from shared.adapters.aws.bedrock_situations import BedrockConverseSituator
from shared.adapters.aws.bedrock_summaries import BedrockConverseSummarizer
from shared.adapters.aws.converse import (
    NOT_ENABLED_CODES,
    RETRYABLE_CODES,
    WITHHELD_STOP_REASONS,
    ConverseCall,
    ConverseModel,
    ModelTask,
)
from shared.adapters.aws.retrying import Backoff
from shared.domain.capabilities import Capability
from shared.domain.errors import CapabilityUnavailable
from tests.builders.aws import Delays, bedrock_client
from tests.scripted_converse import SCRIPTED_MODEL, Fails, ScriptedConverse, TimesOut, prose

TASK = ModelTask(
    role="answer",
    task="draft the answer",
    doing="drafting the answer",
    result="an answer",
    invalid_because="a model that does not take a forced tool",
)
REQUEST = {"modelId": SCRIPTED_MODEL, "messages": [{"role": "user", "content": [{"text": "Hello."}]}]}
ANSWER = prose("Hello to you.")


class Clock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def in_request(model: ScriptedConverse, **options: Any) -> ConverseCall:
    """A call as the answer generator makes it: a 6 s window, every failure CapabilityUnavailable."""
    settings: dict[str, Any] = {"max_attempts": 3, "window_seconds": 6.0, "clock": Clock()} | options
    return ConverseCall(
        model.client,
        model_id=SCRIPTED_MODEL,
        capability=Capability.GENERATOR,
        task=TASK,
        backoff=Backoff(0.5, 4.0, lambda: 1.0),
        sleep=model.delays,
        **settings,
    )


def in_step(model: ScriptedConverse, **options: Any) -> ConverseCall:
    """A call as the vision adapter makes it: no window, a model still busy goes up as it came."""
    return ConverseCall(
        model.client,
        model_id=SCRIPTED_MODEL,
        capability=Capability.VISION,
        task=TASK,
        max_attempts=3,
        backoff=Backoff(0.5, 20.0, lambda: 1.0),
        sleep=model.delays,
        **options,
    )


def test_the_tables_name_codes_and_stop_reasons_the_service_model_declares() -> None:
    service = ServiceModel(Loader().load_service_model("bedrock-runtime", "service-2"))
    for operation in ("Converse", "InvokeModel"):
        errors = {shape.name for shape in service.operation_model(operation).error_shapes}
        assert errors >= RETRYABLE_CODES | NOT_ENABLED_CODES
    assert not RETRYABLE_CODES & NOT_ENABLED_CODES
    assert {"content_filtered", "guardrail_intervened"} == WITHHELD_STOP_REASONS
    stop_reasons: list[str] = service.shape_for("StopReason").metadata["enum"]
    assert set(stop_reasons) >= WITHHELD_STOP_REASONS


@pytest.mark.parametrize("code", sorted(RETRYABLE_CODES))
def test_every_retryable_code_is_retried_with_full_jitter_back_off(code: str) -> None:
    model = ScriptedConverse(Fails(code, 503), Fails(code, 503), ANSWER)

    response = in_request(model).call(REQUEST)

    assert response["output"]["message"]["content"] == [{"text": "Hello to you."}]
    assert model.delays.asked == pytest.approx([0.5, 1.0])  # ceilings of 0.5 and 1 s, the draw at its top
    model.assert_all_taken()


def test_no_answer_in_time_is_retried_too() -> None:
    model = ScriptedConverse(TimesOut("read"), TimesOut("connect"), ANSWER)

    in_request(model).call(REQUEST)

    assert len(model.requests) == 3
    model.assert_all_taken()


@pytest.mark.parametrize(
    ("turn", "sentence"),
    [
        (Fails("ThrottlingException", 429), "is throttling this deployment's requests (ThrottlingException, through"),
        (Fails("ModelNotReadyException", 429), "is not ready to serve requests yet (ModelNotReadyException, through"),
        (Fails("ModelTimeoutException", 408), "took too long to draft the answer (ModelTimeoutException, through"),
        (Fails("InternalServerException", 500), "was unavailable (InternalServerException, through 3 attempts)"),
        (TimesOut("read"), "did not answer in time (ReadTimeoutError, through 3 attempts)"),
        (TimesOut("connect"), "could not be reached in time (ConnectTimeoutError, through 3 attempts)"),
    ],
)
def test_a_model_still_failing_after_the_attempts_is_unavailable_with_its_last_failure(
    turn: Fails | TimesOut, sentence: str
) -> None:
    model = ScriptedConverse(turn, turn, turn)

    with pytest.raises(CapabilityUnavailable) as raised:
        in_request(model).call(REQUEST)

    assert raised.value.capability == "generator"
    assert raised.value.reason.startswith(f"{SCRIPTED_MODEL} ") and sentence in raised.value.reason
    model.assert_all_taken()


class DropsConnections:
    """A client whose every Converse call fails in transport with `error` (never reaching the service)."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0
        self.meta = bedrock_client().meta

    def converse(self, **request: Any) -> dict[str, Any]:
        self.calls += 1
        raise self.error


@pytest.mark.parametrize(
    ("error", "sentence"),
    [
        (EndpointConnectionError(endpoint_url="https://bedrock"), "could not be reached (EndpointConnectionError"),
        (ConnectionClosedError(endpoint_url="https://bedrock"), "did not answer (ConnectionClosedError"),
    ],
)
def test_a_connection_that_fails_every_time_is_named_in_the_sentence(error: Exception, sentence: str) -> None:
    client = DropsConnections(error)
    as_client: Any = client  # answers the one method the caller calls
    call = ConverseCall(
        as_client,
        model_id=SCRIPTED_MODEL,
        capability=Capability.SUMMARIZER,
        task=TASK,
        max_attempts=2,
        backoff=Backoff(0.5, 4.0, lambda: 1.0),
        sleep=Delays(),
        window_seconds=6.0,
    )

    with pytest.raises(CapabilityUnavailable) as raised:
        call.call(REQUEST)

    assert raised.value.capability == "summarizer"
    assert f"{sentence}, through 2 attempts)" in raised.value.reason
    assert client.calls == 2


def test_no_retry_starts_past_the_window_and_the_sentence_names_the_last_failure() -> None:
    clock = Clock()
    model = ScriptedConverse(Fails("ThrottlingException", 429), ANSWER)
    # The first attempt takes 5.8 s: a pause of 0.5 s would start the retry past the 6 s window.
    model.client.meta.events.register(
        "before-parameter-build.bedrock-runtime.Converse", lambda **_: setattr(clock, "now", clock.now + 5.8)
    )

    with pytest.raises(CapabilityUnavailable) as raised:
        in_request(model, clock=clock).call(REQUEST)

    assert raised.value.reason == (
        f"{SCRIPTED_MODEL} is throttling this deployment's requests (ThrottlingException, past the time an answer"
        " may take)"
    )
    assert isinstance(raised.value.__cause__, ClientError)
    assert len(model.requests) == 1 and model.delays.asked == []


def test_a_retry_inside_the_window_goes_ahead() -> None:
    clock = Clock()
    model = ScriptedConverse(Fails("ThrottlingException", 429), ANSWER)
    model.client.meta.events.register(
        "before-parameter-build.bedrock-runtime.Converse", lambda **_: setattr(clock, "now", clock.now + 5.0)
    )

    in_request(model, clock=clock).call(REQUEST)

    assert model.delays.asked == pytest.approx([0.5])
    model.assert_all_taken()


@pytest.mark.parametrize("code", sorted(NOT_ENABLED_CODES))
@pytest.mark.parametrize("where", [in_request, in_step])
def test_a_model_not_enabled_is_unavailable_at_once_and_the_log_says_how_to_enable_it(
    code: str, where: Any, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedConverse(Fails(code, 403, "User arn:aws:iam::123:role/x is not authorized"))

    with caplog.at_level(logging.ERROR), pytest.raises(CapabilityUnavailable) as raised:
        where(model).call(REQUEST)

    assert raised.value.reason == (
        f"the answer model {SCRIPTED_MODEL} is not enabled for this deployment: an operator must enable access to"
        " it (the cause is in the function's log)"
    )
    assert "Enable model access for it in the Amazon Bedrock console" in caplog.text
    assert "bedrock:InvokeModel" in caplog.text and "us-east-1" in caplog.text and "arn:aws:iam::123" in caplog.text
    assert len(model.requests) == 1 and model.delays.asked == []


@pytest.mark.parametrize(
    ("code", "status", "reason"),
    [
        (
            "ValidationException",
            400,
            "refused the answer request as invalid (a model that does not take a forced tool; the cause is in the"
            " function's log)",
        ),
        ("ModelErrorException", 424, "failed while drafting the answer"),
        ("ServiceQuotaExceededException", 400, "could not draft the answer (ServiceQuotaExceededException)"),
    ],
)
def test_in_a_request_a_code_no_retry_helps_is_unavailable_with_its_sentence(
    code: str, status: int, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedConverse(Fails(code, status, "the model's own words"))

    with caplog.at_level(logging.WARNING), pytest.raises(CapabilityUnavailable) as raised:
        in_request(model).call(REQUEST)

    assert raised.value.reason == f"{SCRIPTED_MODEL} {reason}"
    assert "the model's own words" in caplog.text and "the model's own words" not in raised.value.reason
    assert len(model.requests) == 1


class Refused(Exception):
    """An adapter's own error for a code it knows."""


def test_in_a_step_the_adapter_refuses_the_codes_it_knows_and_the_rest_go_up_as_they_came() -> None:
    asked: list[str] = []

    def refuse(error: ClientError) -> None:
        asked.append(error.response["Error"]["Code"])
        if error.response["Error"]["Code"] == "ValidationException":
            raise Refused

    model = ScriptedConverse(Fails("ValidationException"))
    with pytest.raises(Refused):
        in_step(model, refuse=refuse).call(REQUEST)

    model = ScriptedConverse(Fails("ModelErrorException", 424))
    with pytest.raises(ClientError) as raised:
        in_step(model, refuse=refuse).call(REQUEST)
    assert raised.value.response["Error"]["Code"] == "ModelErrorException" and model.delays.asked == []
    # Retryable and not-enabled codes are the caller's, never the adapter's.
    assert asked == ["ValidationException", "ModelErrorException"]


def test_in_a_step_a_model_still_busy_raises_its_last_error_for_the_workflow_to_retry() -> None:
    busy = Fails("ThrottlingException", 429)
    model = ScriptedConverse(busy, busy, busy)

    with pytest.raises(ClientError) as raised:
        in_step(model, refuse=lambda error: None).call(REQUEST)

    assert raised.value.response["Error"]["Code"] == "ThrottlingException"
    assert model.delays.asked == pytest.approx([0.5, 1.0])
    model.assert_all_taken()


def test_the_client_is_built_on_the_first_call_only() -> None:
    model = ScriptedConverse(ANSWER, ANSWER)
    built: list[object] = []

    def build() -> Any:
        built.append(model.client)
        return model.client

    call = ConverseCall(
        build,
        model_id=SCRIPTED_MODEL,
        capability=Capability.GENERATOR,
        task=TASK,
        max_attempts=1,
        backoff=Backoff(0.5, 4.0, lambda: 1.0),
    )
    assert built == []
    call.call(REQUEST)
    call.call(REQUEST)
    assert len(built) == 1


@pytest.mark.parametrize(
    ("adapter", "capability", "needs"),
    [
        (BedrockConverseGenerator, Capability.GENERATOR, "that takes a forced tool"),
        (BedrockConverseSituator, Capability.CHUNK_CONTEXT, "that Converse accepts"),
        (BedrockConverseSummarizer, Capability.SUMMARIZER, "that cites documents"),
    ],
)
def test_every_converse_model_adapter_is_one_converse_model_built_lazily_and_ready_without_a_call(
    adapter: type[ConverseModel], capability: Capability, needs: str
) -> None:
    # From a region: no client is built, nothing is called, and it is ready by its model's name
    built = adapter.from_region("us-east-1", SCRIPTED_MODEL)
    assert isinstance(built, ConverseModel) and built.CAPABILITY is capability
    assert built.model_id == SCRIPTED_MODEL
    assert built.capability().available and built.capability().provider == f"bedrock:{SCRIPTED_MODEL}"
    # A model it cannot call is refused by what it must be
    with pytest.raises(ValueError, match=f"model_id must name a Bedrock model or inference profile {needs}"):
        adapter(bedrock_client(), model_id="")
    # Its model's failures read as its task's
    scripted = ScriptedConverse(Fails("ValidationException"))
    with pytest.raises(CapabilityUnavailable) as refused:
        adapter(scripted.client, model_id=SCRIPTED_MODEL)._converse.call({"modelId": SCRIPTED_MODEL, "messages": []})
    assert refused.value.capability == capability.value
    assert f"refused the {adapter.TASK.role} request as invalid" in refused.value.reason
