"""Is this pid still the process we started? A pid from a file is only a hint: pids are reused.

Every signal the local runtime sends goes to a pid whose command line proves it is ours.
"""

import os


def is_running(pid: int) -> bool:
    """True for a live process; false for no process or a zombie (dead, waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def command_line(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return [part.decode(errors="replace") for part in cmdline.read().split(b"\0") if part]
    except OSError:
        return []


def is_our_process(pid: int, *expected: str) -> bool:
    """A live process whose command line contains every `expected` argument, in order."""
    if pid <= 1 or pid == os.getpid() or not is_running(pid):
        return False
    arguments = command_line(pid)
    position = 0
    for argument in arguments:
        if position < len(expected) and argument == expected[position]:
            position += 1
    return position == len(expected)


def find_processes(*expected: str) -> list[int]:
    """Every live process whose command line contains the `expected` arguments, in order."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and is_our_process(int(entry), *expected)]
