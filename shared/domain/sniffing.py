"""Does the content agree with its declared type? Decided from the bytes, never from the name or header.

A declared type is a claim; the magic numbers and the container's structure are evidence. SVG, HTML
and script are never accepted as images, markup never as plain text, and an arbitrary zip never as an
Office document. Bounded: the first 8 KB of anything; of a zip, its end record (entry count and
directory size checked before anything is built), its directory and one small member, never the rest;
of an OLE compound file, its header and a few directory sectors.

A password-protected DOCX, XLSX or PPTX is not a zip: Office wraps the encrypted package in an OLE
compound file (MS-OFFCRYPTO). It is accepted as what was declared, so that extraction can tell the
user to remove the password, rather than refused as a legacy file the user would be told to convert.
"""

import io
import re
import zipfile
from typing import BinaryIO

from shared.domain.media import same_container_family
from shared.domain.media_sniffing import sniff_media_type
from shared.domain.uploads import MEDIA_KINDS, AcceptedType

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
_OPENDOCUMENT = b"application/vnd.oasis.opendocument."
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
    "audio": "an audio recording",
    "video": "a video",
}


_MAGIC_LABELS = (
    (b"{\\rtf", "an RTF document"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"GIF8", "a GIF image"),
    (b"PK\x03\x04", "a zip archive"),
    (b"\xd0\xcf\x11\xe0", "a legacy Office (OLE) file"),
)


def describe(content: bytes) -> str:
    """What the bytes look like, for the rejection message."""
    head = content[:2048]
    if b"%PDF-" in head[:1024]:
        return "a PDF"
    # An OpenDocument file's first member is its uncompressed media type, named `mimetype`.
    if head.startswith(b"PK\x03\x04") and head[30:38] == b"mimetype" and _OPENDOCUMENT in head[38:120]:
        return "an OpenDocument file (.odt, .ods or .odp)"
    label = next((label for magic, label in _MAGIC_LABELS if head.startswith(magic)), None)
    recording = sniff_media_type(content[:SNIFF_PREFIX_BYTES]) if label is None else None
    if recording is not None:
        label = f"a recording ({recording})"
    if label is None and _MARKUP_START.match(head):
        label = "HTML, XML or SVG markup"
    if label is None and _ACTIVE_CONTENT.search(head):
        # Text that mentions tags is text; text that carries live ones is not, and saying only "text" would
        # leave the uploader guessing what was wrong.
        label = "text carrying live markup (a script, an embedded object or an on...= handler): upload it as HTML"
    return label or ("binary data" if b"\x00" in head else "text")


def is_archive_type(accepted: AcceptedType) -> bool:
    """Office files need more than the first SNIFF_PREFIX_BYTES: their zip directory is at the end."""
    return accepted.kind in _OOXML_MAIN_PART


def mismatch(content: bytes, accepted: AcceptedType) -> str | None:
    """None when the content is what was declared; otherwise the sentence the uploader will read."""
    if _matches(content, accepted):
        return None
    declared = f"{_LABELS[accepted.kind]} as declared ({accepted.media_type})"
    return f"the content is not {declared}: it looks like {describe(content)}"


OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def compound_file_name_key(name: str) -> str:
    """A directory entry's name as MS-CFB compares it (2.6.4): without regard to case, each character
    upper-cased by its simple (one-to-one) Unicode mapping. `str.upper` alone is the full mapping, which
    turns "ß" into "SS"; a character whose full mapping is several takes its title case when that is one
    character (the Greek letters with ypogegrammeni, whose simple upper case it is), else stays itself."""

    def simple_upper(character: str) -> str:
        upper = character.upper()
        if len(upper) == 1:
            return upper
        title = character.title()
        return title if len(title) == 1 else character

    return "".join(simple_upper(character) for character in name)


# Every name the directory is asked about is compared through compound_file_name_key, never as written:
# a real writer may spell `EncryptionInfo` as `encryptionInfo` or `ENCRYPTIONINFO`.
_ENCRYPTED_PACKAGE_STREAMS = frozenset(compound_file_name_key(name) for name in ("EncryptionInfo", "EncryptedPackage"))
# An encrypted package's directory is a handful of entries; a legacy file's may be long, but only the
# root storage's own streams matter, and those are few. A crafted file gets no further than this.
_MAX_DIRECTORY_SECTORS = 32
_MAX_ROOT_ENTRIES = 1024
_LAST_REGULAR_SECTOR = 0xFFFFFFFA
_END_OF_CHAIN = 0xFFFFFFFE
_NO_STREAM = 0xFFFFFFFF
_HEADER_DIFAT_ENTRIES = 109
_DIRECTORY_ENTRY_BYTES = 128


class _CompoundFile:
    """The directory of an OLE compound file (MS-CFB), read sector by sector through a seekable stream.

    Every chain is followed with a visited set and a step bound, every sector number is checked
    against the file's size: cyclic FAT chains, huge counts and out-of-range sectors end the walk."""

    def __init__(self, source: BinaryIO, size: int) -> None:
        self._source = source
        header = self._read(0, 512)
        major, shift = _u16(header, 26), _u16(header, 30)
        if not header.startswith(OLE_MAGIC) or (major, shift) not in ((3, 9), (4, 12)):
            raise ValueError("not a compound file header")
        self._header = header
        self._sector_size = 1 << shift
        self._sectors = max(0, (size - 1) // self._sector_size)  # the header takes the first sector's place
        self._fat_sector_count = _u32(header, 44)
        self._fat_cache: dict[int, bytes] = {}
        self._difat_cache: list[int] = [_u32(header, 76 + 4 * i) for i in range(_HEADER_DIFAT_ENTRIES)]
        self._next_difat = _u32(header, 68)
        self._difat_steps = 0

    def _read(self, offset: int, length: int) -> bytes:
        self._source.seek(offset)
        data = self._source.read(length)
        if len(data) != length:
            raise ValueError("the compound file ends inside a sector")
        return data

    def _sector(self, number: int) -> bytes:
        if number > _LAST_REGULAR_SECTOR or number >= self._sectors:
            raise ValueError(f"sector {number} is outside the file")
        return self._read((number + 1) * self._sector_size, self._sector_size)

    def _fat_sector_number(self, index: int) -> int:
        """Where the index-th FAT sector is: in the header's DIFAT, then along the DIFAT chain."""
        if index >= self._fat_sector_count:
            raise ValueError("the FAT is shorter than the chain it should describe")
        per_difat_sector = self._sector_size // 4 - 1
        visited: set[int] = set()
        while index >= len(self._difat_cache):
            if self._next_difat in visited or self._difat_steps >= self._sectors:
                raise ValueError("the DIFAT chain loops")
            visited.add(self._next_difat)
            self._difat_steps += 1
            sector = self._sector(self._next_difat)
            self._difat_cache.extend(_u32(sector, 4 * i) for i in range(per_difat_sector))
            self._next_difat = _u32(sector, 4 * per_difat_sector)
        return self._difat_cache[index]

    def _next(self, sector: int) -> int:
        per_fat_sector = self._sector_size // 4
        index, slot = divmod(sector, per_fat_sector)
        if index not in self._fat_cache:
            self._fat_cache[index] = self._sector(self._fat_sector_number(index))
        return _u32(self._fat_cache[index], 4 * slot)

    def _directory(self) -> bytes:
        sectors: list[bytes] = []
        visited: set[int] = set()
        current = _u32(self._header, 48)
        while current != _END_OF_CHAIN and len(sectors) < _MAX_DIRECTORY_SECTORS:
            if current in visited:
                raise ValueError("the directory chain loops")
            visited.add(current)
            sectors.append(self._sector(current))
            current = self._next(current)
        return b"".join(sectors)

    def root_stream_names(self) -> set[str]:
        """The names of the streams directly in the root storage (its children's red-black tree), as
        `compound_file_name_key` compares them: the directory's own spelling is not significant."""
        directory = self._directory()
        entries = len(directory) // _DIRECTORY_ENTRY_BYTES

        def entry(number: int) -> bytes:
            return directory[number * _DIRECTORY_ENTRY_BYTES : (number + 1) * _DIRECTORY_ENTRY_BYTES]

        if entries == 0 or entry(0)[66] != 5:  # the first entry is the root storage
            raise ValueError("the directory has no root storage")
        names: set[str] = set()
        pending, seen = [_u32(entry(0), 76)], set[int]()
        while pending and len(seen) < _MAX_ROOT_ENTRIES:
            number = pending.pop()
            if number == _NO_STREAM or number >= entries or number in seen:
                continue
            seen.add(number)
            current = entry(number)
            name_bytes = min(_u16(current, 64), 64)
            if current[66] == 2:  # a stream (1 is a storage)
                name = current[: max(name_bytes - 2, 0)].decode("utf-16-le", errors="replace")
                names.add(compound_file_name_key(name))
            pending.extend((_u32(current, 68), _u32(current, 72)))
        return names


def _u16(data: bytes, offset: int) -> int:
    return int.from_bytes(data[offset : offset + 2], "little")


def _u32(data: bytes, offset: int) -> int:
    return int.from_bytes(data[offset : offset + 4], "little")


def is_encrypted_office_package(source: BinaryIO, size: int) -> bool:
    """A password-protected DOCX, XLSX or PPTX: an OLE compound file whose root storage holds the streams
    EncryptionInfo and EncryptedPackage. A legacy .doc, .xls or .ppt (or anything damaged) is not."""
    try:
        return _CompoundFile(source, size).root_stream_names() >= _ENCRYPTED_PACKAGE_STREAMS
    except (ValueError, OSError, EOFError):
        return False


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
    if kind in MEDIA_KINDS:
        # The container, from its first bytes; the probe reads its tracks later (a WebM's or an MP4's type turns
        # on whether it has a video track, so the family is what the first bytes can confirm).
        sniffed = sniff_media_type(content[:SNIFF_PREFIX_BYTES])
        return sniffed is not None and same_container_family(sniffed, accepted.media_type)
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
    return _is_office_archive(io.BytesIO(content), len(content), content, kind)


def _is_office_archive(archive: BinaryIO, size: int, prefix: bytes, kind: str) -> bool:
    if prefix.startswith(OLE_MAGIC):
        # Which of the three it is lies inside the encryption: the declared type stands.
        return is_encrypted_office_package(archive, size)
    return prefix.startswith(b"PK\x03\x04") and _archive_is_ooxml(archive, size, kind)


def archive_mismatch(archive: BinaryIO, size: int, prefix: bytes, accepted: AcceptedType) -> str | None:
    """`mismatch` for an Office file read through a seekable stream (only its directory and one member)."""
    if _is_office_archive(archive, size, prefix, accepted.kind):
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
