"""Does the content agree with its declared type? Decided from the bytes, never from the name or header.

A declared type is a claim; the magic numbers and the container's structure are evidence. SVG, HTML
and script are never accepted as images, HTML never as plain text, and an arbitrary zip never as an
Office document. Bounded: only names and one small member of a zip are read, never its contents.
"""

import io
import re
import zipfile

from shared.domain.uploads import AcceptedType

_MAX_CONTENT_TYPES_XML = 1024 * 1024
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


def needs_whole_object(accepted: AcceptedType) -> bool:
    """Only Office files need more than the first SNIFF_PREFIX_BYTES: their zip directory is at the end."""
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
    prefix = _as_utf8(content[:SNIFF_PREFIX_BYTES])
    is_text = b"\x00" not in prefix
    # HTML is stored as a document (and served as an opaque attachment); the other text kinds must not
    # be a document of markup dressed up as text.
    return is_text if kind == "html" else is_text and not _MARKUP_START.match(prefix)


def _as_utf8(prefix: bytes) -> bytes:
    """UTF-16 text (with its byte-order mark) is text, though every other byte of it is NUL."""
    for bom, codec in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if prefix.startswith(bom):
            return prefix[len(bom) :].decode(codec, errors="replace").encode("utf-8")
    return prefix


def _is_ooxml(content: bytes, kind: str) -> bool:
    if not content.startswith(b"PK\x03\x04"):
        return False
    main_part, main_type = _OOXML_MAIN_PART[kind]
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            names = set(archive.namelist())
            if "[Content_Types].xml" not in names or main_part not in names:
                return False
            info = archive.getinfo("[Content_Types].xml")
            if info.file_size > _MAX_CONTENT_TYPES_XML:
                return False
            with archive.open(info) as member:
                # Read what was inflated, not what the header claims: one byte past the cap is enough.
                types = member.read(_MAX_CONTENT_TYPES_XML + 1)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, NotImplementedError):
        return False
    # A macro-enabled document (.docm) declares a different main type: not what was declared.
    return len(types) <= _MAX_CONTENT_TYPES_XML and main_type.encode() in types
