"""Run work on hostile input in a child process, bounded from the outside.

The wall clock is enforced by the parent (code stuck in a loop cannot check its own clock), memory by an
address-space limit in the child, and whatever goes wrong inside — a crash, running out of memory, a
hang — comes back as a value. The child answers with bytes the caller validates (JSON, never a pickle:
a process that parsed hostile input may have been subverted), and reaches nothing the parent holds:
every inherited descriptor but the answer pipe is closed before the work starts.
"""

import contextlib
import faulthandler
import multiprocessing
import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection


@dataclass(frozen=True)
class TimedOut:
    seconds: float


@dataclass(frozen=True)
class AnswerTooLarge:
    limit_bytes: int


@dataclass(frozen=True)
class Died:
    """The child ended without answering: `exitcode` is negative for a signal (SIGABRT: a native
    allocation failed under the memory limit)."""

    exitcode: int | None


def run_in_child(
    work: Callable[[], bytes],
    *,
    timeout_seconds: float,
    memory_limit_bytes: int | None,
    answer_too_large: bytes = b"",
    max_answer_bytes: int = 256 * 1024 * 1024,
) -> bytes | TimedOut | Died | AnswerTooLarge:
    """`work()`'s answer, or how the child failed to give one. `work` must catch its own exceptions and
    answer with what they mean; one that escapes is a death. `answer_too_large` is sent instead of an
    answer the child has no memory left to send. The wall clock covers the answer too: a child that
    starts answering and then trickles is as late as one that never answers."""
    # fork: the child shares the parent's imported modules and the input without copying them.
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(work, memory_limit_bytes, answer_too_large, sender), daemon=True)
    deadline = time.monotonic() + timeout_seconds
    child.start()
    sender.close()
    try:
        if not receiver.poll(timeout_seconds):
            return TimedOut(timeout_seconds)
        received: list[bytes | BaseException] = []

        def receive() -> None:
            try:
                received.append(receiver.recv_bytes(max_answer_bytes))
            except (EOFError, OSError) as error:  # died before or while answering, or the answer is over the limit
                received.append(error)

        reader = threading.Thread(target=receive, name="sandbox-answer", daemon=True)
        reader.start()
        reader.join(max(deadline - time.monotonic(), 0.0))
        if reader.is_alive():
            child.kill()  # its end of the pipe closes, so the reader stops
            reader.join(timeout=10)
            return TimedOut(timeout_seconds)
        answer = received[0] if received else EOFError()
        if isinstance(answer, bytes):
            return answer
        if isinstance(answer, OSError) and "bad message length" in str(answer):
            # multiprocessing refuses a message whose header announces more than the limit.
            return AnswerTooLarge(max_answer_bytes)
        child.join(timeout=10)
        return Died(child.exitcode)
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join(timeout=10)


def _child(work: Callable[[], bytes], memory_limit: int | None, too_large: bytes, answer: Connection) -> None:
    # A native crash here is an outcome, reported by the parent: not a stack dump on the shared stderr.
    faulthandler.disable()
    # The child inherits every socket the parent holds (database connections, the local servers): work
    # compromised by its input must reach none of them. Only the answer pipe stays open.
    _close_inherited_descriptors(keep={answer.fileno()})
    if memory_limit is not None:
        # On top of what the child inherited: a parent that holds a model (torch maps gigabytes of
        # address space) must not leave the work with nothing.
        limit = _address_space_bytes() + memory_limit
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        try:
            answer.send_bytes(work())
        except MemoryError:
            answer.send_bytes(too_large)
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
