"""The parent's side: start a fresh confined interpreter, hand it its work, serve its range requests and
read its answer, all against one wall clock (code stuck in a loop cannot check its own clock). Whatever goes
wrong inside (a crash, running out of memory, a hang) comes back as a value (docs/security.md#the-parser-sandbox).
"""

import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.sandbox.linux import PR_SET_DUMPABLE, prctl
from shared.sandbox.protocol import ANSWER, CONFINED, LENGTH, NO_RANGE, RANGE, RANGE_REQUEST, dotted_name

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TimedOut:
    seconds: float


@dataclass(frozen=True)
class AnswerTooLarge:
    limit_bytes: int


@dataclass(frozen=True)
class Died:
    """The child ended without answering: `exitcode` is negative for a signal (SIGABRT: a native
    allocation failed under the memory limit). `killed_here`: the parent killed it itself (it did not end in
    its grace period), so a SIGKILL is this process's doing, not the host's."""

    exitcode: int | None
    killed_here: bool = False


@dataclass(frozen=True)
class Confinement:
    """What the last child managed to apply to itself before it read its input (each is False where the
    kernel refused it or the platform has no such thing)."""

    no_new_privileges: bool
    seccomp: bool
    capabilities_dropped: bool
    memory_limited: bool
    detail: str = ""

    @property
    def complete(self) -> bool:
        return self.no_new_privileges and self.seccomp and self.capabilities_dropped


class _ParentState:
    # The last child's report; the parent logs a warning when a confinement is incomplete and new.
    confinement: Confinement | None = None
    undumpable = False


def last_confinement() -> Confinement | None:
    """What the last child applied to itself (None before the first child)."""
    return _ParentState.confinement


# Non-secret variables a Python may need to start: Lambda's runtime finds its libraries through
# LD_LIBRARY_PATH (/var/lang/lib among them); the locale and time zone only keep behaviour the same.
_ALLOWED_ENVIRONMENT = ("LD_LIBRARY_PATH", "LANG", "LC_ALL", "TZ")


_STDERR_TAIL_BYTES = 4096
# The project root: the child imports `shared` from where the parent did, whatever its sys.path says.
_PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
# The child's whole command: its path, then the child's side (confine.py) takes over.
_BOOT = "import sys, json; sys.path[:] = json.loads(sys.argv[1]); import shared.sandbox.confine as s; s._child_main()"


def run_in_child(
    work: Callable[[bytes], bytes],
    payload: bytes,
    *,
    timeout_seconds: float,
    memory_limit_bytes: int | None,
    answer_too_large: bytes = b"",
    max_answer_bytes: int = 256 * 1024 * 1024,
    ranges: Callable[[int, int], bytes] | None = None,
) -> bytes | TimedOut | Died | AnswerTooLarge:
    """`work(payload)`'s answer, computed in a fresh confined interpreter, or how the child failed to give
    one. `work` must be a module-level function (it is imported by name in the child) that catches its own
    exceptions and answers with what they mean; one that escapes is a death. `answer_too_large` is sent
    instead of an answer the child has no memory left to send. `ranges(start, length)` serves the child's
    `parent_range` calls (an OSError from it is the child's OSError; any other error stops the child and is
    raised here). The wall clock covers everything: a child that trickles its answer is as late as one that
    never answers."""
    name = dotted_name(work)
    _make_parent_undumpable()
    spec = {
        "work": name,
        "payload_bytes": len(payload),
        "memory_limit_bytes": memory_limit_bytes,
        # CPU seconds over every thread, a backstop for a parent that died; the wall clock comes first.
        "cpu_seconds": int(timeout_seconds * max(os.cpu_count() or 1, 1)) + 5,
        "too_large": answer_too_large.hex(),
    }
    answer_read, answer_write = os.pipe()
    spec["answer_fd"] = answer_write
    deadline = time.monotonic() + timeout_seconds
    try:
        child = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _BOOT, json.dumps(_child_path())],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={key: os.environ[key] for key in _ALLOWED_ENVIRONMENT if key in os.environ},
            close_fds=True,
            pass_fds=(answer_write,),
            cwd="/",
            # No controlling terminal to open, and a signal to the parent's group never reaches it.
            start_new_session=True,
        )
    finally:
        os.close(answer_write)
    stderr_tail = _StderrTail(child.stderr)
    conversation = _Conversation(child, answer_read, deadline, ranges)
    encoded_spec = json.dumps(spec).encode()
    writer = threading.Thread(
        target=conversation.send_input,
        args=(LENGTH.pack(len(encoded_spec)) + encoded_spec, payload),
        name="sandbox-input",
        daemon=True,
    )
    writer.start()
    try:
        outcome = conversation.answer(max_answer_bytes, writer)
        if isinstance(outcome, TimedOut):
            return TimedOut(timeout_seconds)
        if isinstance(outcome, Died):
            ended_alone = _ended_within(child, grace_seconds=2)
            exitcode = _exit_code(child)
            stderr_tail.finish()
            _log.warning(
                "a sandboxed child died", extra={"work": name, "exitcode": exitcode, "stderr": stderr_tail.text}
            )
            return Died(exitcode, killed_here=not ended_alone)
        return outcome
    finally:
        os.close(answer_read)
        _exit_code(child)
        writer.join(timeout=1)
        stderr_tail.finish()


class _Conversation:
    """The parent's half of the pipes: the input out, range requests served, the answer in, all against
    one deadline."""

    def __init__(
        self,
        child: "subprocess.Popen[bytes]",
        answer_fd: int,
        deadline: float,
        ranges: Callable[[int, int], bytes] | None,
    ) -> None:
        self._child = child
        self._answer_fd = answer_fd
        self._deadline = deadline
        self._ranges = ranges
        self._input_lock = threading.Lock()

    def send_input(self, spec: bytes, payload: bytes) -> None:
        assert self._child.stdin is not None
        try:
            with self._input_lock:
                self._child.stdin.write(spec)
                self._child.stdin.write(payload)
                self._child.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # the child died or was stopped: its answer pipe says how

    def answer(self, max_answer_bytes: int, writer: threading.Thread) -> bytes | TimedOut | Died | AnswerTooLarge:
        while True:
            head = self._read(1 + LENGTH.size)
            if not isinstance(head, bytes):
                return head
            kind, (length,) = head[:1], LENGTH.unpack(head[1:])
            if kind == ANSWER:
                if length > max_answer_bytes:
                    return AnswerTooLarge(max_answer_bytes)
                return self._read(length)
            if length > 64 * 1024:  # a report or a range request is a few bytes
                return Died(None)
            body = self._read(length)
            if not isinstance(body, bytes):
                return body
            if kind == CONFINED:
                _ParentState.confinement = _confinement_of(body)
            elif kind == RANGE_REQUEST and self._ranges is not None and length == RANGE.size:
                # The input is on its way first: the two writers never interleave on the work pipe.
                writer.join(max(self._deadline - time.monotonic(), 0.0))
                self._serve(*RANGE.unpack(body))
            else:
                return Died(None)  # not something a well-behaved child says

    def _serve(self, start: int, length: int) -> None:
        if self._ranges is None or self._child.stdin is None:
            return
        try:
            data = self._ranges(start, length)
            reply = LENGTH.pack(len(data)) + data
        except OSError:
            reply = LENGTH.pack(NO_RANGE)
        try:
            with self._input_lock:
                self._child.stdin.write(reply)
                self._child.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def _read(self, length: int) -> bytes | TimedOut | Died:
        chunks, wanted = [], length
        while wanted:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                return TimedOut(0)
            readable, _, _ = select.select([self._answer_fd], [], [], remaining)
            if not readable:
                return TimedOut(0)
            chunk = os.read(self._answer_fd, min(wanted, 1024 * 1024))
            if not chunk:
                return Died(None)  # before or while answering
            chunks.append(chunk)
            wanted -= len(chunk)
        return b"".join(chunks)


class _StderrTail:
    """The last few KB the child wrote to stderr (a traceback, a native library's complaint), for the log."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._tail = b""
        self._reader = threading.Thread(target=self._drain, name="sandbox-stderr", daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        try:
            while chunk := self._stream.read1(65536):
                self._tail = (self._tail + chunk)[-_STDERR_TAIL_BYTES:]
        except (OSError, ValueError):
            return

    def finish(self) -> None:
        self._reader.join(timeout=1)

    @property
    def text(self) -> str:
        return self._tail.decode("utf-8", "replace")


def _confinement_of(body: bytes) -> Confinement:
    try:
        reported = json.loads(body)
        confinement = Confinement(
            no_new_privileges=reported["no_new_privileges"] is True,
            seccomp=reported["seccomp"] is True,
            capabilities_dropped=reported["capabilities_dropped"] is True,
            memory_limited=reported["memory_limited"] is True,
            detail=str(reported.get("detail", ""))[:500],
        )
    except (ValueError, KeyError, TypeError):
        confinement = Confinement(False, False, False, False, "the child's report could not be read")
    if not confinement.complete and confinement != _ParentState.confinement:
        _log.warning("the sandbox's child is not fully confined", extra={"confinement": str(confinement)})
    return confinement


def _child_path() -> list[str]:
    path = [os.path.abspath(entry) if entry else os.getcwd() for entry in sys.path]
    return [_PROJECT_ROOT, *(entry for entry in path if entry != _PROJECT_ROOT)]


def _ended_within(child: "subprocess.Popen[bytes]", grace_seconds: float) -> bool:
    try:
        child.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def _exit_code(child: "subprocess.Popen[bytes]", grace_seconds: float = 0) -> int | None:
    """How the child ended: given `grace_seconds` to end on its own (a death keeps its own exit code), then
    killed."""
    try:
        return child.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        child.kill()
    try:
        return child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        return None


def _make_parent_undumpable() -> None:
    """A process of the same user reads a dumpable process's /proc/<pid>/environ (the AWS keys, the database
    URL), mem and fd; a non-dumpable one's only with CAP_SYS_PTRACE, which the child drops."""
    if not _ParentState.undumpable and sys.platform == "linux":
        _ParentState.undumpable = prctl(PR_SET_DUMPABLE, 0) == 0
