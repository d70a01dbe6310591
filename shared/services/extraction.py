"""Run the right parser on a document, bounded from the outside.

The parser runs in a child process (shared/sandbox/), a fresh confined interpreter that builds the
parser again from its class name (`isolated.parse_document`): whatever goes wrong inside — an exception, a
crash, running out of memory, a hang — comes back as a failure value. A document problem never raises
out of here; a child killed from outside (SIGKILL: the host's OOM killer, a kill -9) raises
InfrastructureUnavailable, which the workflow retries.
"""

from collections.abc import Sequence
from typing import assert_never

from pydantic import TypeAdapter

from shared.domain.document import MAX_DOCUMENT_BYTES, ExtractionFailure, ExtractionLimits, ExtractionOutcome
from shared.domain.errors import InfrastructureUnavailable
from shared.domain.files import FailureReason
from shared.ports import DocumentParser
from shared.sandbox import (
    AnswerTooLarge,
    Crashed,
    Failure,
    KilledFromOutside,
    OutOfMemory,
    TimedOut,
    Unreadable,
    dotted_name,
    pack,
    sandboxed,
)
from shared.services import isolated

_OUTCOME: TypeAdapter[ExtractionOutcome] = TypeAdapter(ExtractionOutcome)


class Extractor:
    def __init__(
        self,
        parsers: Sequence[DocumentParser],
        limits: ExtractionLimits,
        *,
        memory_limit_bytes: int | None = 2 * 1024 * 1024 * 1024,
    ) -> None:
        self._parsers = {media_type: parser for parser in parsers for media_type in parser.media_types}
        # The child builds each parser again from its class: one that cannot be named fails here, at start.
        self._parser_names = {id(parser): dotted_name(type(parser)) for parser in parsers}
        self._limits = limits
        self._memory_limit = memory_limit_bytes

    def supports(self, media_type: str) -> bool:
        return media_type in self._parsers

    @property
    def max_bytes(self) -> int:
        return self._limits.max_bytes

    @property
    def limits(self) -> ExtractionLimits:
        return self._limits

    def extract(self, content: bytes, media_type: str) -> ExtractionOutcome:
        parser = self._parsers.get(media_type)
        if parser is None:
            return ExtractionFailure(reason=FailureReason.UNSUPPORTED_TYPE, detail=f"{media_type} is not extracted")
        if len(content) > self._limits.max_bytes:
            return ExtractionFailure(
                reason=FailureReason.TOO_LARGE,
                detail=f"the document is {len(content)} bytes; the limit is {self._limits.max_bytes}",
            )
        return self._isolated(parser, content)

    def _isolated(self, parser: DocumentParser, content: bytes) -> ExtractionOutcome:
        # Validated: never trust the shape of what a process that parsed hostile input sends back.
        outcome = sandboxed(
            isolated.parse_document,
            pack({"parser": self._parser_names[id(parser)], "limits": self._limits.model_dump(mode="json")}, content),
            _OUTCOME.validate_json,
            timeout_seconds=self._limits.timeout_seconds,
            memory_limit_bytes=self._memory_limit,
            max_answer_bytes=MAX_DOCUMENT_BYTES,
            answer_too_large=_json(
                ExtractionFailure(reason=FailureReason.TOO_LARGE, detail="the extracted document is too large")
            ),
        )
        if isinstance(outcome, Failure):
            return self._failed(outcome)
        return outcome

    def _failed(self, failure: Failure) -> ExtractionFailure:
        """A document problem is a failed document; only a kill from outside is an outage the step retries."""
        match failure:
            case TimedOut():
                # Imported here: a child that builds a test's fake parser imports this module, and the tracer
                # opens a UDP socket at import, which the child's filter refuses.
                from shared.observability import logger

                logger.warning("extraction timed out", extra={"seconds": self._limits.timeout_seconds})
                return ExtractionFailure(
                    reason=FailureReason.TIMED_OUT,
                    detail=f"extraction took longer than {self._limits.timeout_seconds:g} seconds",
                )
            case KilledFromOutside():
                raise InfrastructureUnavailable("the sandboxed parser was killed from outside (SIGKILL)")
            case OutOfMemory():
                return ExtractionFailure(
                    reason=FailureReason.TOO_LARGE, detail="the document needed more memory than extraction allows"
                )
            case AnswerTooLarge():
                return ExtractionFailure(reason=FailureReason.TOO_LARGE, detail="the extracted document is too large")
            case Crashed(exitcode=exitcode):
                return _crashed(exitcode)
            case Unreadable():
                return _crashed(None)
            case _:
                assert_never(failure)


def _crashed(exitcode: int | None) -> ExtractionFailure:
    return ExtractionFailure(
        reason=FailureReason.MALFORMED, detail=f"the parser crashed on this document (exit {exitcode})"
    )


def _json(outcome: ExtractionOutcome) -> bytes:
    return outcome.model_dump_json().encode()
