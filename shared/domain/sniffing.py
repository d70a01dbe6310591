"""Does the content agree with its declared type? Decided from the bytes, never from the name or header.

A declared type is a claim; the magic numbers and the container's structure are evidence. SVG, HTML
and script are never accepted as images, markup never as plain text, and an arbitrary zip never as an
Office document. Bounded: the first 8 KB of anything; of a zip, its end record (entry count and
directory size checked before anything is built), its directory and one small member, never the rest.
"""

import io
import re
import zipfile
from typing import BinaryIO

from shared.domain.uploads import AcceptedType

_MAX_CONTENT_TYPES_XML = 1024 * 1024
# Real Office files have hundreds of parts; their directory is kilobytes.
MAX_ARCHIVE_ENTRIES = 10_000
MAX_ARCHIVE_DIRECTORY_BYTES = 4 * 1024 * 1024
# The end-of-directory record is 22 bytes plus a comment of at most 65,535.
_EOCD_SEARCH = 22 + 65_535
# Enough for every signature and text check below.
SNIFF_PREFIX_BYTES = 8192
_OOXML_MAIN_PART = {
    "docx": ("word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"),
    "xlsx": ("xl/workbook.xml", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"),
    "pptx": (
        "ppt/presentation.xml",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
    ),
}
_MARKUP_START = re.compile(
    rb"^(?:\xef\xbb\xbf)?\s*<(?:!doctype\s+html|html|head|body|script|svg|\?xml|iframe|object|embed)\b",
    re.IGNORECASE,
)
# Anywhere in a text upload's first 8 KB, these make it live markup rather than text: documents,
# embedding elements and event handlers inside a tag. (`<name here>`, `List<String>` and `a<b>c` are text.)
_ACTIVE_CONTENT = re.compile(
    rb"<\s*(?:script|iframe|object|embed|svg|html|body|frameset)\b"
    rb"|<!doctype\s+html"
    rb"|<[a-z][a-z0-9-]*\s[^<>]*\bon[a-z]+\s*=",
    re.IGNORECASE,
)
_LABELS = {
    "pdf": "a PDF",
    "png": "a PNG image",
    "jpeg": "a JPEG image",
    "tiff": "a TIFF image",
    "docx": "a Word document (.docx)",
    "xlsx": "an Excel workbook (.xlsx)",
    "pptx": "a PowerPoint presentation (.pptx)",
    "text": "plain text",
    "markdown": "Markdown text",
    "csv": "CSV text",
    "html": "HTML text",
}


def describe(content: bytes) -> str:
    """What the bytes look like, for the rejection message."""
    head = content[:2048]
    if b"%PDF-" in head[:1024]:
        return "a PDF"
    for magic, label in (
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"II*\x00", "a TIFF image"),
        (b"MM\x00*", "a TIFF image"),
        (b"GIF8", "a GIF image"),
        (b"PK\x03\x04", "a zip archive"),
        (b"\xd0\xcf\x11\xe0", "a legacy Office (OLE) file"),
    ):
        if head.startswith(magic):
            return label
    if _MARKUP_START.match(head):
        return "HTML, XML or SVG markup"
    if b"\x00" in head:
        return "binary data"
    return "text"


def is_archive_type(accepted: AcceptedType) -> bool:
    """Office files need more than the first SNIFF_PREFIX_BYTES: their zip directory is at the end."""
    return accepted.kind in _OOXML_MAIN_PART


def mismatch(content: bytes, accepted: AcceptedType) -> str | None:
    """None when the content is what was declared; otherwise the sentence the uploader will read."""
    if _matches(content, accepted):
        return None
    declared = f"{_LABELS[accepted.kind]} as declared ({accepted.media_type})"
    return f"the content is not {declared}: it looks like {describe(content)}"


_IMAGE_MAGIC: dict[str, tuple[bytes, ...]] = {
    "png": (b"\x89PNG\r\n\x1a\n",),
    "jpeg": (b"\xff\xd8\xff",),
    "tiff": (b"II*\x00", b"MM\x00*"),
}


def _matches(content: bytes, accepted: AcceptedType) -> bool:
    head = content[:2048]
    kind = accepted.kind
    if kind == "pdf":
        return b"%PDF-" in head[:1024]
    if kind in _IMAGE_MAGIC:
        return head.startswith(_IMAGE_MAGIC[kind])
    if kind in _OOXML_MAIN_PART:
        return _is_ooxml(content, kind)
    return _is_text(content, kind)


def _is_text(content: bytes, kind: str) -> bool:
    prefix = _as_utf8(content[:SNIFF_PREFIX_BYTES])
    if prefix is None or b"\x00" in prefix:
        return False  # binary, or UTF-16 that does not decode
    if kind == "html":
        return True  # HTML is stored as a document and only ever served as an opaque attachment
    # Text, CSV and Markdown may mention tags; they may not be a markup document or carry live script.
    return not (_MARKUP_START.match(prefix) or _ACTIVE_CONTENT.search(prefix))


def _as_utf8(prefix: bytes) -> bytes | None:
    """UTF-16 text (with its byte-order mark) is text, though every other byte of it is NUL."""
    for bom, codec in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if prefix.startswith(bom):
            body = prefix[len(bom) :]
            body = body[: len(body) - len(body) % 2]
            try:
                # The prefix may end inside a surrogate pair: drop at most one unit and try again.
                return body.decode(codec).encode("utf-8")
            except UnicodeDecodeError:
                try:
                    return body[:-2].decode(codec).encode("utf-8")
                except UnicodeDecodeError:
                    return None
    return prefix


def _is_ooxml(content: bytes, kind: str) -> bool:
    return content.startswith(b"PK\x03\x04") and _archive_is_ooxml(io.BytesIO(content), len(content), kind)


def archive_mismatch(archive: BinaryIO, size: int, prefix: bytes, accepted: AcceptedType) -> str | None:
    """`mismatch` for an Office file read through a seekable stream (only its directory and one member)."""
    if prefix.startswith(b"PK\x03\x04") and _archive_is_ooxml(archive, size, accepted.kind):
        return None
    declared = f"{_LABELS[accepted.kind]} as declared ({accepted.media_type})"
    return f"the content is not {declared}: it looks like {describe(prefix)}"


def _directory_within_bounds(archive: BinaryIO, size: int) -> bool:
    """Read the end-of-directory record before building anything: a zip of a million empty entries is
    a memory bomb for ZipFile, whatever its byte size."""
    tail_length = min(size, _EOCD_SEARCH)
    archive.seek(size - tail_length)
    tail = archive.read(tail_length)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) < at + 22:
        return False
    if at >= 20 and tail[at - 20 : at - 16] == b"PK\x06\x07":
        # A ZIP64 locator: zipfile would trust its counts over these. No Office document needs ZIP64.
        return False
    entries = int.from_bytes(tail[at + 10 : at + 12], "little")
    directory_size = int.from_bytes(tail[at + 12 : at + 16], "little")
    return 0 < entries <= MAX_ARCHIVE_ENTRIES and directory_size <= MAX_ARCHIVE_DIRECTORY_BYTES


def _archive_is_ooxml(archive: BinaryIO, size: int, kind: str) -> bool:
    main_part, main_type = _OOXML_MAIN_PART[kind]
    try:
        if not _directory_within_bounds(archive, size):
            return False
        archive.seek(0)
        with zipfile.ZipFile(archive) as opened:
            names = set(opened.namelist())
            if "[Content_Types].xml" not in names or main_part not in names:
                return False
            info = opened.getinfo("[Content_Types].xml")
            # Bounded by what is fetched (compressed) as well as by what it claims to inflate to.
            if (
                info.file_size > _MAX_CONTENT_TYPES_XML
                or info.compress_size > _MAX_CONTENT_TYPES_XML
                or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
            ):
                return False
            with opened.open(info) as member:
                # Read what was inflated, not what the header claims: one byte past the cap is enough.
                types = member.read(_MAX_CONTENT_TYPES_XML + 1)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, NotImplementedError, EOFError):
        return False
    # A macro-enabled document (.docm) declares a different main type: not what was declared.
    return len(types) <= _MAX_CONTENT_TYPES_XML and main_type.encode() in types
