"""A scripted stand-in for the answer model, for tests only: a real BedrockConverseGenerator whose real
bedrock-runtime client is answered by botocore's Stubber, turn by turn, with what a test scripts (a drafted
answer, a malformed one, prose, an error code, a timeout). Every request is validated against the service model
before it is answered, and kept, so a test can read back what reached "the model" (the fences, the rules).
Nothing reaches the network and nothing really sleeps.

    generator, model = scripted_generator(drafted(claims=[claim("Refunds take 14 days.", "E1", quote="...")]))
    draft = generator.generate("How long do refunds take?", evidence)
    assert "E1" in model.content_texts()[0]
"""

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError
from botocore.stub import Stubber

from shared.adapters.aws.bedrock_answers import TOOL_NAME, BedrockConverseGenerator
from tests.builders.aws import Delays, bedrock_client

SCRIPTED_MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0"
_ENDPOINT = "https://bedrock-runtime.us-east-1.amazonaws.com"


@dataclass(frozen=True)
class Fails:
    """A turn the service answers with an error code (ThrottlingException 429, AccessDeniedException 403, ...)."""

    code: str
    status: int = 400
    message: str = ""


@dataclass(frozen=True)
class TimesOut:
    """A turn with no answer in time: the read (ReadTimeoutError) or the connection (ConnectTimeoutError)."""

    kind: Literal["read", "connect"] = "read"


Turn = Mapping[str, Any] | Fails | TimesOut


def claim(text: str, *evidence_ids: str, quote: str = "", direct: bool = True) -> dict[str, Any]:
    """One claim as submit_answer's input carries it."""
    return {"text": text, "evidenceIds": list(evidence_ids), "quote": quote, "direct": direct}


def draft_input(
    *,
    summary: str = "",
    claims: Sequence[Mapping[str, Any]] = (),
    assumptions: Sequence[str] = (),
    needs_review: bool = False,
    unanswerable: bool = False,
) -> dict[str, Any]:
    """A submit_answer input in the requested structure."""
    return {
        "summary": summary,
        "claims": [dict(item) for item in claims],
        "assumptions": list(assumptions),
        "needsReview": needs_review,
        "unanswerable": unanswerable,
    }


def response(
    *content: Mapping[str, Any], stop_reason: str = "end_turn", input_tokens: int = 1_200, output_tokens: int = 150
) -> dict[str, Any]:
    """A Converse response (ConverseOutput, TokenUsage, ConverseMetrics) whose message is `content`."""
    return {
        "output": {"message": {"role": "assistant", "content": [dict(block) for block in content]}},
        "stopReason": stop_reason,
        "usage": {
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "totalTokens": input_tokens + output_tokens,
        },
        "metrics": {"latencyMs": 900},
    }


def tool_use(
    tool_input: Any,
    *,
    name: str = TOOL_NAME,
    stop_reason: str = "tool_use",
    input_tokens: int = 1_200,
    output_tokens: int = 150,
) -> dict[str, Any]:
    """A response calling `name` with `tool_input` as it stands (malformed if the test wants it so)."""
    block = {"toolUse": {"toolUseId": "tooluse_scripted01", "name": name, "input": tool_input}}
    return response(block, stop_reason=stop_reason, input_tokens=input_tokens, output_tokens=output_tokens)


def drafted(
    *,
    summary: str = "",
    claims: Sequence[Mapping[str, Any]] = (),
    assumptions: Sequence[str] = (),
    needs_review: bool = False,
    unanswerable: bool = False,
    input_tokens: int = 1_200,
    output_tokens: int = 150,
) -> dict[str, Any]:
    """A response submitting this draft, well formed."""
    return tool_use(
        draft_input(
            summary=summary,
            claims=claims,
            assumptions=assumptions,
            needs_review=needs_review,
            unanswerable=unanswerable,
        ),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


def prose(text: str, *, stop_reason: str = "end_turn") -> dict[str, Any]:
    """A response that ignored the tool and wrote text."""
    return response({"text": text}, stop_reason=stop_reason)


class ScriptedConverse:
    """The model at the Converse boundary, scripted: each call takes the next turn, in order; `requests` holds
    every request the generator sent, as it passed it to the client."""

    def __init__(self, *turns: Turn) -> None:
        self.client = bedrock_client()
        self.requests: list[dict[str, Any]] = []
        self.delays = Delays()
        self._turns: deque[Turn] = deque()
        self.stub = Stubber(self.client)
        events = self.client.meta.events
        events.register("before-parameter-build.bedrock-runtime.Converse", self._record)
        self.stub.activate()
        # After the Stubber answered (a timeout turn's answer is a placeholder): a timeout turn raises here.
        events.register("after-call.bedrock-runtime.Converse", self._take_turn)
        self.then(*turns)

    def then(self, *turns: Turn) -> "ScriptedConverse":
        for turn in turns:
            if isinstance(turn, Fails):
                self.stub.add_client_error(
                    "converse", service_error_code=turn.code, service_message=turn.message, http_status_code=turn.status
                )
            elif isinstance(turn, Mapping):
                self.stub.add_response("converse", dict(turn))
            else:
                # The Stubber needs an answer queued for every call; this one is never returned.
                self.stub.add_response("converse", response())
            self._turns.append(turn)
        return self

    def generator(self, **kwargs: Any) -> BedrockConverseGenerator:
        """The real adapter over this client: no real sleeping, back-off at its ceiling (so delays are exact)."""
        options: dict[str, Any] = {"model_id": SCRIPTED_MODEL, "sleep": self.delays, "random": lambda: 1.0}
        return BedrockConverseGenerator(self.client, **(options | kwargs))

    @property
    def last_request(self) -> dict[str, Any]:
        assert self.requests, "the generator sent the scripted model nothing"
        return self.requests[-1]

    def system_texts(self, request: Mapping[str, Any] | None = None) -> list[str]:
        """The system prompt's text blocks of `request` (the last one sent by default)."""
        return [block["text"] for block in (request or self.last_request)["system"]]

    def content_texts(self, request: Mapping[str, Any] | None = None) -> list[str]:
        """The text blocks of the user message of `request` (the last one sent by default), in order."""
        [message] = (request or self.last_request)["messages"]
        return [block["text"] for block in message["content"]]

    def assert_all_taken(self) -> None:
        assert not self._turns, f"{len(self._turns)} scripted turns were never taken"
        self.stub.assert_no_pending_responses()

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.requests.append(params)

    def _take_turn(self, **_: Any) -> None:
        assert self._turns, "the scripted model has no turn left for this call"
        turn = self._turns.popleft()
        if isinstance(turn, TimesOut):
            if turn.kind == "connect":
                raise ConnectTimeoutError(endpoint_url=_ENDPOINT)
            raise ReadTimeoutError(endpoint_url=_ENDPOINT)


def scripted_generator(*turns: Turn, **generator_options: Any) -> tuple[BedrockConverseGenerator, ScriptedConverse]:
    """A BedrockConverseGenerator whose model answers with `turns`, and the script (its requests, its delays)."""
    model = ScriptedConverse(*turns)
    return model.generator(**generator_options), model
