"""Bounded reads of a text file's own bytes: at most 32 KiB a call, a larger
request clamped rather than refused, the offset to continue from reported, and only an exact list of media types
decoded as text. Everything else is read through its extracted document, which the refusal names.

A slice never ends inside a character: the offset a read reports is always where the next character starts."""

import codecs

from pydantic import BaseModel, ConfigDict

MAX_TEXT_READ_BYTES = 32 * 1024
# Types whose bytes are the text a reader wants. HTML is text too, but its markup is not what it says: it is read
# through its extracted document, like PDFs, Office files and images.
TEXT_READ_MEDIA_TYPES = frozenset({"text/plain", "text/markdown", "text/csv"})
# Enough of the file's start to tell its encoding (a byte-order mark, or whether it is UTF-8).
ENCODING_PROBE_BYTES = 4096
# A character is at most four bytes (UTF-8) or one surrogate pair (UTF-16): a cut gives back at most three.
_MAX_PARTIAL_CHARACTER = 3
# Fetched past the bound: a whole character after a byte-order mark, for a bound smaller than both.
_FETCH_ROOM = 3 + 4
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
# What an 8-bit file that is not UTF-8 is read as here (every byte is a character, so any cut is a boundary). The
# extracted document (extract_text) holds the detected encoding's reading.
SINGLE_BYTE_FALLBACK = "cp1252"


class TextSlice(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    offset: int
    # Bytes of the file this slice covers (a character cut by the bound is left whole for the next read).
    byte_length: int
    next_offset: int | None  # None: the file ends here
    total_bytes: int
    encoding: str


def clamp_read(offset: int, limit: int, total_bytes: int) -> tuple[int, int]:
    """The byte range (start, length) to fetch: at most MAX_TEXT_READ_BYTES, plus room to finish a character."""
    if offset < 0 or limit < 1:
        raise ValueError("offset must be 0 or more and limit 1 or more")
    if offset > total_bytes:
        raise ValueError(f"offset {offset} is past the end of the file ({total_bytes} bytes)")
    length = min(limit, MAX_TEXT_READ_BYTES)
    return offset, min(length + _FETCH_ROOM, total_bytes - offset)


def detect_encoding(head: bytes, *, whole_file: bool) -> str:
    """The encoding of a file from its first bytes: a byte-order mark, else UTF-8 when they are UTF-8 (a character
    cut at the end of a probe is allowed), else the single-byte fallback."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    try:
        decoder.decode(head, final=whole_file)
    except UnicodeDecodeError:
        return SINGLE_BYTE_FALLBACK
    return "utf-8"


def decode_slice(raw: bytes, *, offset: int, limit: int, total_bytes: int, encoding: str) -> TextSlice:
    """The text of `raw` (read from `offset`), ending on a character boundary at or before the bound; a bound
    smaller than one character takes that character whole, so reading always advances."""
    wanted = min(limit, MAX_TEXT_READ_BYTES, len(raw))
    bom = _bom_length(encoding) if offset == 0 else 0
    if encoding.startswith("utf-16"):
        if offset % 2:
            raise ValueError(
                f"offset {offset} is inside a character of this UTF-16 file: use an offset a read reported"
            )
        used = _utf16_boundary(raw, wanted, big_endian=encoding.endswith("be"))
    elif encoding.startswith("utf-8"):
        if raw[:1] and raw[0] & 0xC0 == 0x80:
            raise ValueError(f"offset {offset} is inside a character of this UTF-8 file: use an offset a read reported")
        used = _utf8_boundary(raw, wanted)
    else:
        used = wanted
    if used <= bom:
        # Nothing whole within the bound: the mark and one whole character (or the mark alone, at the end).
        used = bom + _whole_character(raw[bom:], encoding) if len(raw) > bom else len(raw)
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    text = raw[bom:used].decode(codec, errors="replace")
    end = offset + used
    return TextSlice(
        text=text,
        offset=offset,
        byte_length=used,
        next_offset=end if end < total_bytes else None,
        total_bytes=total_bytes,
        encoding=encoding,
    )


def _bom_length(encoding: str) -> int:
    return {"utf-8-sig": 3, "utf-16-le": 2, "utf-16-be": 2}.get(encoding, 0)


def _utf8_boundary(raw: bytes, wanted: int) -> int:
    """The last character boundary at or before `wanted` (a continuation byte is 0b10xxxxxx)."""
    end = wanted
    if end >= len(raw):
        return end
    while end > 0 and wanted - end < _MAX_PARTIAL_CHARACTER + 1 and raw[end] & 0xC0 == 0x80:
        end -= 1
    return end


def _utf16_boundary(raw: bytes, wanted: int, *, big_endian: bool) -> int:
    end = wanted - wanted % 2
    if end >= len(raw) or end < 2:
        return end
    last = raw[end - 2 : end]
    unit = int.from_bytes(last, "big" if big_endian else "little")
    # A high surrogate's pair is cut: leave both halves for the next read.
    return end - 2 if 0xD800 <= unit <= 0xDBFF else end


def _whole_character(raw: bytes, encoding: str) -> int:
    if encoding.startswith("utf-16"):
        unit = int.from_bytes(raw[:2], "big" if encoding.endswith("be") else "little")
        return min(len(raw), 4 if 0xD800 <= unit <= 0xDBFF else 2)
    if encoding.startswith("utf-8"):
        lead = raw[0]
        return min(len(raw), 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4)
    return 1
