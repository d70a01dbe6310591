"""prctl through libc, for what Python's standard library does not offer: the parent's and the child's
non-dumpable flag, and the child's confinement (shared/sandbox/confine.py)."""

import ctypes
import functools
import sys
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4


@functools.cache
def libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def prctl(option: int, value: int, pointer: Any = None) -> int:
    if sys.platform != "linux":
        return -1
    call = libc().prctl
    call.restype = ctypes.c_int
    third = pointer if pointer is not None else ctypes.c_ulong(0)
    result: int = call(ctypes.c_int(option), ctypes.c_ulong(value), third, ctypes.c_ulong(0), ctypes.c_ulong(0))
    return result
