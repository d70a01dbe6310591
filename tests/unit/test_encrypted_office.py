"""Password-protected DOCX, XLSX and PPTX (MS-OFFCRYPTO: an OLE compound file holding EncryptionInfo and
EncryptedPackage) are accepted as what was declared and end `encrypted`; a legacy .doc, .xls or .ppt
keeps its legacy sentence; a hostile compound file is read within its bounds.

The compound files are built here sector by sector (MS-CFB version 3, 512-byte sectors), so each test
says exactly which directory it hands the reader.
"""

import io
import itertools
import os
import struct
from dataclasses import dataclass, field

import pytest

from shared.adapters.parsers.docx import DOCX_TYPE, DocxParser
from shared.adapters.parsers.pptx import PPTX_TYPE, PptxParser
from shared.adapters.parsers.xlsx import XLSX_TYPE, XlsxParser
from shared.domain.document import ExtractionFailure, ExtractionLimits
from shared.domain.files import FailureReason
from shared.domain.sniffing import (
    SNIFF_PREFIX_BYTES,
    archive_mismatch,
    compound_file_name_key,
    is_encrypted_office_package,
    mismatch,
)
from shared.domain.uploads import accepted_type
from shared.ports import DocumentParser
from shared.services.extraction import Extractor
from shared.services.upload_completion import Completion, RangedObject
from tests.conftest import REPO_ROOT
from tests.fakes import Fakes, principal

LIMITS = ExtractionLimits()
EXAMPLE_DOCS = REPO_ROOT.parent / "shared" / "data" / "office" / "unstructured" / "example-docs"
SECTOR = 512
FREE, END_OF_CHAIN, FAT_SECTOR, NO_STREAM = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF
PARSERS: dict[str, DocumentParser] = {DOCX_TYPE: DocxParser(), XLSX_TYPE: XlsxParser(), PPTX_TYPE: PptxParser()}
NAMES = {DOCX_TYPE: "report.docx", XLSX_TYPE: "budget.xlsx", PPTX_TYPE: "deck.pptx"}


@dataclass
class Storage:
    streams: dict[str, bytes] = field(default_factory=dict)
    storages: dict[str, "Storage"] = field(default_factory=dict)


def _entry(name: str, kind: int, *, left: int, right: int, child: int, start: int, size: int) -> bytes:
    encoded = (name + "\0").encode("utf-16-le")
    return (
        encoded.ljust(64, b"\0")
        + struct.pack("<HBB", len(encoded), kind, 1)
        + struct.pack("<III", left, right, child)
        + bytes(16 + 4 + 16)
        + struct.pack("<IQ", start, size)
    )


def compound_file(root: Storage, *, patch_fat: dict[int, int] | None = None, first_directory: int = 1) -> bytes:
    """A version 3 compound file: sector 0 the FAT, then the directory, then each stream's sectors.
    Each storage's children are a chain of right siblings (a valid, if unbalanced, tree)."""
    flat: list[tuple[str, int, bytes, list[int]]] = []  # name, kind, data, children (entry numbers)

    def add(name: str, storage: Storage, kind: int) -> int:
        number = len(flat)
        flat.append((name, kind, b"", []))
        children: list[int] = []
        for stream_name, data in storage.streams.items():
            children.append(len(flat))
            flat.append((stream_name, 2, data, []))
        for storage_name, inner in storage.storages.items():
            children.append(add(storage_name, inner, 1))
        flat[number] = (name, kind, b"", children)
        return number

    add("Root Entry", root, 5)
    directory_sectors = -(-len(flat) * 128 // SECTOR)
    fat = {0: FAT_SECTOR}
    for index in range(directory_sectors):
        fat[1 + index] = 2 + index if index + 1 < directory_sectors else END_OF_CHAIN
    next_sector = 1 + directory_sectors
    starts: dict[int, int] = {}
    body = b""
    for number, (_, kind, data, _) in enumerate(flat):
        if kind != 2:
            continue
        # Streams are padded past the mini-stream cutoff, so they live in regular sectors.
        padded = data.ljust(max(4096, -(-len(data) // SECTOR) * SECTOR), b"\0")
        count = len(padded) // SECTOR
        starts[number] = next_sector
        for offset in range(count):
            fat[next_sector + offset] = next_sector + offset + 1 if offset + 1 < count else END_OF_CHAIN
        next_sector += count
        body += padded
    assert next_sector <= SECTOR // 4, "one FAT sector describes at most 128 sectors"
    fat.update(patch_fat or {})
    right_sibling = {child: after for *_, kids in flat for child, after in itertools.pairwise(kids)}
    entries = b""
    for number, (name, kind, data, children) in enumerate(flat):
        entries += _entry(
            name,
            kind,
            left=NO_STREAM,
            right=right_sibling.get(number, NO_STREAM),
            child=children[0] if children else NO_STREAM,
            start=starts.get(number, END_OF_CHAIN if kind == 5 else 0),
            size=len(data),
        )
    entries = entries.ljust(directory_sectors * SECTOR, b"\0")
    fat_sector = b"".join(struct.pack("<I", fat.get(i, FREE)) for i in range(SECTOR // 4))
    header = (
        bytes.fromhex("d0cf11e0a1b11ae1")
        + bytes(16)
        + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6)
        + bytes(6)
        + struct.pack("<IIIIIIIII", 0, 1, first_directory, 0, 4096, END_OF_CHAIN, 0, END_OF_CHAIN, 0)
        + struct.pack("<I", 0)
        + struct.pack("<I", FREE) * 108
    )
    assert len(header) == SECTOR
    return header + fat_sector + entries + body


def encrypted_package() -> bytes:
    """What Office writes for a password-protected file: the package's size, then ciphertext."""
    info = struct.pack("<HHI", 4, 4, 0x40) + b'<?xml version="1.0"?><encryption/>'
    ciphertext = struct.pack("<Q", 9000) + os.urandom(9008)
    data_spaces = Storage(streams={"Version": b"\x3c\x00", "DataSpaceMap": bytes(64)})
    return compound_file(
        Storage(
            streams={"EncryptionInfo": info, "EncryptedPackage": ciphertext},
            storages={"\x06DataSpaces": data_spaces},
        )
    )


def legacy_word_file(text: str = "Quarterly minutes") -> bytes:
    """The streams of a Word 97-2003 document, its text stored as UTF-16 as Word does."""
    return compound_file(
        Storage(streams={"WordDocument": b"\xec\xa5" + text.encode("utf-16-le"), "1Table": bytes(600)})
    )


def ranged_upload(content: bytes, media_type: str) -> str | None:
    """What the upload completion answers for these landed bytes: the same reads it makes, range by range."""

    class Store:
        def read_range(self, key: str, *, version_id: str | None, start: int, length: int) -> bytes:
            return content[start : start + length]

    stream = io.BufferedReader(RangedObject(Store(), "k", None, len(content)), buffer_size=256 * 1024)  # type: ignore[arg-type]
    accepted = accepted_type(media_type, NAMES[media_type])
    return archive_mismatch(stream, len(content), content[:SNIFF_PREFIX_BYTES], accepted)


@pytest.mark.parametrize("media_type", [DOCX_TYPE, XLSX_TYPE, PPTX_TYPE], ids=["docx", "xlsx", "pptx"])
def test_a_password_protected_office_upload_is_accepted_as_declared(media_type: str) -> None:
    # Given an encrypted package uploaded as the type its owner declared
    content = encrypted_package()
    # When the upload completion sniffs it, range by range, and in memory
    # Then it is what was declared: extraction, not the upload, tells the user about the password
    assert ranged_upload(content, media_type) is None
    assert mismatch(content, accepted_type(media_type, NAMES[media_type])) is None


@pytest.mark.parametrize("media_type", [DOCX_TYPE, XLSX_TYPE, PPTX_TYPE], ids=["docx", "xlsx", "pptx"])
def test_a_password_protected_office_file_ends_encrypted_with_its_sentence(media_type: str) -> None:
    # Given an encrypted package
    # When its declared type's parser reads it
    outcome = PARSERS[media_type].parse(encrypted_package(), LIMITS)
    # Then the failure tells the user to remove the password, not to convert the file
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.ENCRYPTED
    assert outcome.user_sentence == FailureReason.ENCRYPTED.user_sentence
    assert "password" in outcome.user_sentence


def test_a_legacy_word_file_is_still_refused_as_a_legacy_file() -> None:
    # Given a Word 97-2003 document declared as a .docx
    content = legacy_word_file()
    # When it lands, and if it were ever parsed
    reason = ranged_upload(content, DOCX_TYPE)
    outcome = DocxParser().parse(content, LIMITS)
    # Then the upload names it a legacy file, and the parser agrees
    assert reason is not None
    assert reason.endswith("it looks like a legacy Office (OLE) file")
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.MALFORMED
    assert "legacy Office file" in outcome.detail


def test_a_legacy_file_whose_text_names_the_encrypted_stream_is_not_called_encrypted() -> None:
    # Given a legacy document whose own text (UTF-16, as Word stores it) says "EncryptedPackage"
    content = legacy_word_file("See the EncryptedPackage stream of MS-OFFCRYPTO")
    # When the parser guard decides
    outcome = DocxParser().parse(content, LIMITS)
    # Then it is decided from the directory: a legacy file, not a password-protected one
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.MALFORMED


def test_an_encrypted_package_embedded_in_a_legacy_file_does_not_make_it_encrypted() -> None:
    # Given a legacy document that embeds a protected workbook in its object pool
    embedded = Storage(streams={"EncryptionInfo": bytes(64), "EncryptedPackage": bytes(64)})
    content = compound_file(
        Storage(streams={"WordDocument": bytes(600)}, storages={"ObjectPool": Storage(storages={"_1": embedded})})
    )
    # When it is read
    # Then only the root storage's own streams count
    assert is_encrypted_office_package(io.BytesIO(content), len(content)) is False
    assert ranged_upload(content, DOCX_TYPE) is not None


def looped_directory_chain() -> bytes:
    return compound_file(Storage(streams={"EncryptionInfo": b"x"}), patch_fat={1: 1})


def directory_outside_the_file() -> bytes:
    return compound_file(
        Storage(streams={"EncryptionInfo": b"x", "EncryptedPackage": b"y"}), first_directory=0x7FFFFFF0
    )


def cyclic_sibling_tree() -> bytes:
    content = bytearray(compound_file(Storage(streams={"EncryptionInfo": b"x", "Other": b"y"})))
    # Entry 1's right sibling is entry 2; make entry 2's left and right point back at entries 1 and 2.
    entry_two = 2 * SECTOR + 2 * 128
    content[entry_two + 68 : entry_two + 76] = struct.pack("<II", 1, 2)
    return bytes(content)


def truncated_header() -> bytes:
    return encrypted_package()[:300]


def huge_sector_counts() -> bytes:
    content = bytearray(encrypted_package())
    content[44:48] = struct.pack("<I", 0xFFFFFFFF)  # FAT sectors
    content[72:76] = struct.pack("<I", 0xFFFFFFFF)  # DIFAT sectors
    content[SECTOR : SECTOR + 8] = struct.pack("<II", FAT_SECTOR, 0x7FFFFFFF)  # the directory continues far away
    return bytes(content)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "make",
    [looped_directory_chain, directory_outside_the_file, cyclic_sibling_tree, truncated_header, huge_sector_counts],
)
def test_a_hostile_compound_file_is_read_within_its_bounds_and_not_called_encrypted(make) -> None:  # type: ignore[no-untyped-def]
    # Given a compound file whose chains loop, point outside the file or claim huge counts
    content = make()
    # When the sniffer and the parser guard read its directory
    # Then both finish, and neither calls it a password-protected package
    assert is_encrypted_office_package(io.BytesIO(content), len(content)) is False
    outcome = XlsxParser().parse(content, LIMITS)
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.MALFORMED


@pytest.mark.skipif(not EXAMPLE_DOCS.exists(), reason="../shared/data/office is not present on this machine")
def test_a_real_password_protected_workbook_is_accepted_then_encrypted() -> None:
    # Given a workbook Excel protected with a password
    content = (EXAMPLE_DOCS / "password_protected.xlsx").read_bytes()
    # When it is uploaded and extracted
    reason = ranged_upload(content, XLSX_TYPE)
    outcome = XlsxParser().parse(content, LIMITS)
    # Then it is accepted, and extraction ends `encrypted`
    assert reason is None
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.ENCRYPTED


@pytest.mark.skipif(not EXAMPLE_DOCS.exists(), reason="../shared/data/office is not present on this machine")
@pytest.mark.parametrize(
    ("name", "media_type"),
    [("simple.doc", DOCX_TYPE), ("tests-example.xls", XLSX_TYPE), ("fake-power-point.ppt", PPTX_TYPE)],
)
def test_a_real_legacy_office_file_keeps_the_legacy_sentence(name: str, media_type: str) -> None:
    # Given a real Word, Excel or PowerPoint 97-2003 file declared as its OOXML successor
    content = (EXAMPLE_DOCS / name).read_bytes()
    # When it lands
    reason = ranged_upload(content, media_type)
    # Then it is refused as a legacy file
    assert reason is not None
    assert reason.endswith("it looks like a legacy Office (OLE) file")


def encrypted_package_named(info_name: str, package_name: str) -> bytes:
    """An encrypted package whose directory spells its two streams in other letter cases (MS-CFB compares
    directory names without regard to case, so a writer may)."""
    info = struct.pack("<HHI", 4, 4, 0x40) + b'<?xml version="1.0"?><encryption/>'
    ciphertext = struct.pack("<Q", 9000) + os.urandom(9008)
    return compound_file(Storage(streams={info_name: info, package_name: ciphertext}))


OTHER_CASES = [
    ("encryptionInfo", "ENCRYPTEDPACKAGE"),
    ("ENCRYPTIONINFO", "encryptedpackage"),
    ("EnCrYpTiOnInFo", "EncryptedPACKAGE"),
]


@pytest.mark.parametrize(("info_name", "package_name"), OTHER_CASES)
def test_a_protected_package_whose_directory_spells_its_streams_in_other_cases_is_accepted_then_encrypted(
    info_name: str, package_name: str
) -> None:
    # Given an encrypted package whose directory names its streams in another letter case
    content = encrypted_package_named(info_name, package_name)
    # When it lands (read range by range) and its declared type's parser reads it
    reason = ranged_upload(content, DOCX_TYPE)
    outcome = DocxParser().parse(content, LIMITS)
    # Then it is accepted as declared, and ends `encrypted` with the sentence about the password
    assert reason is None
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.ENCRYPTED
    assert outcome.user_sentence == FailureReason.ENCRYPTED.user_sentence


def test_a_protected_docx_with_lowercase_stream_names_fails_encrypted_through_the_upload_and_the_pipeline() -> None:
    # Given a password-protected .docx whose OLE directory says `encryptionInfo` and `ENCRYPTEDPACKAGE`
    content = encrypted_package_named("encryptionInfo", "ENCRYPTEDPACKAGE")
    fakes = Fakes()
    ticket = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename="report.docx",
        media_type=DOCX_TYPE,
        byte_size=len(content),
    )
    # When it lands (the upload's sniff runs in its sandboxed child) and the pipeline extracts it
    landed = fakes.content.post(ticket.upload, content)
    assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.STORED
    extractor = Extractor([DocxParser()], ExtractionLimits(max_pages=50, timeout_seconds=30), memory_limit_bytes=None)
    fakes.pipeline(extractor=extractor).run(fakes.workflow.started[-1])
    # Then the version fails `encrypted`, with the sentence telling its owner to remove the password
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None
    version = found[1]
    assert version.rejection_reason is None
    assert version.failure_reason is FailureReason.ENCRYPTED
    assert version.failure_detail == "the file is password-protected"
    assert "remove the protection" in version.failure_reason.user_sentence


def test_directory_names_compare_as_the_compound_file_format_compares_them() -> None:
    # Given names a writer may spell in any case, and characters whose full and simple upper cases differ
    # When they are keyed for comparison
    # Then case does not matter, and each character keeps to one character (the simple mapping)
    assert compound_file_name_key("encryptionInfo") == compound_file_name_key("ENCRYPTIONINFO")
    assert compound_file_name_key("\x05SummaryInformation") == "\x05SUMMARYINFORMATION"
    assert compound_file_name_key("Straße") == "STRAßE"
    assert compound_file_name_key("\u1fb3") == "\u1fbc"
