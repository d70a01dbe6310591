"""Bytes → text for the text formats: byte-order marks, then strict UTF-8, then detection."""

from dataclasses import dataclass


@dataclass(frozen=True)
class DecodedText:
    text: str
    encoding: str
    warning: str | None = None


def decode_text(content: bytes) -> DecodedText:
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if content.startswith(bom):
            return DecodedText(content.decode(codec, errors="replace"), codec)
    try:
        return DecodedText(content.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(content[: 256 * 1024]).best()
    encoding = best.encoding if best is not None else "cp1252"
    try:
        text = content.decode(encoding, errors="replace")
    except LookupError:
        encoding, text = "cp1252", content.decode("cp1252", errors="replace")
    return DecodedText(text, encoding, f"the text is not UTF-8; it was read as {encoding}")
