import io
import uuid
import zipfile

import pytest

from shared.domain.errors import InvalidRequest, PayloadTooLarge, UnsupportedMediaType
from shared.domain.sniffing import mismatch
from shared.domain.uploads import (
    accepted_type,
    check_declared_size,
    clean_filename,
    parse_storage_key,
    storage_key,
)

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def office(main_part: str, main_type: str, extra: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "[Content_Types].xml", f'<Types><Override PartName="/{main_part}" ContentType="{main_type}"/></Types>'
        )
        archive.writestr(main_part, "<x/>")
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


WORD_MAIN = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"


@pytest.mark.parametrize(
    ("media_type", "filename", "content"),
    [
        ("application/pdf", "a.pdf", b"%PDF-1.7\n..."),
        ("application/pdf", "a.pdf", b"\n\n  %PDF-1.4 junk before the header is allowed"),
        ("image/png", "a.png", b"\x89PNG\r\n\x1a\n...."),
        ("image/jpeg", "a.jpeg", b"\xff\xd8\xff\xe0...."),
        ("image/tiff", "a.tif", b"II*\x00...."),
        ("text/plain", "a.txt", "héllo wörld".encode()),
        ("text/plain", "a.txt", "\ufeffUTF-16 text".encode("utf-16")),
        ("text/markdown", "README.md", b'<div align="center">\n# Title\n</div>'),
        ("text/csv", "a.csv", b"a,b\n1,2\n"),
        ("text/html", "a.html", b"<!doctype html><html><script>x()</script></html>"),
        (DOCX, "a.docx", office("word/document.xml", WORD_MAIN)),
    ],
)
def test_content_that_is_what_it_claims_is_accepted(media_type: str, filename: str, content: bytes) -> None:
    assert mismatch(content, accepted_type(media_type, filename)) is None


@pytest.mark.parametrize(
    ("media_type", "filename", "content"),
    [
        ("image/png", "a.png", b'<svg xmlns="http://www.w3.org/2000/svg"/>'),
        ("image/png", "a.png", b"\xef\xbb\xbf  <?xml version='1.0'?><svg/>"),
        ("image/jpeg", "a.jpg", b"<html><img src=x onerror=alert(1)></html>"),
        ("text/plain", "a.txt", b"  <SCRIPT>alert(1)</SCRIPT>"),
        ("text/plain", "a.txt", "\ufeff<html>".encode("utf-16")),
        ("text/csv", "a.csv", b"\x00\x01\x02binary"),
        ("application/pdf", "a.pdf", b"MZ\x90\x00 an executable"),
        (DOCX, "a.docx", b"PK\x03\x04 not really a zip"),
        (DOCX, "a.docx", office("xl/workbook.xml", "application/vnd...sheet.main+xml")),  # a workbook
        (DOCX, "a.docx", office("word/document.xml", "application/vnd.ms-word.document.macroEnabled.main+xml")),
    ],
)
def test_content_that_is_not_what_it_claims_is_refused_with_a_sentence(
    media_type: str, filename: str, content: bytes
) -> None:
    reason = mismatch(content, accepted_type(media_type, filename))
    assert reason is not None
    assert reason.startswith("the content is not")


def test_an_oversized_content_types_part_is_refused_without_inflating_it() -> None:
    # 50 MB of zeros compresses to ~50 KB: the member's size refuses it before anything is inflated.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", b"\x00" * 50_000_000)
        archive.writestr("word/document.xml", "<x/>")
    assert len(buffer.getvalue()) < 1_000_000
    assert mismatch(buffer.getvalue(), accepted_type(DOCX, "a.docx")) is not None


@pytest.mark.parametrize(
    ("media_type", "filename", "error"),
    [
        ("image/svg+xml", "a.svg", "accepted types"),
        ("image/*", "a.png", "accepted types"),
        ("application/pdf", "a.docx", "must be named .pdf"),
        ("application/pdf", "pdf", "not no extension"),
        ("text/plain", ".txt", "not no extension"),
    ],
)
def test_types_and_extensions_outside_the_list_are_refused_naming_it(
    media_type: str, filename: str, error: str
) -> None:
    with pytest.raises(UnsupportedMediaType, match=error):
        accepted_type(media_type, filename)


def test_declared_sizes_are_bounded_both_ways() -> None:
    check_declared_size(100, 100)
    with pytest.raises(PayloadTooLarge, match="the upload limit is 100 bytes"):
        check_declared_size(101, 100)
    with pytest.raises(InvalidRequest):
        check_declared_size(0, 100)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("report.pdf", "report.pdf"),
        ("../../x.pdf", "_.._x.pdf"),
        ("a\u202egnp.exe.txt", "a_gnp.exe.txt"),  # a right-to-left override cannot disguise the extension
        ("  .hidden.txt  ", "hidden.txt"),
        ("tab\there.txt", "tab_here.txt"),
    ],
)
def test_filenames_are_cleaned(raw: str, clean: str) -> None:
    assert clean_filename(raw) == clean


def test_a_long_filename_keeps_its_extension_within_255_characters() -> None:
    cleaned = clean_filename("é" * 1000 + ".docx")
    assert len(cleaned) == 255
    assert cleaned.endswith(".docx")


def test_storage_keys_round_trip_and_foreign_keys_are_not_recognised() -> None:
    file_id, version_id = uuid.uuid4(), uuid.uuid4()
    parts = parse_storage_key(storage_key("acme", file_id, version_id))
    assert parts is not None
    assert (parts.tenant_id, parts.file_id, parts.version_id) == ("acme", file_id, version_id)
    for foreign in [
        "tenants/acme/files/x/versions/y",
        f"tenants/../files/{file_id}/versions/{version_id}",
        "other/key",
    ]:
        assert parse_storage_key(foreign) is None
