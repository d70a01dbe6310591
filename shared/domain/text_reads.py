"""Bounded reads of a text file's own bytes (seeds/000 "Attachments in context"): at most 32 KiB a call, a larger
request clamped rather than refused, the offset to continue from reported, and only an exact list of media types
decoded as text. Everything else is read through its extracted document, which the refusal names."""

import codecs

from charset_normalizer import from_bytes
from pydantic import BaseModel, ConfigDict

MAX_TEXT_READ_BYTES = 32 * 1024
# Types whose bytes are the text a reader wants. HTML is text too, but its markup is not what it says: it is read
# through its extracted document, like PDFs, Office files and images.
TEXT_READ_MEDIA_TYPES = frozenset({"text/plain", "text/markdown", "text/csv"})
# A UTF-8 character is at most four bytes: a slice ending inside one gives back at most three.
_MAX_PARTIAL_CHARACTER = 3


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
    return offset, min(length + _MAX_PARTIAL_CHARACTER, total_bytes - offset)


def decode_slice(raw: bytes, *, offset: int, limit: int, total_bytes: int) -> TextSlice:
    """The text of `raw` (read from `offset`), ending on a character boundary at or before the bound."""
    wanted = min(limit, MAX_TEXT_READ_BYTES, len(raw))
    text, used, encoding = _decode_utf8(raw, wanted)
    if text is None:
        # Not UTF-8: a single-byte guess for the slice (every byte is a character, so any cut is a boundary).
        encoding = _single_byte_encoding(raw[:wanted])
        used = wanted
        text = raw[:used].decode(encoding, errors="replace")
    end = offset + used
    return TextSlice(
        text=text,
        offset=offset,
        byte_length=used,
        next_offset=end if end < total_bytes else None,
        total_bytes=total_bytes,
        encoding=encoding,
    )


def _decode_utf8(raw: bytes, wanted: int) -> tuple[str | None, int, str]:
    """UTF-8 text up to the last whole character within `wanted` bytes (None when the bytes are not UTF-8). A
    bound smaller than one character takes that one character whole, so reading always advances."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    try:
        text = decoder.decode(raw[:wanted], final=False)
        pending = len(decoder.getstate()[0])
        if pending and not text:
            end = _character_length(raw[0])
            return raw[:end].decode("utf-8"), end, "utf-8"
        if pending and wanted == len(raw):
            # The file ends inside a character: that is not UTF-8.
            return None, 0, "utf-8"
        return text, wanted - pending, "utf-8"
    except UnicodeDecodeError:
        return None, 0, "utf-8"


def _character_length(lead: int) -> int:
    return 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4


def _single_byte_encoding(raw: bytes) -> str:
    best = from_bytes(raw).best()
    if best is not None and codecs.lookup(best.encoding).name in _SINGLE_BYTE:
        return codecs.lookup(best.encoding).name
    return "cp1252"


_SINGLE_BYTE = frozenset(
    codecs.lookup(name).name
    for name in ("cp1252", "latin_1", "iso8859_15", "cp1250", "cp1251", "iso8859_2", "iso8859_5", "koi8_r", "mac_roman")
)
