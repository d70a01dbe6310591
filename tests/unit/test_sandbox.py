"""Work on hostile input in a child: its answer, or how it failed to give one, within the wall clock; and a
child that holds nothing of the parent and cannot reach out (no secret, no socket, no process).

The child imports its work by name, so each work function here is module-level and this module imports
nothing heavy (it is what the child imports)."""

import json
import os
import platform
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from shared.sandbox import (
    AnswerTooLarge,
    Died,
    TimedOut,
    last_confinement,
    pack,
    parent_range,
    run_in_child,
    unpack,
)

# A parent-held secret (as the JWT key is): set in the parent by a test, read by the child.
PARENT_SECRET: str | None = None
SECRETS = {
    "QUIRE_DATABASE_URL": "postgresql://quire_app:hunter2@127.0.0.1:5432/quire",
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEEXAMPLE00",
    "AWS_SECRET_ACCESS_KEY": "secret-key-the-child-must-not-see",
    "AWS_SESSION_TOKEN": "session-token-the-child-must-not-see",
}
CONFINED_PLATFORM = platform.system() == "Linux" and platform.machine() in ("x86_64", "aarch64")


def run(work: Callable[[bytes], bytes], payload: bytes = b"", **bounds: Any) -> object:
    options: dict[str, Any] = {"timeout_seconds": 30, "memory_limit_bytes": None, **bounds}
    return run_in_child(work, payload, **options)


def answer_of(work: Callable[[bytes], bytes], payload: bytes = b"") -> dict[str, object]:
    answer = run(work, payload)
    assert isinstance(answer, bytes), answer
    decoded: dict[str, object] = json.loads(answer)
    return decoded


def attempt(action: Callable[[], object]) -> str:
    """'ok' or the error an action raised, for the parent to read."""
    try:
        action()
    except OSError as error:
        return f"{type(error).__name__}: errno {error.errno}"
    return "ok"


# --- work, run in the child ---------------------------------------------------------------------------------


def echo_reversed(payload: bytes) -> bytes:
    return payload[::-1]


def hang(payload: bytes) -> bytes:
    time.sleep(60)
    return b"never"


def large(payload: bytes) -> bytes:
    return b"x" * 100_000


def exit_seven(payload: bytes) -> bytes:
    os._exit(7)


def open_descriptors(payload: bytes) -> bytes:
    return json.dumps(sorted(int(name) for name in os.listdir("/proc/self/fd"))).encode()


def half_an_answer(payload: bytes) -> bytes:
    # An answer header announcing 100 bytes, then 10 of them, then death: a crash while answering.
    descriptors = [int(name) for name in os.listdir("/proc/self/fd")]
    pipe = max(descriptor for descriptor in descriptors if descriptor > 2)
    os.write(pipe, b"A" + struct.pack("!Q", 100) + b"0123456789")
    os._exit(3)


def babbling(payload: bytes) -> bytes:
    # Something a well-behaved child never says, then no end: the parent stops listening and kills it itself.
    descriptors = [int(name) for name in os.listdir("/proc/self/fd")]
    pipe = max(descriptor for descriptor in descriptors if descriptor > 2)
    os.write(pipe, b"?" + struct.pack("!Q", 4) + b"huh?")
    time.sleep(60)
    return b""


def environment_seen(payload: bytes) -> bytes:
    def parent_environment() -> bytes:
        with open(f"/proc/{os.getppid()}/environ", "rb") as environ:
            return environ.read()

    try:
        inherited = parent_environment().decode("utf-8", "replace")
    except OSError as error:
        inherited = f"refused: {error.errno}"
    return json.dumps({"environ": dict(os.environ), "parent_environ": inherited}).encode()


def sockets_opened(payload: bytes) -> bytes:
    return json.dumps(
        {
            "inet": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()),
            "inet_udp": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()),
            "inet6": attempt(lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()),
            "unix": attempt(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()),
            "socketpair": attempt(socket.socketpair),
        }
    ).encode()


def processes_started(payload: bytes) -> bytes:
    marker = Path(payload.decode())

    def fork() -> None:
        if os.fork() == 0:
            os._exit(0)

    results = {
        "fork": attempt(fork),
        "subprocess": attempt(lambda: subprocess.run(["/bin/sh", "-c", f"touch {marker}.subprocess"], check=False)),
        "posix_spawn": attempt(lambda: os.posix_spawn("/bin/sh", ["sh", "-c", f"touch {marker}.spawn"], {})),
        "execv": attempt(lambda: os.execv("/bin/sh", ["sh", "-c", f"touch {marker}.exec"])),  # noqa: S606 - under test
    }
    # os.system reports a failure to start as exit status 127, not an exception: the marker tells.
    os.system(f"touch {marker}.system")  # noqa: S605 - the attempt under test
    return json.dumps(results).encode()


def threads_work(payload: bytes) -> bytes:
    with ThreadPoolExecutor(max_workers=4) as pool:
        squares = list(pool.map(lambda n: n * n, range(8)))
    seen: list[str] = []
    thread = threading.Thread(target=lambda: seen.append(threading.current_thread().name), name="worker")
    thread.start()
    thread.join()
    return json.dumps({"squares": squares, "seen": seen}).encode()


def parent_memory_seen(payload: bytes) -> bytes:
    def parent_maps() -> None:
        with open(f"/proc/{os.getppid()}/maps", "rb") as maps:
            maps.read()

    def parent_memory() -> None:
        with open(f"/proc/{os.getppid()}/mem", "rb") as memory:
            memory.read(1)

    return json.dumps({"secret": PARENT_SECRET, "maps": attempt(parent_maps), "mem": attempt(parent_memory)}).encode()


def napping(payload: bytes) -> bytes:
    time.sleep(float(payload.decode()))
    return b"rested"


def siblings_read(payload: bytes) -> bytes:
    """Every other sandbox child of this one's parent it can find in /proc, and what reading its environment and
    memory gave (children of other processes on the machine, as another test run's, are not this test's)."""
    own, parent = os.getpid(), os.getppid()
    found: dict[str, dict[str, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (own, parent):
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as cmdline:
                if b"s._child_main()" not in cmdline.read():
                    continue
            with open(f"/proc/{name}/stat", "rb") as stat:
                if int(stat.read().rsplit(b")", 1)[1].split()[1]) != parent:
                    continue
        except (OSError, ValueError, IndexError):
            continue

        def environ(pid: str = name) -> None:
            with open(f"/proc/{pid}/environ", "rb") as environment:
                environment.read()

        def memory(pid: str = name) -> None:
            with open(f"/proc/{pid}/mem", "rb") as mem:
                mem.read(1)

        found[name] = {"environ": attempt(environ), "mem": attempt(memory)}
    return json.dumps(found).encode()


def signals_sent(payload: bytes) -> bytes:
    return json.dumps(
        {"parent": attempt(lambda: os.kill(os.getppid(), 0)), "everyone": attempt(lambda: os.kill(-1, 0))}
    ).encode()


def ranges_read(payload: bytes) -> bytes:
    first = parent_range(0, 5)
    try:
        parent_range(5, 10**9)
        refused = "no"
    except OSError:
        refused = "yes"
    return pack({"refused": refused}, first)


# --- the bounds and outcomes --------------------------------------------------------------------------------


def test_the_answer_comes_back_as_bytes() -> None:
    assert run(echo_reversed, b"done") == b"enod"


def test_a_child_past_the_wall_clock_is_stopped_and_said_to_be_late() -> None:
    begun = time.monotonic()
    assert run(hang, timeout_seconds=0.5) == TimedOut(0.5)
    assert time.monotonic() - begun < 15


def test_an_answer_over_the_limit_is_refused_not_read() -> None:
    assert run(large, max_answer_bytes=1000) == AnswerTooLarge(1000)


def test_a_child_that_dies_is_a_death_with_its_exit_code() -> None:
    assert run(exit_seven) == Died(7)


def test_a_child_that_dies_in_the_middle_of_its_answer_is_a_death_not_a_large_answer() -> None:
    assert run(half_an_answer) == Died(3)


def test_a_child_the_parent_had_to_kill_is_said_to_be_killed_here() -> None:
    # Its SIGKILL is the parent's, not the host's OOM killer's: the extractor fails the document, never retries it.
    died = run(babbling)
    assert isinstance(died, Died) and died.killed_here
    assert run(exit_seven) == Died(7, killed_here=False)


def test_work_that_cannot_be_named_is_refused_before_a_child_starts() -> None:
    # A lambda or a closure would carry the parent's state; the child imports its work by name.
    with pytest.raises(TypeError, match="module-level"):
        run(lambda payload: payload)


def test_the_child_reads_the_ranges_the_parent_serves_and_a_refused_range_is_its_oserror() -> None:
    stored = b"0123456789abcdef"

    def serve(start: int, length: int) -> bytes:
        if length > 100:
            raise OSError("past the budget")
        return stored[start : start + length]

    answer = run(ranges_read, ranges=serve)
    assert isinstance(answer, bytes)
    header, (first,) = unpack(answer)
    assert (first, header) == (b"01234", {"refused": "yes"})


# --- the boundary -------------------------------------------------------------------------------------------


def test_the_child_holds_no_descriptor_of_the_parent_but_its_pipes() -> None:
    parent_read, parent_write = os.pipe()
    try:
        answer = run(open_descriptors)
        assert isinstance(answer, bytes)
        open_in_child = json.loads(answer)
        assert parent_read not in open_in_child
        assert parent_write not in open_in_child
        assert len(open_in_child) <= 5  # stdin (the work pipe), stdout, stderr, the answer pipe, listdir's own
    finally:
        os.close(parent_read)
        os.close(parent_write)


def test_a_child_finds_no_credential_of_the_parent_in_its_environment_or_the_parents(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    seen = answer_of(environment_seen)
    environ = seen["environ"]
    assert isinstance(environ, dict)
    assert not [name for name in environ if name.startswith(("QUIRE_", "AWS_"))]
    # /proc/<parent>/environ holds what the parent was started with: refused, so no secret through it either.
    parent_environ = str(seen["parent_environ"])
    assert not any(value in parent_environ for value in SECRETS.values())
    if CONFINED_PLATFORM:
        assert parent_environ.startswith("refused")


@pytest.mark.skipif(not CONFINED_PLATFORM, reason="the seccomp filter is written for Linux on x86_64 and aarch64")
def test_a_child_cannot_open_a_socket_of_any_family() -> None:
    opened = answer_of(sockets_opened)
    assert opened == dict.fromkeys(("inet", "inet_udp", "inet6", "unix", "socketpair"), "PermissionError: errno 1")


@pytest.mark.skipif(not CONFINED_PLATFORM, reason="the seccomp filter is written for Linux on x86_64 and aarch64")
def test_a_child_cannot_start_a_process(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    results = answer_of(processes_started, str(marker).encode())
    assert results == dict.fromkeys(("fork", "subprocess", "posix_spawn", "execv"), "PermissionError: errno 1")
    assert list(tmp_path.iterdir()) == []  # and os.system ran nothing


def test_threads_still_work_in_the_child() -> None:
    assert answer_of(threads_work) == {"squares": [n * n for n in range(8)], "seen": ["worker"]}


def test_a_child_does_not_see_what_the_parent_holds_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}.PARENT_SECRET", "the-jwt-signing-key")
    seen = answer_of(parent_memory_seen)
    assert seen["secret"] is None  # a fresh interpreter: the module as imported, not the parent's copy
    if CONFINED_PLATFORM:
        assert seen["maps"] == seen["mem"] == "PermissionError: errno 13"


@pytest.mark.skipif(not CONFINED_PLATFORM, reason="the seccomp filter is written for Linux on x86_64 and aarch64")
def test_a_child_cannot_signal_the_parent_or_any_other_process() -> None:
    assert answer_of(signals_sent) == {"parent": "PermissionError: errno 1", "everyone": "PermissionError: errno 1"}


@pytest.mark.skipif(not CONFINED_PLATFORM, reason="the seccomp filter is written for Linux on x86_64 and aarch64")
def test_the_parent_knows_the_child_confined_itself() -> None:
    run(echo_reversed, b"x", memory_limit_bytes=256 * 1024 * 1024)
    confinement = last_confinement()
    assert confinement is not None
    assert (confinement.complete, confinement.memory_limited, confinement.detail) == (True, True, "")


@pytest.mark.skipif(not CONFINED_PLATFORM, reason="the sandbox's confinement is built for Linux on x86_64 and aarch64")
def test_a_child_cannot_read_another_childs_environment_or_memory() -> None:
    # Given another child at work at the same time (another document, maybe another tenant's)
    with ThreadPoolExecutor(max_workers=1) as pool:
        # It naps long enough for the second child to start and look (about a second), not much longer.
        sibling = pool.submit(run, napping, b"4.5")
        time.sleep(1.5)
        # When a second child looks for it in /proc
        seen = answer_of(siblings_read)
        assert sibling.result() == b"rested"
    # Then it finds it, and reading its environment or memory is refused
    assert seen, "the sibling child was not found: the probe saw nothing"
    for pid, reads in seen.items():
        assert isinstance(reads, dict)
        assert reads["environ"] != "ok" and reads["mem"] != "ok", (pid, reads)
