"""What every container reader shares: a bounded source, the walk's counters, what a reader finds, and how it
refuses (an exception inside the probe, a `MediaRefusal` value outside it)."""

import io
import struct
from dataclasses import dataclass, field
from typing import Literal, Protocol

from shared.domain.media import MediaLimits, MediaRefusal, MediaRefusalReason, refusal, spoken_bytes


class Refused(Exception):
    """A reader's refusal, turned into a `MediaRefusal` by the probe; never leaves it."""

    def __init__(self, reason: MediaRefusalReason, sentence: str) -> None:
        super().__init__(sentence)
        self.refusal: MediaRefusal = refusal(reason, sentence)


def malformed(sentence: str) -> Refused:
    return Refused(MediaRefusalReason.MALFORMED, sentence)


def truncated(sentence: str) -> Refused:
    return Refused(MediaRefusalReason.TRUNCATED, f"{sentence}: it was cut short (upload it again)")


@dataclass(frozen=True)
class Stream:
    kind: Literal["audio", "video"]
    codec: str | None
    channels: int = 0
    sample_rate: int = 0


@dataclass(frozen=True)
class Probed:
    """What a container reader found, before the limits are applied."""

    container: str
    media_type: str
    duration_seconds: float | None
    streams: tuple[Stream, ...]


class SeekableStream(Protocol):
    """What the probe needs of a stream: a file, io.BytesIO, a `RangedReader` over storage."""

    def seekable(self) -> bool: ...

    def seek(self, offset: int, whence: int = ..., /) -> int: ...

    def read(self, size: int = ..., /) -> bytes | None: ...


class Source:
    """Bytes, or a seekable binary stream, read at offsets. Every byte read counts against `max_header_bytes`;
    every element walked against `max_elements`. Seeking is free: a skipped box costs nothing."""

    def __init__(self, content: bytes | SeekableStream, limits: MediaLimits) -> None:
        self.limits = limits
        self._stream: SeekableStream | None = None
        self._content = b""
        if isinstance(content, bytes | bytearray | memoryview):
            self._content = bytes(content)
            self.size = len(self._content)
        else:
            if not content.seekable():
                raise ValueError("the media probe reads a seekable stream (or bytes)")
            self._stream = content
            self.size = content.seek(0, io.SEEK_END)
        self.bytes_read = 0
        self.elements = 0

    def read(self, offset: int, length: int) -> bytes:
        """Up to `length` bytes at `offset` (fewer at the end of the file)."""
        length = max(0, min(length, self.size - offset))
        if length == 0 or offset < 0:
            return b""
        if self.bytes_read + length > self.limits.max_header_bytes:
            raise Refused(
                MediaRefusalReason.TOO_COMPLEX,
                f"the file's headers take more than {spoken_bytes(self.limits.max_header_bytes)} to read, the most the"
                " probe reads",
            )
        self.bytes_read += length
        if self._stream is None:
            return self._content[offset : offset + length]
        self._stream.seek(offset)
        parts: list[bytes] = []
        wanted = length
        while wanted > 0:  # a raw stream may answer in pieces; each one is progress, or the end
            part = self._stream.read(wanted)
            if not part:
                break
            parts.append(part)
            wanted -= len(part)
        return b"".join(parts)

    def exact(self, offset: int, length: int, what: str) -> bytes:
        data = self.read(offset, length)
        if len(data) < length:
            raise truncated(f"the file ends inside its {what}")
        return data

    def tick(self, what: str = "boxes or elements") -> None:
        self.elements += 1
        if self.elements > self.limits.max_elements:
            raise Refused(
                MediaRefusalReason.TOO_COMPLEX,
                f"the file's structure has more than {self.limits.max_elements:,} {what}, the most the probe walks",
            )

    def deeper(self, depth: int) -> int:
        if depth + 1 > self.limits.max_depth:
            raise Refused(
                MediaRefusalReason.TOO_COMPLEX,
                f"the file's structure nests more than {self.limits.max_depth} levels deep, the most the probe follows",
            )
        return depth + 1


@dataclass
class Streams:
    """Streams as they are found, refused past the limit before any more are kept."""

    limit: int
    found: list[Stream] = field(default_factory=list)

    def add(self, stream: Stream) -> None:
        if len(self.found) >= self.limit:
            raise Refused(
                MediaRefusalReason.TOO_MANY_STREAMS,
                f"the file has at least {self.limit + 1} audio and video streams; the limit is {self.limit}",
            )
        self.found.append(stream)


def printable(code: bytes) -> str:
    """A four-character code as a sentence may quote it (a crafted one may hold any byte)."""
    return "".join(chr(byte) if 32 <= byte < 127 else "?" for byte in code)


def u16(data: bytes, offset: int, order: Literal["big", "little"] = "big") -> int:
    return int.from_bytes(data[offset : offset + 2], order)


def u32(data: bytes, offset: int, order: Literal["big", "little"] = "big") -> int:
    return int.from_bytes(data[offset : offset + 4], order)


def u64(data: bytes, offset: int, order: Literal["big", "little"] = "big") -> int:
    return int.from_bytes(data[offset : offset + 8], order)


def ebml_float(data: bytes) -> float | None:
    """An EBML float: four or eight bytes, big-endian; none for any other length."""
    if len(data) == 4:
        return float(struct.unpack(">f", data)[0])
    if len(data) == 8:
        return float(struct.unpack(">d", data)[0])
    return None
