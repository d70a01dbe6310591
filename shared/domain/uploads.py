"""What may be uploaded, under which name, and where its bytes live. Pure rules, no I/O."""

import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import quote
from uuid import UUID

from shared.domain.errors import InvalidRequest, PayloadTooLarge, UnsupportedMediaType

MAX_FILENAME_CHARS = 255


@dataclass(frozen=True)
class AcceptedType:
    media_type: str
    extensions: tuple[str, ...]
    kind: str


# An exact list: no wildcards (image/* is how an SVG becomes an "image"), no SVG, no HTML as an image.
ACCEPTED_TYPES: tuple[AcceptedType, ...] = (
    AcceptedType("application/pdf", (".pdf",), "pdf"),
    AcceptedType("application/vnd.openxmlformats-officedocument.wordprocessingml.document", (".docx",), "docx"),
    AcceptedType("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", (".xlsx",), "xlsx"),
    AcceptedType("application/vnd.openxmlformats-officedocument.presentationml.presentation", (".pptx",), "pptx"),
    AcceptedType("text/plain", (".txt", ".text", ".log"), "text"),
    AcceptedType("text/markdown", (".md", ".markdown"), "markdown"),
    AcceptedType("text/csv", (".csv",), "csv"),
    AcceptedType("text/html", (".html", ".htm"), "html"),
    AcceptedType("image/png", (".png",), "png"),
    AcceptedType("image/jpeg", (".jpg", ".jpeg"), "jpeg"),
    AcceptedType("image/tiff", (".tif", ".tiff"), "tiff"),
    # Recordings (issue 35): transcribed, and cited to the second. A video is read for its audio track only.
    AcceptedType("audio/wav", (".wav",), "audio"),
    AcceptedType("audio/mpeg", (".mp3",), "audio"),
    # One type per extension: an audio-only .mp4 or .webm is declared as the video type, whose container family
    # (shared/domain/media.py) its bytes belong to.
    AcceptedType("audio/mp4", (".m4a",), "audio"),
    AcceptedType("audio/flac", (".flac",), "audio"),
    AcceptedType("audio/ogg", (".ogg", ".oga", ".opus"), "audio"),
    AcceptedType("audio/webm", (".weba",), "audio"),
    AcceptedType("video/mp4", (".mp4", ".m4v"), "video"),
    AcceptedType("video/quicktime", (".mov",), "video"),
    AcceptedType("video/webm", (".webm",), "video"),
    AcceptedType("video/x-matroska", (".mkv",), "video"),
)
_BY_MEDIA_TYPE = {accepted.media_type: accepted for accepted in ACCEPTED_TYPES}
# The accepted images (OCR and vision read them), and what a rescan can OCR again: images and PDFs.
IMAGE_TYPES = frozenset(accepted.media_type for accepted in ACCEPTED_TYPES if accepted.media_type.startswith("image/"))
SCANNABLE_TYPES = IMAGE_TYPES | {"application/pdf"}
# Recordings: transcribed rather than extracted; past the single POST they go by parts, up to their own limit.
MEDIA_KINDS = frozenset({"audio", "video"})
RECORDING_TYPES = frozenset(accepted.media_type for accepted in ACCEPTED_TYPES if accepted.kind in MEDIA_KINDS)
# Formats people have files in that are not read, with the conversion that makes them readable: a refusal that
# names the fix is not retried as it is (by media type, then by extension, as browsers often send neither well).
_WORD, _SHEET, _SLIDES = ("a Word document", ".docx"), ("a spreadsheet", ".xlsx"), ("a presentation", ".pptx")
_CONVERTIBLE: dict[str, tuple[str, str]] = {
    "application/msword": _WORD,
    ".doc": _WORD,
    "application/rtf": _WORD,
    "text/rtf": _WORD,
    ".rtf": _WORD,
    "application/vnd.oasis.opendocument.text": _WORD,
    ".odt": _WORD,
    "application/vnd.ms-excel": _SHEET,
    ".xls": _SHEET,
    "application/vnd.oasis.opendocument.spreadsheet": _SHEET,
    ".ods": _SHEET,
    "application/vnd.ms-powerpoint": _SLIDES,
    ".ppt": _SLIDES,
    "application/vnd.oasis.opendocument.presentation": _SLIDES,
    ".odp": _SLIDES,
}


def accepted_type(media_type: str, filename: str) -> AcceptedType:
    """The accepted type for a declared media type and filename, or UnsupportedMediaType naming the list (and,
    for a format that converts to one, the conversion)."""
    accepted = _BY_MEDIA_TYPE.get(media_type.strip().lower())
    if accepted is None:
        listed = ", ".join(sorted(_BY_MEDIA_TYPE))
        convertible = _CONVERTIBLE.get(media_type.strip().lower()) or _CONVERTIBLE.get(_extension(filename))
        if convertible is not None:
            what, extension = convertible
            raise UnsupportedMediaType(
                f"this format of {what} is not read: save it as {extension} (or export a PDF) and upload that;"
                f" accepted types: {listed}"
            )
        raise UnsupportedMediaType(f"media type {media_type!r} is not accepted; accepted types: {listed}")
    extension = _extension(filename)
    if extension not in accepted.extensions:
        named = extension or "no extension"
        expected = " or ".join(accepted.extensions)
        raise UnsupportedMediaType(f"a {accepted.media_type} file must be named {expected}, not {named}")
    return accepted


def _extension(filename: str) -> str:
    stem, dot, suffix = filename.rpartition(".")
    return f".{suffix.lower()}" if dot and stem else ""


# Controls, separators, line/paragraph separators, bidi overrides and marks, zero-width and BOM characters.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f/\\\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def clean_filename(raw: str) -> str:
    """A display name that is safe everywhere it goes (headers, logs, terminals, zip entries, paths).

    Control characters, CR/LF, bidi overrides and path separators become "_"; leading dots and
    surrounding spaces go; the result is cut to 255 characters keeping the extension.
    """
    name = _UNSAFE.sub("_", unicodedata.normalize("NFC", raw)).strip().lstrip(".").strip()
    if not name or set(name) <= {"_", "."}:
        raise InvalidRequest("filename is empty once path separators and control characters are removed")
    return _shorten(name, MAX_FILENAME_CHARS)


def _shorten(name: str, limit: int) -> str:
    """At most `limit` characters, keeping a (reasonable) extension."""
    if len(name) <= limit:
        return name
    extension = _extension(name)
    if not extension or len(extension) >= 32:
        return name[:limit]
    return name[: limit - len(extension)].rstrip() + extension


# A download never renders in the browser: whatever was uploaded is served as opaque bytes.
SAFE_DOWNLOAD_TYPE = "application/octet-stream"


# What a signed read may serve as itself rather than as opaque bytes: a page image Quire drew (a PNG, which no
# browser runs as a page), for a viewer's <img>. An upload's own bytes are never served as what they claim to be.
SIGNED_READ_TYPES = frozenset({"image/png"})


def signed_read_type(media_type: str | None) -> str:
    """The Content-Type a signed read serves: SAFE_DOWNLOAD_TYPE, or `media_type` when it is one of
    SIGNED_READ_TYPES. Any other type raises ValueError: a caller cannot widen the set by asking."""
    if media_type is None:
        return SAFE_DOWNLOAD_TYPE
    if media_type not in SIGNED_READ_TYPES:
        raise ValueError(
            f"a signed read is served as {SAFE_DOWNLOAD_TYPE} or as one of {', '.join(sorted(SIGNED_READ_TYPES))},"
            f" not {media_type!r}"
        )
    return media_type


def stored_content_type(media_type: str) -> str:
    """The Content-Type an object is stored with: its media type, except one a browser renders as a page that
    can run script (HTML, or any XML: XHTML, SVG), stored as SAFE_DOWNLOAD_TYPE. The version's row keeps the
    real media type; the store's header is what a URL to the object would serve, were it ever opened inline."""
    essence = media_type.split(";", 1)[0].strip().lower()
    return SAFE_DOWNLOAD_TYPE if essence == "text/html" or essence.endswith(("/xml", "+xml")) else media_type


def attachment_disposition(filename: str) -> str:
    """`attachment` with an ASCII fallback and the RFC 6266 UTF-8 form; no quotes or CR/LF can escape.

    Both forms are shortened to 150 characters keeping the extension, so a long name still downloads
    as what it is.
    """
    short = _shorten(filename, 150)
    ascii_name = re.sub(r"[^A-Za-z0-9._ -]", "_", short) or "download"
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(short, safe='')}"


def check_declared_size(byte_size: int, limit: int) -> None:
    if byte_size > limit:
        raise PayloadTooLarge(f"the file is {byte_size} bytes; the upload limit is {limit} bytes")
    if byte_size < 1:
        raise InvalidRequest("byteSize must be at least 1: an empty file has nothing to store")


# Where every original lives (derived objects, work and OCR copies live elsewhere): S3 announces only these.
ORIGINALS_PREFIX = "tenants/"


def tenant_files_prefix(tenant_id: str) -> str:
    """Where every original of one tenant is kept."""
    return f"{ORIGINALS_PREFIX}{tenant_id}/files/"


def file_prefix(tenant_id: str, file_id: UUID) -> str:
    """Where every version of one file is kept (each version's key starts with it)."""
    return f"{tenant_files_prefix(tenant_id)}{file_id}/"


def storage_key(tenant_id: str, file_id: UUID, version_id: UUID) -> str:
    """Where a version's bytes live. Derived from ids only: nothing a caller typed reaches a key."""
    return f"{file_prefix(tenant_id, file_id)}versions/{version_id}"


_KEY = re.compile(
    r"^tenants/(?P<tenant>[A-Za-z0-9][A-Za-z0-9_.-]{0,63})/files/(?P<file>[0-9a-f-]{36})/versions/(?P<version>[0-9a-f-]{36})$"
)


@dataclass(frozen=True)
class StorageKeyParts:
    tenant_id: str
    file_id: UUID
    version_id: UUID


def parse_storage_key(key: str) -> StorageKeyParts | None:
    """The ids a key claims, or None for a key Quire never hands out. A claim, not proof: check the row."""
    match = _KEY.fullmatch(key)
    if match is None:
        return None
    try:
        return StorageKeyParts(match["tenant"], UUID(match["file"]), UUID(match["version"]))
    except ValueError:
        return None


DERIVED_PREFIX = "derived/"


def derived_prefix(original_key: str) -> str:
    """Where everything derived from one original lives (its documents, attempt by attempt)."""
    return f"{DERIVED_PREFIX}{original_key}/"


def document_key(tenant_id: str, file_id: UUID, version_id: UUID, attempt: int, *, text_layer: bool = False) -> str:
    """Where one attempt's extracted document lives: derived, beside (never in place of) the original;
    per attempt, so a superseded attempt can never overwrite the document of the one that won. While OCR
    reads the pages without text, the text layer it starts from has a key of its own: a retried OCR step
    merges from it again, never from its own half-finished result."""
    suffix = "-text-layer" if text_layer else ""
    return f"{derived_prefix(storage_key(tenant_id, file_id, version_id))}document-{attempt}{suffix}.json"


def parse_document_key(key: str) -> StorageKeyParts | None:
    if not key.startswith(DERIVED_PREFIX):
        return None
    original, _, name = key[len(DERIVED_PREFIX) :].rpartition("/")
    return parse_storage_key(original) if _DOCUMENT_NAME.fullmatch(name) else None


def document_attempt(key: str) -> int | None:
    """The attempt that wrote a derived document, by its key (None: not a document's key)."""
    if parse_document_key(key) is None:
        return None
    named = _DOCUMENT_NAME.fullmatch(key.rpartition("/")[2])
    return int(named["attempt"]) if named else None


_DOCUMENT_NAME = re.compile(r"document-(?P<attempt>\d+)(-text-layer)?\.json")


OCR_STAGING_PREFIX = "ocr-staging/"
# Whatever is kept on behalf of one original lives under a prefix that names it, so deleting the original can
# find (and remove) everything else that holds its content.
_ON_BEHALF_OF = re.compile(
    rf"^(?:{DERIVED_PREFIX}|{OCR_STAGING_PREFIX})(?P<original>tenants/[^/]+/files/[^/]+/versions/[^/]+)/"
)


def ocr_staging_prefix(original_key: str) -> str:
    """Where copies of an original's pages wait for an OCR engine that reads storage (Textract)."""
    return f"{OCR_STAGING_PREFIX}{original_key}/"


def original_behind(key: str) -> StorageKeyParts | None:
    """The original a derived object or an OCR staging copy was made from, by its key; None for other keys."""
    match = _ON_BEHALF_OF.match(key)
    return parse_storage_key(match["original"]) if match else None
