"""`sandboxed`: the child's answer read through the caller's validator, or the one Failure that says why there is
none; a death is split by what it means (out of memory, killed from outside, a crash).

The child imports its work by name, so each work function here is module-level and this module imports nothing
heavy (it is what the child imports)."""

import json
import os
import signal
from typing import Any

import pytest

from shared.sandbox import (
    AnswerTooLarge,
    Crashed,
    Died,
    KilledFromOutside,
    OutOfMemory,
    TimedOut,
    Unreadable,
    death,
    parent,
    sandboxed,
)

BOUNDS: dict[str, Any] = {"timeout_seconds": 30, "memory_limit_bytes": None}


class RefusedByTheCaller(Exception):
    """Not a sign of an unreadable answer: the caller's own error, raised by its validator."""


def read_count(answer: bytes) -> int:
    decoded = json.loads(answer)
    if decoded.get("refused"):
        raise RefusedByTheCaller(decoded["refused"])
    count = decoded["count"]
    if not isinstance(count, int):
        raise TypeError("not a count")
    return count


# --- work, run in the child ---------------------------------------------------------------------------------


def counted(payload: bytes) -> bytes:
    return json.dumps({"count": len(payload)}).encode()


def aborting(payload: bytes) -> bytes:
    os.abort()  # as native code that cannot allocate under the memory limit ends


def killed_from_outside(payload: bytes) -> bytes:
    os.kill(os.getpid(), signal.SIGKILL)  # as the host's OOM killer would
    return b"never"


# --- the parent's raw outcomes, each to what it means ---------------------------------------------------------


def answering(monkeypatch: pytest.MonkeyPatch, raw: object) -> list[dict[str, Any]]:
    """`run_in_child` stood in for: it answers `raw` and records what it was asked."""
    asked: list[dict[str, Any]] = []

    def run_in_child(work: object, payload: bytes, **options: Any) -> object:
        asked.append({"work": work, "payload": payload, **options})
        return raw

    monkeypatch.setattr(parent, "run_in_child", run_in_child)
    return asked


@pytest.mark.parametrize(
    ("raw", "meaning"),
    [
        (TimedOut(2.5), TimedOut(2.5)),
        (AnswerTooLarge(1000), AnswerTooLarge(1000)),
        (Died(-signal.SIGABRT), OutOfMemory(-signal.SIGABRT)),
        (Died(-signal.SIGKILL, killed_here=False), KilledFromOutside(-signal.SIGKILL)),
        # The parent's own kill of a child that would not end: the input's doing, not an outage.
        (Died(-signal.SIGKILL, killed_here=True), Crashed(-signal.SIGKILL)),
        (Died(139), Crashed(139)),
        (Died(None), Crashed(None)),
    ],
)
def test_each_way_a_child_ends_without_an_answer_has_one_meaning(
    monkeypatch: pytest.MonkeyPatch, raw: object, meaning: object
) -> None:
    answering(monkeypatch, raw)
    assert sandboxed(counted, b"abc", read_count, **BOUNDS) == meaning


def test_the_answer_is_what_the_callers_validator_reads_and_the_child_is_asked_as_run_in_child_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = answering(monkeypatch, b'{"count": 3}')

    def ranges(start: int, length: int) -> bytes:
        return b""

    outcome = sandboxed(
        counted,
        b"abc",
        read_count,
        timeout_seconds=4,
        memory_limit_bytes=1024,
        answer_too_large=b"too large",
        max_answer_bytes=99,
        ranges=ranges,
    )
    assert outcome == 3
    assert asked == [
        {
            "work": counted,
            "payload": b"abc",
            "timeout_seconds": 4,
            "memory_limit_bytes": 1024,
            "answer_too_large": b"too large",
            "max_answer_bytes": 99,
            "ranges": ranges,
        }
    ]


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"not json", ValueError),
        (b"\xff\xfe", ValueError),  # not even text
        (b'{"counted": 3}', KeyError),
        (b'{"count": "3"}', TypeError),
    ],
)
def test_an_answer_the_validator_refuses_is_unreadable(
    monkeypatch: pytest.MonkeyPatch, answer: bytes, error: type[Exception]
) -> None:
    answering(monkeypatch, answer)
    outcome = sandboxed(counted, b"", read_count, **BOUNDS)
    assert isinstance(outcome, Unreadable) and isinstance(outcome.error, error)


def test_a_pydantic_validation_error_is_unreadable(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import TypeAdapter

    answering(monkeypatch, b'{"count": "three"}')
    outcome = sandboxed(counted, b"", TypeAdapter(dict[str, int]).validate_json, **BOUNDS)
    assert isinstance(outcome, Unreadable) and type(outcome.error).__name__ == "ValidationError"


def test_the_callers_own_error_from_its_validator_goes_on_up(monkeypatch: pytest.MonkeyPatch) -> None:
    answering(monkeypatch, b'{"refused": "the child said no"}')
    with pytest.raises(RefusedByTheCaller, match="the child said no"):
        sandboxed(counted, b"", read_count, **BOUNDS)


def test_death_is_the_same_split_for_a_caller_holding_a_died() -> None:
    assert death(Died(-signal.SIGABRT)) == OutOfMemory(-signal.SIGABRT)
    assert death(Died(-signal.SIGKILL)) == KilledFromOutside(-signal.SIGKILL)
    assert death(Died(-signal.SIGKILL, killed_here=True)) == Crashed(-signal.SIGKILL)
    assert death(Died(1)) == Crashed(1)


# --- a real child -----------------------------------------------------------------------------------------


def test_a_real_child_answers_through_the_validator() -> None:
    assert sandboxed(counted, b"four", read_count, **BOUNDS) == 4


def test_a_real_child_that_aborts_is_out_of_memory_and_one_killed_from_outside_is_said_so() -> None:
    assert sandboxed(aborting, b"", read_count, **BOUNDS) == OutOfMemory(-signal.SIGABRT)
    assert sandboxed(killed_from_outside, b"", read_count, **BOUNDS) == KilledFromOutside(-signal.SIGKILL)
