"""The extraction service bounds a parser from the outside: time, memory, crashes become failure values."""

import os
import signal
import time

import pytest

from shared.adapters.parsers.plain_text import PlainTextParser
from shared.domain.document import ExtractedDocument, ExtractionFailure, ExtractionLimits, ExtractionOutcome
from shared.domain.errors import InfrastructureUnavailable
from shared.domain.files import FailureReason
from shared.services.extraction import Extractor


class LoopingParser:
    """Fake DocumentParser stuck in an endless loop, as a hostile document can make a real one."""

    media_types = frozenset({"application/x-loop"})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        while True:
            pass


class GreedyParser:
    """Fake DocumentParser that allocates without bound."""

    media_types = frozenset({"application/x-greedy"})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        hoard = []
        while True:
            hoard.append(bytearray(64 * 1024 * 1024))


class RaisingParser:
    media_types = frozenset({"application/x-raise"})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        raise KeyError("a bug in a third-party parser")


class DyingParser:
    media_types = frozenset({"application/x-die"})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        os._exit(139)  # as a segfault in native code would end it


class KilledParser:
    """Killed from outside while it reads (the host's OOM killer, a kill -9 of the stack), not by its own bounds."""

    media_types = frozenset({"application/x-killed"})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")


def extractor(**limits: float) -> Extractor:
    parsers = [PlainTextParser(), LoopingParser(), GreedyParser(), RaisingParser(), DyingParser(), KilledParser()]
    return Extractor(parsers, ExtractionLimits(**limits), memory_limit_bytes=512 * 1024 * 1024)  # type: ignore[arg-type]


def failure(outcome: ExtractionOutcome) -> ExtractionFailure:
    assert isinstance(outcome, ExtractionFailure), outcome
    return outcome


def test_a_parser_in_a_loop_is_stopped_from_outside_at_the_timeout() -> None:
    begun = time.monotonic()
    outcome = failure(extractor(timeout_seconds=1).extract(b"x", "application/x-loop"))
    assert (outcome.reason, outcome.detail) == (FailureReason.TIMED_OUT, "extraction took longer than 1 seconds")
    assert time.monotonic() - begun < 30  # stopped, not waited out (a generous bound: this is not a benchmark)


def test_a_parser_that_eats_memory_hits_the_ceiling_and_the_process_lives_on() -> None:
    outcome = failure(extractor().extract(b"x", "application/x-greedy"))
    assert outcome.reason is FailureReason.TOO_LARGE
    assert isinstance(extractor().extract(b"still here\n", "text/plain"), ExtractedDocument)


def test_an_exception_or_a_crash_in_a_parser_is_a_malformed_value() -> None:
    assert failure(extractor().extract(b"x", "application/x-raise")).detail == "the parser could not read it (KeyError)"
    assert "crashed" in failure(extractor().extract(b"x", "application/x-die")).detail


def test_a_parser_killed_from_outside_is_an_outage_to_retry_not_a_bad_document() -> None:
    with pytest.raises(InfrastructureUnavailable, match="SIGKILL"):
        extractor().extract(b"x", "application/x-killed")


def test_unsupported_types_and_oversized_documents_are_refused_before_parsing() -> None:
    assert failure(extractor().extract(b"x", "image/png")).reason is FailureReason.UNSUPPORTED_TYPE
    too_big = failure(extractor(max_bytes=10).extract(b"x" * 11, "text/plain"))
    assert (too_big.reason, too_big.detail) == (FailureReason.TOO_LARGE, "the document is 11 bytes; the limit is 10")


def test_a_document_comes_back_whole_from_the_child() -> None:
    outcome = extractor().extract(b"one\n\ntwo\n", "text/plain")
    assert isinstance(outcome, ExtractedDocument)
    assert [block.text for block in outcome.blocks] == ["one", "two"]
