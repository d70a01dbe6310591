"""Run work on hostile input in a child process: bounded from the outside, and cut off from the parent.

The child is a fresh interpreter, never a fork, holding nothing of the parent (no credentials, no memory, no
socket); it confines itself before it reads its input (confine.py, seccomp.py), and the parent enforces the
wall clock and reads its answer as bytes to validate (parent.py, protocol.py); callers use `sandboxed`
(outcomes.py), which names what each end means. docs/security.md#the-parser-sandbox says what each layer stops.
"""

from shared.sandbox.outcomes import Crashed, Failure, KilledFromOutside, OutOfMemory, Unreadable, death, sandboxed
from shared.sandbox.parent import AnswerTooLarge, Confinement, Died, TimedOut, last_confinement, run_in_child
from shared.sandbox.protocol import dotted_name, pack, parent_range, resolve, unpack
from shared.sandbox.seccomp import seccomp_program

__all__ = [
    "AnswerTooLarge",
    "Confinement",
    "Crashed",
    "Died",
    "Failure",
    "KilledFromOutside",
    "OutOfMemory",
    "TimedOut",
    "Unreadable",
    "death",
    "dotted_name",
    "last_confinement",
    "pack",
    "parent_range",
    "resolve",
    "run_in_child",
    "sandboxed",
    "seccomp_program",
    "unpack",
]
