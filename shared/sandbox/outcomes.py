"""What a sandboxed call's end means, decided once for every caller: `sandboxed` runs the work in the child,
reads its answer through the caller's validator, and names each way it can fail, so a caller only says what
each outcome is to it (docs/security.md#the-parser-sandbox)."""

import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from shared.sandbox import parent
from shared.sandbox.parent import AnswerTooLarge, Died, TimedOut

T = TypeVar("T")


@dataclass(frozen=True)
class OutOfMemory:
    """The child aborted (SIGABRT): native code that cannot allocate under the memory limit does (C++ bad_alloc)."""

    exitcode: int


@dataclass(frozen=True)
class KilledFromOutside:
    """A SIGKILL the parent did not send: the host's OOM killer, or a kill -9 of the stack. Not the input's doing
    (the child's own limits end it otherwise), so a pipeline step retries it as an outage."""

    exitcode: int


@dataclass(frozen=True)
class Crashed:
    """The child ended without answering, for any other reason (`exitcode` None: it broke the protocol)."""

    exitcode: int | None


@dataclass(frozen=True)
class Unreadable:
    """The child answered, but the caller's validator refused the answer: a process that read hostile input
    may have been subverted, so its answer is never trusted as it comes."""

    error: Exception


# TimedOut and AnswerTooLarge are the parent's own values; a death is split by what it means.
Failure = TimedOut | AnswerTooLarge | OutOfMemory | KilledFromOutside | Crashed | Unreadable


def sandboxed(
    work: Callable[[bytes], bytes],
    payload: bytes,
    read: Callable[[bytes], T],
    *,
    timeout_seconds: float,
    memory_limit_bytes: int | None,
    answer_too_large: bytes = b"",
    max_answer_bytes: int = 256 * 1024 * 1024,
    ranges: Callable[[int, int], bytes] | None = None,
) -> T | Failure:
    """`read(work(payload))` with `work` run by `run_in_child` (same arguments), or the Failure that says why
    there is no answer. `read` validates the child's bytes: a ValueError, KeyError or TypeError from it (pydantic's
    ValidationError is a ValueError) is Unreadable; any other error it raises goes on up to the caller."""
    answer = parent.run_in_child(
        work,
        payload,
        timeout_seconds=timeout_seconds,
        memory_limit_bytes=memory_limit_bytes,
        answer_too_large=answer_too_large,
        max_answer_bytes=max_answer_bytes,
        ranges=ranges,
    )
    if isinstance(answer, TimedOut | AnswerTooLarge):
        return answer
    if isinstance(answer, Died):
        return death(answer)
    try:
        return read(answer)
    except (ValueError, KeyError, TypeError) as error:
        return Unreadable(error)


def death(died: Died) -> OutOfMemory | KilledFromOutside | Crashed:
    """What a child's death means."""
    if died.exitcode == -signal.SIGABRT:
        return OutOfMemory(died.exitcode)
    if died.exitcode == -signal.SIGKILL and not died.killed_here:
        return KilledFromOutside(died.exitcode)
    return Crashed(died.exitcode)
