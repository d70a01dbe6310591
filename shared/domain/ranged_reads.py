"""A seekable, read-only file over bytes fetched range by range: the zip directory of an Office upload is read
this way (never the whole object), by the parent from storage and by the sandbox's child from the parent."""

import io
from abc import abstractmethod
from typing import Any


class RangedReader(io.RawIOBase):
    """`size` bytes, read through `_fetch(start, length)`; subclasses say where the bytes come from."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._position = 0

    @abstractmethod
    def _fetch(self, start: int, length: int) -> bytes: ...

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: Any) -> int:
        wanted = min(len(buffer), self._size - self._position)
        if wanted <= 0:
            return 0
        chunk = self._fetch(self._position, wanted)
        buffer[: len(chunk)] = chunk
        self._position += len(chunk)
        return len(chunk)
