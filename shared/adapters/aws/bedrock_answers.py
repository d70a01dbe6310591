"""The Generator on AWS: a model drafts a structured answer from fenced evidence through Bedrock Converse.

What it is told is in answer_prompt.py; the call and its retries in converse.py. What it submits is read by
SubmittedDraft, tolerant of what models commonly do and bounded; nothing in it is trusted: the answer service
validates every claim (docs/answers.md, steps 7 and 8, and "Model calls").
"""

import json
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Unpack

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from shared.adapters.aws.answer_prompt import (
    DRAFT_SCHEMA,
    INSTRUCTION,
    MAX_ASSUMPTIONS,
    MAX_CHARACTERS_SENT,
    MAX_EVIDENCE_IDS_PER_CLAIM,
    MAX_EVIDENCE_SENT,
    MAX_QUOTE_CHARACTERS,
    MAX_SUMMARY_CHARACTERS,
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    SentEvidence,
    check_evidence_ids,
    converse_request,
    evidence_to_send,
)
from shared.adapters.aws.converse import (
    WITHHELD_STOP_REASONS,
    ConverseModel,
    ConverseOptions,
    ModelTask,
    check_at_least_one,
)
from shared.domain.answers import (
    MAX_CLAIM_CHARACTERS,
    MAX_CLAIMS,
    MAX_QUESTION_CHARACTERS,
    DraftClaim,
    EvidenceBlock,
    GeneratedDraft,
)
from shared.domain.capabilities import Capability
from shared.domain.errors import GenerationFailed
from shared.domain.fencing import Fence
from shared.ports import Generator

__all__ = [
    "DRAFT_SCHEMA",
    "INSTRUCTION",
    "PROMPT_VERSION",
    "SYSTEM_PROMPT",
    "TOOL_DESCRIPTION",
    "TOOL_NAME",
    "BedrockConverseGenerator",
    "SentEvidence",
    "SubmittedDraft",
    "evidence_to_send",
]

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
    from mypy_boto3_bedrock_runtime.type_defs import ConverseResponseTypeDef
else:
    BedrockRuntimeClient = Any

ANSWER = ModelTask(
    role="answer",
    task="draft the answer",
    doing="drafting the answer",
    result="an answer",
    invalid_because="a model that does not take a forced tool, or a request too large for it",
)

_FAILED_STOP_REASONS = frozenset({"malformed_model_output", "malformed_tool_use"})
# A nested list or object sent as its JSON text is read; one this long is not.
_MAX_JSON_TEXT = 200_000


class BedrockConverseGenerator(ConverseModel, Generator):
    """Drafts one answer per Converse call to `model_id` (a model, or an inference profile containing one, that
    takes a forced tool: Anthropic Claude 3 or later, Amazon Nova). The client, retries and capability are
    ConverseModel's; `new_fence` is injected so fences can be tested.
    """

    CAPABILITY = Capability.GENERATOR
    TASK = ANSWER
    NEEDS = "that takes a forced tool"

    def __init__(
        self,
        client: "BedrockRuntimeClient | Callable[[], BedrockRuntimeClient]",
        *,
        model_id: str,
        max_evidence: int = MAX_EVIDENCE_SENT,
        max_characters: int = MAX_CHARACTERS_SENT,
        max_output_tokens: int = 2_000,
        new_fence: Callable[[], Fence] = Fence.new,
        **calls: Unpack[ConverseOptions],
    ) -> None:
        super().__init__(client, model_id=model_id, **calls)
        check_at_least_one(
            max_evidence=max_evidence, max_characters=max_characters, max_output_tokens=max_output_tokens
        )
        self._max_evidence = max_evidence
        self._max_characters = max_characters
        self._max_output_tokens = max_output_tokens
        self._new_fence = new_fence

    @property
    def prompt_version(self) -> str:
        return PROMPT_VERSION

    def generate(self, question: str, evidence: Sequence[EvidenceBlock]) -> GeneratedDraft:
        if not question.strip():
            raise ValueError("the question is empty")
        if len(question) > MAX_QUESTION_CHARACTERS:
            raise ValueError(f"the question is longer than {MAX_QUESTION_CHARACTERS} characters")
        check_evidence_ids(evidence)
        sent = evidence_to_send(evidence, max_evidence=self._max_evidence, max_characters=self._max_characters)
        if not sent.blocks:
            raise self._converse.unavailable("there is no evidence text for a model to answer from")
        return self._draft(self._converse.call(self.request(question, sent)))

    def request(self, question: str, sent: SentEvidence) -> dict[str, Any]:
        """The Converse request for this question and evidence, each fenced with a nonce drawn for it."""
        evidence_fence, question_fence = self._new_fence(), self._new_fence()
        return converse_request(
            self._model_id,
            question,
            sent,
            evidence_fence=evidence_fence,
            question_fence=question_fence,
            max_output_tokens=self._max_output_tokens,
        )

    def _draft(self, response: "ConverseResponseTypeDef") -> GeneratedDraft:
        usage = response.get("usage", {})

        def spent(reason: str) -> GenerationFailed:
            # The model answered: its tokens are billed whether or not the answer is usable.
            return GenerationFailed(
                Capability.GENERATOR.value,
                reason,
                model=self._model_id,
                input_tokens=usage.get("inputTokens", 0),
                output_tokens=usage.get("outputTokens", 0),
            )

        stop_reason = response.get("stopReason", "")
        if stop_reason in WITHHELD_STOP_REASONS:
            raise spent(f"{self._model_id} withheld its answer ({stop_reason})")
        if stop_reason in _FAILED_STOP_REASONS:
            raise spent(f"{self._model_id} did not produce a well-formed answer ({stop_reason})")
        if stop_reason == "model_context_window_exceeded":
            raise spent(f"the evidence did not fit {self._model_id}'s context window")
        if stop_reason == "max_tokens":
            # A tool input cut off at the limit is an answer the model did not finish, whatever parses of it.
            raise spent(f"{self._model_id}'s answer was cut off at its length limit ({self._max_output_tokens} tokens)")
        content = response.get("output", {}).get("message", {}).get("content", [])
        if not content:
            raise spent(f"{self._model_id} returned an empty answer")
        tool_uses = [block["toolUse"] for block in content if "toolUse" in block]
        if not tool_uses:
            _log.warning("Bedrock's answer had no toolUse block (stop reason %s)", stop_reason)
            raise spent(f"{self._model_id} answered in prose, not in the requested structure")
        tool_use = tool_uses[0]
        if tool_use.get("name") != TOOL_NAME:
            _log.warning(
                "Bedrock's answer was not a draft: it called %r, not %s", str(tool_use.get("name"))[:64], TOOL_NAME
            )
            raise spent("the model's answer was not in the requested structure")
        try:
            submitted = SubmittedDraft.model_validate(tool_use.get("input"))
        except ValidationError as error:
            _log.warning("Bedrock's answer was not a draft: %s", _where(error))
            raise spent("the model's answer was not in the requested structure") from error
        return submitted.draft(
            model=self._model_id, input_tokens=usage.get("inputTokens", 0), output_tokens=usage.get("outputTokens", 0)
        )


def _json_text(value: object) -> object:
    """Some models send a nested list or object as its JSON text."""
    if not isinstance(value, str):
        return value
    if len(value) > _MAX_JSON_TEXT:
        raise ValueError(f"a string of {len(value)} characters")
    try:
        return json.loads(value)
    except ValueError as error:
        raise ValueError("a string that is not JSON") from error


def _one_or_listed(value: object) -> object:
    """One id for a list of them, or a list (as its JSON text too)."""
    if isinstance(value, str) and not value.lstrip().startswith("["):
        return [value]
    return _json_text(value)


def _clipped(limit: int) -> AfterValidator:
    # Clipping keeps a quote verbatim: a prefix of a span is still in its evidence.
    return AfterValidator(lambda text: text[:limit])


class _Submitted(BaseModel):
    # Strict: "false" is not a boolean nor 42 a string; a value of the wrong type anywhere is not a draft.
    model_config = ConfigDict(strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _read(cls, value: object) -> object:
        """An object, or its JSON text; a null field is a missing one."""
        value = _json_text(value)
        return {key: item for key, item in value.items() if item is not None} if isinstance(value, dict) else value


class SubmittedClaim(_Submitted):
    text: str = ""
    evidence_ids: Annotated[list[str], BeforeValidator(_one_or_listed)] = Field(
        default_factory=list, validation_alias=AliasChoices("evidenceIds", "evidence_ids")
    )
    quote: Annotated[str, _clipped(MAX_QUOTE_CHARACTERS)] = ""
    # Not said: not claimed as stated by the evidence.
    direct: bool = False

    def claim(self, index: int) -> DraftClaim | None:
        text = self.text.strip()
        if not text or len(text) > MAX_CLAIM_CHARACTERS:
            # Cutting a claim short changes what it says: an over-long one is not kept at all.
            _log.info("Bedrock's claim %d was %d characters: dropped", index, len(text))
            return None
        evidence_ids = [item for item in dict.fromkeys(item.strip() for item in self.evidence_ids) if item]
        return DraftClaim(
            text=text,
            evidence_ids=tuple(evidence_ids[:MAX_EVIDENCE_IDS_PER_CLAIM]),
            quote=self.quote,
            direct=self.direct,
        )


class SubmittedDraft(_Submitted):
    """A submit_answer input as the model sent it: tolerant of what models commonly do (a missing or null
    optional field, snake_case keys, a list sent as JSON text, one id for a list of them) and bounded (claims
    past MAX_CLAIMS and claims longer than MAX_CLAIM_CHARACTERS dropped, quotes and assumptions clipped)."""

    summary: Annotated[str, _clipped(MAX_SUMMARY_CHARACTERS)] = ""
    claims: Annotated[list[SubmittedClaim], BeforeValidator(_json_text)] = Field(default_factory=list)
    assumptions: Annotated[list[Annotated[str, _clipped(MAX_CLAIM_CHARACTERS)]], BeforeValidator(_json_text)] = Field(
        default_factory=list
    )
    needs_review: bool = Field(default=False, validation_alias=AliasChoices("needsReview", "needs_review"))
    unanswerable: bool = False

    def draft(self, *, model: str, input_tokens: int, output_tokens: int) -> GeneratedDraft:
        claims = [claim for index, item in enumerate(self.claims) if (claim := item.claim(index)) is not None]
        if len(claims) > MAX_CLAIMS:
            _log.info("Bedrock's draft had more than %d claims: the rest were dropped", MAX_CLAIMS)
        return GeneratedDraft(
            summary=self.summary,
            claims=tuple(claims[:MAX_CLAIMS]),
            assumptions=tuple(item for item in self.assumptions if item)[:MAX_ASSUMPTIONS],
            needs_review=self.needs_review,
            unanswerable=self.unanswerable,
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )


def _where(error: ValidationError) -> str:
    """Where a submitted draft went wrong, without its text (the log is not the place for a document's words)."""
    return "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or 'the input'}: {item['msg']}"
        for item in error.errors(include_input=False, include_url=False)
    )
