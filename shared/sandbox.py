"""Run work on hostile input in a child process: bounded from the outside, and cut off from the parent.

The child is a fresh interpreter, never a fork: `sys.executable -I -S`, an environment of a few fixed,
non-secret variables (`_ALLOWED_ENVIRONMENT`), no inherited descriptor but its two pipes, and the parent's
`sys.path` given explicitly. It is told what to run by the dotted name of a module-level function and given
its input as bytes. So it holds nothing of the parent: no credentials from the environment (on Lambda the
role's AWS_* keys, locally QUIRE_DATABASE_URL), no memory (the JWT key, pooled connections), no socket.

Before it reads its input, the child confines itself (Linux; what applied comes back to the parent, which
logs what did not, see `last_confinement`):
- it dies with the parent (PR_SET_PDEATHSIG) and drops every capability (a parent running as root);
- RLIMIT_AS (what the work may add to its address space), RLIMIT_CPU (a backstop to the wall clock),
  RLIMIT_CORE 0. RLIMIT_NPROC is not used: it counts threads and every process of the user, so it cannot
  stop a fork without stopping the threads onnxruntime and numpy need; the filter does that instead;
- PR_SET_NO_NEW_PRIVS, then a seccomp filter (x86_64 and aarch64): no new socket of any family (socket,
  socketpair, io_uring), no new process (execve, fork, vfork, a clone without CLONE_THREAD; clone3 answers
  ENOSYS so that glibc creates threads with clone), no ptrace, process_vm_*, pidfd_open/getfd, and no
  signal or resource limit aimed at another process.
The parent makes itself non-dumpable (PR_SET_DUMPABLE 0) before its first child, so that a child of the
same user cannot read /proc/<parent>/environ, mem or fd.

The wall clock is enforced by the parent (code stuck in a loop cannot check its own clock), and whatever
goes wrong inside — a crash, running out of memory, a hang — comes back as a value. The child answers with
bytes the caller validates (never a pickle: a process that parsed hostile input may have been subverted).
Work that needs parts of a stored object it cannot fetch itself (no network) asks the parent for byte
ranges (`parent_range`), which the parent serves through the caller's `ranges` within its budget.
"""

import ctypes
import functools
import importlib
import json
import logging
import os
import platform
import resource
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


# The child's end of the answer pipe, told in its spec (stdin is the work pipe; stdout goes nowhere; stderr
# is kept for the log).
class _ChildState:
    answer_fd = -1


_LENGTH = struct.Struct("!Q")
_RANGE = struct.Struct("!QQ")
_NO_RANGE = (1 << 64) - 1
# Message kinds, child → parent.
_CONFINED, _ANSWER, _RANGE_REQUEST = b"C", b"A", b"R"
_STDERR_TAIL_BYTES = 4096
# The project root: the child imports `shared` from where the parent did, whatever its sys.path says.
_PROJECT_ROOT = str(Path(__file__).resolve().parent.parent)
_BOOT = "import sys, json; sys.path[:] = json.loads(sys.argv[1]); import shared.sandbox as s; s._child_main()"


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
        args=(_LENGTH.pack(len(encoded_spec)) + encoded_spec, payload),
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


def dotted_name(function: Callable[..., Any] | type) -> str:
    """`module:qualname` of a module-level function or class, checked to resolve to that very object (a
    lambda, a closure or a bound method cannot be named: it would carry the parent's state)."""
    module, qualname = getattr(function, "__module__", None), getattr(function, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        raise TypeError(f"{function!r} is not a module-level function or class: the child imports it by name")
    name = f"{module}:{qualname}"
    if resolve(name) is not function:
        raise TypeError(f"{name} does not name {function!r}: the child imports it by name")
    return name


def resolve(name: str) -> Any:
    module, _, qualname = name.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def pack(header: Mapping[str, Any], *blobs: bytes) -> bytes:
    """A JSON header line and binary parts: the input of a child's work, or its answer."""
    return json.dumps({**header, "_blobs": [len(blob) for blob in blobs]}).encode() + b"\n" + b"".join(blobs)


def unpack(packed: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """`pack`'s header and parts. Raises ValueError on anything else (an answer from a subverted child)."""
    line, separator, rest = packed.partition(b"\n")
    header = json.loads(line)
    if not separator or not isinstance(header, dict):
        raise ValueError("not a header line")
    lengths = header.pop("_blobs", None)
    if not isinstance(lengths, list) or not all(isinstance(n, int) and n >= 0 for n in lengths):
        raise ValueError("no part lengths")
    if sum(lengths) != len(rest):
        raise ValueError("the parts are not the lengths announced")
    blobs, at = [], 0
    for length in lengths:
        blobs.append(rest[at : at + length])
        at += length
    return header, blobs


def parent_range(start: int, length: int) -> bytes:
    """In the child: bytes `start`..`start + length` of the object the parent serves (`ranges`)."""
    os.write(_ChildState.answer_fd, _RANGE_REQUEST + _LENGTH.pack(_RANGE.size) + _RANGE.pack(start, length))
    (size,) = _LENGTH.unpack(_read_exactly(0, _LENGTH.size))
    if size == _NO_RANGE:
        raise OSError("the parent refused this range (past the object's sniffing budget)")
    return _read_exactly(0, size)


# --- the parent's side -----------------------------------------------------------------------------------


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
            head = self._read(1 + _LENGTH.size)
            if not isinstance(head, bytes):
                return head
            kind, (length,) = head[:1], _LENGTH.unpack(head[1:])
            if kind == _ANSWER:
                if length > max_answer_bytes:
                    return AnswerTooLarge(max_answer_bytes)
                return self._read(length)
            if length > 64 * 1024:  # a report or a range request is a few bytes
                return Died(None)
            body = self._read(length)
            if not isinstance(body, bytes):
                return body
            if kind == _CONFINED:
                _ParentState.confinement = _confinement_of(body)
            elif kind == _RANGE_REQUEST and self._ranges is not None and length == _RANGE.size:
                # The input is on its way first: the two writers never interleave on the work pipe.
                writer.join(max(self._deadline - time.monotonic(), 0.0))
                self._serve(*_RANGE.unpack(body))
            else:
                return Died(None)  # not something a well-behaved child says

    def _serve(self, start: int, length: int) -> None:
        if self._ranges is None or self._child.stdin is None:
            return
        try:
            data = self._ranges(start, length)
            reply = _LENGTH.pack(len(data)) + data
        except OSError:
            reply = _LENGTH.pack(_NO_RANGE)
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
        _ParentState.undumpable = _prctl(_PR_SET_DUMPABLE, 0) == 0


# --- the child's side ------------------------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_SECCOMP = 22
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_SECCOMP_MODE_FILTER = 2


def _child_main() -> None:
    (length,) = _LENGTH.unpack(_read_exactly(0, _LENGTH.size))
    spec = json.loads(_read_exactly(0, length))
    _ChildState.answer_fd = int(spec["answer_fd"])
    report = _confine(spec)
    _send(_CONFINED, json.dumps(report).encode())
    payload = _read_exactly(0, spec["payload_bytes"])
    work = resolve(spec["work"])
    try:
        answer = work(payload)
    except MemoryError:
        answer = bytes.fromhex(spec["too_large"])
    del payload
    try:
        _send(_ANSWER, answer)
    except MemoryError:
        _send(_ANSWER, bytes.fromhex(spec["too_large"]))
    os.close(_ChildState.answer_fd)


def _confine(spec: Mapping[str, Any]) -> dict[str, Any]:
    problems: list[str] = []
    _prctl(_PR_SET_PDEATHSIG, 9)
    # Non-dumpable, as the parent is: another child (another tenant's document, parsed at the same time) must not
    # read this one's /proc/<pid>/environ or mem, nor this one theirs.
    if _prctl(_PR_SET_DUMPABLE, 0) != 0:
        problems.append(f"PR_SET_DUMPABLE refused (errno {ctypes.get_errno()})")
    _lower_limit(resource.RLIMIT_CORE, 0)
    _lower_limit(resource.RLIMIT_CPU, int(spec["cpu_seconds"]))
    memory_limited = False
    limit = spec["memory_limit_bytes"]
    if limit is not None:
        # On top of the interpreter it starts as, and of the input it is about to read.
        memory_limited = _lower_limit(
            resource.RLIMIT_AS, _address_space_bytes() + int(limit) + int(spec["payload_bytes"])
        )
    capabilities_dropped = _drop_capabilities(problems)
    no_new_privileges = _prctl(_PR_SET_NO_NEW_PRIVS, 1) == 0
    if not no_new_privileges:
        problems.append(f"PR_SET_NO_NEW_PRIVS refused (errno {ctypes.get_errno()})")
    seccomp = no_new_privileges and _install_seccomp(problems)
    return {
        "no_new_privileges": no_new_privileges,
        "seccomp": seccomp,
        "capabilities_dropped": capabilities_dropped,
        "memory_limited": memory_limited,
        "detail": "; ".join(problems),
    }


def _lower_limit(which: int, value: int) -> bool:
    """Soft and hard limit at `value`, or at the hard limit already there if that is lower."""
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        return False
    return True


def _send(kind: bytes, body: bytes) -> None:
    header = kind + _LENGTH.pack(len(body))
    view, at = memoryview(body), 0
    os.write(_ChildState.answer_fd, header)
    while at < len(body):
        at += os.write(_ChildState.answer_fd, view[at : at + 1024 * 1024])


def _read_exactly(descriptor: int, length: int) -> bytes:
    buffer, at = bytearray(length), 0
    view = memoryview(buffer)
    while at < length:
        got = os.readv(descriptor, [view[at:]])
        if not got:
            raise EOFError("the parent closed the work pipe")
        at += got
    return bytes(buffer)


def _address_space_bytes() -> int:
    """This process's virtual size (Linux /proc); 0 where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


@functools.cache
def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int, pointer: Any = None) -> int:
    if sys.platform != "linux":
        return -1
    prctl = _libc().prctl
    prctl.restype = ctypes.c_int
    third = pointer if pointer is not None else ctypes.c_ulong(0)
    result: int = prctl(ctypes.c_int(option), ctypes.c_ulong(value), third, ctypes.c_ulong(0), ctypes.c_ulong(0))
    return result


class _CapabilityHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapabilityData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities(problems: list[str]) -> bool:
    """No capability left: a parent running as root (a container) must not lend the child CAP_SYS_PTRACE
    or CAP_DAC_OVERRIDE. A non-root parent's child has none already, and this is a no-op."""
    arch = _ARCHITECTURES.get(platform.machine())
    if arch is None:
        problems.append(f"capabilities not dropped on {platform.machine()}")
        return False
    _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    header = _CapabilityHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words
    data = (_CapabilityData * 2)()
    libc = _libc()
    if libc.syscall(ctypes.c_long(arch.capset), ctypes.byref(header), ctypes.byref(data)) != 0:
        problems.append(f"capset refused (errno {ctypes.get_errno()})")
        return False
    return True


@dataclass(frozen=True)
class _Architecture:
    audit: int
    capset: int
    socket: int
    socketpair: int
    clone: int
    clone3: int
    execve: int
    execveat: int
    kill: int
    tkill: int
    tgkill: int
    prlimit64: int
    ptrace: int
    process_vm_readv: int
    process_vm_writev: int
    io_uring_setup: int
    pidfd_open: int
    pidfd_getfd: int
    fork: int | None = None
    vfork: int | None = None
    # x86_64's x32 ABI shares its audit arch: its syscall numbers are offset by this bit.
    x32_bit: int | None = None


# Syscall numbers from the kernel's uapi headers (asm/unistd_64.h; asm-generic/unistd.h for arm64, which
# has no fork or vfork: glibc forks with clone).
_ARCHITECTURES = {
    "x86_64": _Architecture(
        audit=0xC000003E,
        capset=126,
        socket=41,
        socketpair=53,
        clone=56,
        clone3=435,
        execve=59,
        execveat=322,
        kill=62,
        tkill=200,
        tgkill=234,
        prlimit64=302,
        ptrace=101,
        process_vm_readv=310,
        process_vm_writev=311,
        io_uring_setup=425,
        pidfd_open=434,
        pidfd_getfd=438,
        fork=57,
        vfork=58,
        x32_bit=0x40000000,
    ),
    "aarch64": _Architecture(
        audit=0xC00000B7,
        capset=91,
        socket=198,
        socketpair=199,
        clone=220,
        clone3=435,
        execve=221,
        execveat=281,
        kill=129,
        tkill=130,
        tgkill=131,
        prlimit64=261,
        ptrace=117,
        process_vm_readv=270,
        process_vm_writev=271,
        io_uring_setup=425,
        pidfd_open=434,
        pidfd_getfd=438,
    ),
}

_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000
# classic BPF
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (the low word first)
_NR, _ARCH, _ARG0_LOW = 0, 4, 16


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program(arch: _Architecture, own_pid: int) -> list[tuple[int, int, int, int]]:
    """The filter, as (code, jt, jf, k) instructions: everything is allowed but what gives the child a way
    out (a socket, a process, another process's memory or descriptors, a signal to another process)."""
    deny = _RET_ERRNO | _EPERM
    program: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 1, 0, arch.audit),
        (_RET_K, 0, 0, deny),  # another ABI (i386 on x86_64, AArch32 on arm64): other numbers, all refused
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if arch.x32_bit is not None:
        program += [(_JGE_K, 0, 1, arch.x32_bit), (_RET_K, 0, 0, deny)]
    refused = [
        arch.socket,
        arch.socketpair,
        arch.io_uring_setup,  # io_uring can open sockets (IORING_OP_SOCKET) without the socket syscall
        arch.execve,
        arch.execveat,
        arch.ptrace,
        arch.process_vm_readv,
        arch.process_vm_writev,
        arch.pidfd_open,
        arch.pidfd_getfd,
        arch.tkill,  # a thread id of any process; tgkill names the process
        *(number for number in (arch.fork, arch.vfork) if number is not None),
    ]
    for number in refused:
        program += [(_JEQ_K, 0, 1, number), (_RET_K, 0, 0, deny)]
    # clone3 passes its flags in a struct the filter cannot read: ENOSYS makes glibc use clone.
    program += [(_JEQ_K, 0, 1, arch.clone3), (_RET_K, 0, 0, _RET_ERRNO | _ENOSYS)]
    # clone: a thread (CLONE_THREAD, which the kernel allows only with CLONE_VM) and nothing else.
    program += [
        (_JEQ_K, 0, 4, arch.clone),
        (_LD_W_ABS, 0, 0, _ARG0_LOW),
        (_JSET_K, 0, 1, _CLONE_THREAD),
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, deny),
    ]
    # kill and tgkill: only this process (pid_t is the low word); prlimit64 also with pid 0 (itself).
    for number in (arch.kill, arch.tgkill):
        program += [
            (_JEQ_K, 0, 4, number),
            (_LD_W_ABS, 0, 0, _ARG0_LOW),
            (_JEQ_K, 0, 1, own_pid),
            (_RET_K, 0, 0, _RET_ALLOW),
            (_RET_K, 0, 0, deny),
        ]
    program += [
        (_JEQ_K, 0, 5, arch.prlimit64),
        (_LD_W_ABS, 0, 0, _ARG0_LOW),
        (_JEQ_K, 1, 0, 0),
        (_JEQ_K, 0, 1, own_pid),
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, deny),
    ]
    program.append((_RET_K, 0, 0, _RET_ALLOW))
    return program


def _install_seccomp(problems: list[str]) -> bool:
    arch = _ARCHITECTURES.get(platform.machine())
    if arch is None:
        problems.append(f"no seccomp filter for {platform.machine()}")
        return False
    program = seccomp_program(arch, os.getpid())
    instructions = (_SockFilter * len(program))(*(_SockFilter(*instruction) for instruction in program))
    fprog = _SockFprog(len(program), instructions)
    if _prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog)) != 0:
        problems.append(f"the kernel refused the seccomp filter (errno {ctypes.get_errno()})")
        return False
    return True
