"""The child's side: what a fresh interpreter does to itself before it reads its input, then the work.

In order (what applied goes back to the parent, which logs what did not): die with the parent, non-dumpable,
no core, RLIMIT_CPU and RLIMIT_AS, no capability, PR_SET_NO_NEW_PRIVS, then the seccomp filter (seccomp.py).
RLIMIT_NPROC is not used: it counts threads and every process of the user, so it cannot stop a fork without
stopping the threads onnxruntime and numpy need; the filter does that instead (docs/security.md#the-parser-sandbox).
"""

import ctypes
import json
import os
import platform
import resource
from collections.abc import Mapping
from typing import Any

from shared.sandbox import seccomp
from shared.sandbox.linux import (
    PR_CAP_AMBIENT,
    PR_CAP_AMBIENT_CLEAR_ALL,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    libc,
    prctl,
)
from shared.sandbox.protocol import ANSWER, CONFINED, LENGTH, ChildState, read_exactly, resolve, send


def _child_main() -> None:
    """The child's entry point (parent.py's boot line): read the spec, confine, read the input, answer."""
    (length,) = LENGTH.unpack(read_exactly(0, LENGTH.size))
    spec = json.loads(read_exactly(0, length))
    ChildState.answer_fd = int(spec["answer_fd"])
    report = _confine(spec)
    send(CONFINED, json.dumps(report).encode())
    payload = read_exactly(0, spec["payload_bytes"])
    work = resolve(spec["work"])
    try:
        answer = work(payload)
    except MemoryError:
        answer = bytes.fromhex(spec["too_large"])
    del payload
    try:
        send(ANSWER, answer)
    except MemoryError:
        send(ANSWER, bytes.fromhex(spec["too_large"]))
    os.close(ChildState.answer_fd)


def _confine(spec: Mapping[str, Any]) -> dict[str, Any]:
    problems: list[str] = []
    prctl(PR_SET_PDEATHSIG, 9)
    # Non-dumpable, as the parent is: another child (another tenant's document, parsed at the same time) must not
    # read this one's /proc/<pid>/environ or mem, nor this one theirs.
    if prctl(PR_SET_DUMPABLE, 0) != 0:
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
    no_new_privileges = prctl(PR_SET_NO_NEW_PRIVS, 1) == 0
    if not no_new_privileges:
        problems.append(f"PR_SET_NO_NEW_PRIVS refused (errno {ctypes.get_errno()})")
    installed = no_new_privileges and seccomp.install(problems)
    return {
        "no_new_privileges": no_new_privileges,
        "seccomp": installed,
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


def _address_space_bytes() -> int:
    """This process's virtual size (Linux /proc); 0 where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


class _CapabilityHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapabilityData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities(problems: list[str]) -> bool:
    """No capability left: a parent running as root (a container) must not lend the child CAP_SYS_PTRACE
    or CAP_DAC_OVERRIDE. A non-root parent's child has none already, and this is a no-op."""
    arch = seccomp.ARCHITECTURES.get(platform.machine())
    if arch is None:
        problems.append(f"capabilities not dropped on {platform.machine()}")
        return False
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = _CapabilityHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words
    data = (_CapabilityData * 2)()
    if libc().syscall(ctypes.c_long(arch.capset), ctypes.byref(header), ctypes.byref(data)) != 0:
        problems.append(f"capset refused (errno {ctypes.get_errno()})")
        return False
    return True
