"""Work on hostile input in a child: its answer, or how it failed to give one, within the wall clock."""

import json
import os
import time

from shared.sandbox import AnswerTooLarge, Died, TimedOut, run_in_child


def test_the_answer_comes_back_as_bytes() -> None:
    assert run_in_child(lambda: b"done", timeout_seconds=10, memory_limit_bytes=None) == b"done"


def test_a_child_past_the_wall_clock_is_stopped_and_said_to_be_late() -> None:
    def hang() -> bytes:
        time.sleep(60)
        return b"never"

    begun = time.monotonic()
    assert run_in_child(hang, timeout_seconds=0.5, memory_limit_bytes=None) == TimedOut(0.5)
    assert time.monotonic() - begun < 15


def test_an_answer_over_the_limit_is_refused_not_read() -> None:
    answer = run_in_child(lambda: b"x" * 100_000, timeout_seconds=10, memory_limit_bytes=None, max_answer_bytes=1000)
    assert answer == AnswerTooLarge(1000)


def test_a_child_that_dies_is_a_death_with_its_exit_code() -> None:
    def crash() -> bytes:
        os._exit(7)

    assert run_in_child(crash, timeout_seconds=10, memory_limit_bytes=None) == Died(7)


def test_the_child_holds_no_descriptor_of_the_parent_but_its_answer_pipe() -> None:
    parent_read, parent_write = os.pipe()
    try:

        def count_open() -> bytes:
            return json.dumps(sorted(int(name) for name in os.listdir("/proc/self/fd"))).encode()

        answer = run_in_child(count_open, timeout_seconds=10, memory_limit_bytes=None)
        assert isinstance(answer, bytes)
        open_in_child = json.loads(answer)
        assert parent_read not in open_in_child and parent_write not in open_in_child
    finally:
        os.close(parent_read)
        os.close(parent_write)


def test_a_child_that_dies_in_the_middle_of_its_answer_is_a_death_not_a_large_answer() -> None:
    import struct

    def half_an_answer() -> bytes:
        # Write a message header announcing 100 bytes, send 10, and die: a crash while answering.
        descriptors = [int(name) for name in os.listdir("/proc/self/fd")]
        pipe = max(descriptor for descriptor in descriptors if descriptor > 2)
        os.write(pipe, struct.pack("!i", 100) + b"0123456789")
        os._exit(3)

    assert run_in_child(half_an_answer, timeout_seconds=10, memory_limit_bytes=None) == Died(3)
