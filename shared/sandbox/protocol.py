"""The wire between the parent and its child, which both sides import.

The work pipe (the child's stdin) carries the spec, the input and the parent's replies to range requests; the
answer pipe carries the child's frames (a kind, a length, a body). What work takes and answers is `pack`ed:
bytes the receiver validates, never a pickle.
"""

import importlib
import json
import os
import struct
from collections.abc import Callable, Mapping
from typing import Any

LENGTH = struct.Struct("!Q")
RANGE = struct.Struct("!QQ")
NO_RANGE = (1 << 64) - 1
# Message kinds, child → parent.
CONFINED, ANSWER, RANGE_REQUEST = b"C", b"A", b"R"


# The child's end of the answer pipe, told in its spec (stdin is the work pipe; stdout goes nowhere; stderr
# is kept for the log).
class ChildState:
    answer_fd = -1


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
    os.write(ChildState.answer_fd, RANGE_REQUEST + LENGTH.pack(RANGE.size) + RANGE.pack(start, length))
    (size,) = LENGTH.unpack(read_exactly(0, LENGTH.size))
    if size == NO_RANGE:
        raise OSError("the parent refused this range (past the object's sniffing budget)")
    return read_exactly(0, size)


def send(kind: bytes, body: bytes) -> None:
    """In the child: one frame on the answer pipe."""
    header = kind + LENGTH.pack(len(body))
    view, at = memoryview(body), 0
    os.write(ChildState.answer_fd, header)
    while at < len(body):
        at += os.write(ChildState.answer_fd, view[at : at + 1024 * 1024])


def read_exactly(descriptor: int, length: int) -> bytes:
    buffer, at = bytearray(length), 0
    view = memoryview(buffer)
    while at < length:
        got = os.readv(descriptor, [view[at:]])
        if not got:
            raise EOFError("the parent closed the work pipe")
        at += got
    return bytes(buffer)
