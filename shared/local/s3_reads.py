"""An object's bytes sent a MiB at a time from its file, never whole in memory.

moto's GET reads a key's whole value (`key.value`), slices it for a Range and answers with it: a 100-byte ranged
read of a 1 GB object held the gigabyte. Inside `streamed_reads()` (a GET of an object's bytes, as
`DurableRequests` serves it), a stored version's whole read is instead a `FileView`: what moto does with the value
(its length, a slice for the Range, the response's body) works on the view, and the body is read from the open file
as it is sent. The file is opened when moto reads the value, so a version deleted meanwhile is still sent whole.
"""

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

_CHUNK = 1 << 20
_reads = threading.local()


@contextmanager
def streamed_reads() -> Iterator[None]:
    _reads.streamed = True
    try:
        yield
    finally:
        _reads.streamed = False


def reads_are_streamed() -> bool:
    return bool(getattr(_reads, "streamed", False))


class FileView:
    """Bytes `start` to `stop` of an open file, as much of `bytes` as moto's GET uses."""

    def __init__(self, handle: BinaryIO, start: int, stop: int) -> None:
        self._handle = handle
        self._start = start
        self._stop = max(start, stop)

    @classmethod
    def open(cls, path: Path, start: int) -> "FileView":
        handle = path.open("rb")  # FileNotFoundError for bytes that are gone: the caller's to say
        return cls(handle, start, os.fstat(handle.fileno()).st_size)

    def __len__(self) -> int:
        return self._stop - self._start

    def __getitem__(self, index: slice) -> "FileView":
        if not isinstance(index, slice) or index.step not in (None, 1):
            raise TypeError("a view of a stored object is sliced by a contiguous range only")
        span = range(self._start, self._stop)[index]
        return FileView(self._handle, span.start, span.stop)

    def __copy__(self) -> "FileView":
        return self  # moto copies the value it reads; a view of an immutable version is its own copy

    def __iter__(self) -> Iterator[bytes]:
        position = self._start
        while position < self._stop:
            chunk = os.pread(self._handle.fileno(), min(_CHUNK, self._stop - position), position)
            if not chunk:
                return
            position += len(chunk)
            yield chunk

    def __bytes__(self) -> bytes:
        return b"".join(self)

    def close(self) -> None:
        """Called by the server once the body is sent (or the client went away)."""
        self._handle.close()
