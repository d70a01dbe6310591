"""Run the right parser on a document, bounded from the outside.

The parser runs in a child process: the wall clock is enforced by the parent (a parser stuck in a
loop cannot check its own clock), memory by an address-space limit in the child, and whatever goes
wrong inside — an exception, a crash, running out of memory — comes back as a failure value. A
document problem never raises out of here.
"""

import contextlib
import faulthandler
import multiprocessing
import os
import resource
import signal
from collections.abc import Sequence
from multiprocessing.connection import Connection

from pydantic import TypeAdapter, ValidationError

from shared.domain.document import ExtractionFailure, ExtractionLimits, ExtractionOutcome
from shared.domain.files import FailureReason
from shared.observability import logger
from shared.ports import DocumentParser

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
        self._limits = limits
        self._memory_limit = memory_limit_bytes

    def supports(self, media_type: str) -> bool:
        return media_type in self._parsers

    @property
    def max_bytes(self) -> int:
        return self._limits.max_bytes

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
        # fork: the child shares the parent's imported parsers and the content without copying them.
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        child = context.Process(
            target=_parse_in_child, args=(parser, content, self._limits, self._memory_limit, sender), daemon=True
        )
        child.start()
        sender.close()
        try:
            if receiver.poll(self._limits.timeout_seconds):
                try:
                    # JSON, validated: never unpickle what a process that parsed hostile input sends back.
                    return _OUTCOME.validate_json(receiver.recv_bytes())
                except (EOFError, ValidationError):
                    pass  # the child died (or was subverted) before it could answer properly
                child.join(timeout=10)
                return _died(child.exitcode)
            logger.warning("extraction timed out", extra={"seconds": self._limits.timeout_seconds})
            return ExtractionFailure(
                reason=FailureReason.TIMED_OUT,
                detail=f"extraction took longer than {self._limits.timeout_seconds:g} seconds",
            )
        finally:
            receiver.close()
            if child.is_alive():
                child.kill()
            child.join(timeout=10)


def _died(exitcode: int | None) -> ExtractionFailure:
    # Native code that cannot allocate under the address-space limit aborts (C++ bad_alloc → SIGABRT).
    if exitcode == -signal.SIGABRT:
        return ExtractionFailure(
            reason=FailureReason.TOO_LARGE, detail="the document needed more memory than extraction allows"
        )
    return ExtractionFailure(
        reason=FailureReason.MALFORMED, detail=f"the parser crashed on this document (exit {exitcode})"
    )


def _parse_in_child(
    parser: DocumentParser, content: bytes, limits: ExtractionLimits, memory_limit: int | None, answer: Connection
) -> None:
    # A native crash here is an outcome, reported by the parent: not a stack dump on the shared stderr.
    faulthandler.disable()
    # The child inherits every socket the parent holds (database connections, the local servers): a
    # parser compromised by its input must reach none of them. Only the answer pipe stays open.
    _close_inherited_descriptors(keep={answer.fileno()})
    if memory_limit is not None:
        # On top of what the child inherited: a parent that holds a model (torch maps gigabytes of
        # address space) must not leave its parsers with nothing.
        limit = _address_space_bytes() + memory_limit
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        outcome: ExtractionOutcome = parser.parse(content, limits)
    except MemoryError:
        outcome = ExtractionFailure(
            reason=FailureReason.TOO_LARGE, detail="the document needs more memory than allowed"
        )
    except RecursionError:
        outcome = ExtractionFailure(reason=FailureReason.MALFORMED, detail="the document's structure nests too deeply")
    except BaseException as error:
        outcome = ExtractionFailure(
            reason=FailureReason.MALFORMED, detail=f"the parser could not read it ({type(error).__name__})"
        )
    try:
        answer.send_bytes(outcome.model_dump_json().encode())
    except MemoryError:
        answer.send_bytes(
            ExtractionFailure(reason=FailureReason.TOO_LARGE, detail="the extracted document is too large")
            .model_dump_json()
            .encode()
        )
    finally:
        answer.close()


def _address_space_bytes() -> int:
    """This process's virtual size (Linux /proc); 0 where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def _close_inherited_descriptors(keep: set[int]) -> None:
    try:
        descriptors = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return
    for descriptor in descriptors:
        if descriptor > 2 and descriptor not in keep:
            with contextlib.suppress(OSError):
                os.close(descriptor)
