import io
import uuid
import zipfile
from pathlib import Path

import pytest

from shared.domain.errors import InvalidRequest, PayloadTooLarge, UnsupportedMediaType
from shared.domain.sniffing import MAX_ARCHIVE_ENTRIES, mismatch
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
        ("text/markdown", "README.md", b'# Title\n<img src="logo.png" alt="logo">\n'),
        ("text/plain", "a.txt", b"if a < b and c > d: print('x <= y')"),
        # Text that mentions tags is still text (and downloads are opaque attachments anyway).
        ("text/plain", "app.log", b"File \"<stdin>\", line 1, in <module>\nTypeError: got <class 'int'> instead"),
        ("text/plain", "Main.txt", b"List<String> names = new ArrayList<>();\n#include <iostream>"),
        ("text/plain", "cv.txt", b"JavaScript: 5 years\nworker one=1\nPlease reply to <name here>"),
        ("text/csv", "a.csv", b"a,b\n<b>bold</b>,2\nr1,x<y and y>z\nonLine = yes,1\n"),
        ("text/markdown", "a.md", b"## JavaScript: getting started\n`$ cat <file> | grep x`"),
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
        ("text/plain", "a.txt", b"<!-- x --><script>alert(1)</script>"),
        ("text/plain", "a.txt", b"<div><script>alert(1)</script></div>"),
        ("text/plain", "a.txt", b"hello\n<img src=x onerror=alert(1)>"),
        ("text/plain", "a.txt", b"hello\nworld\n<html><body>hi</body></html>"),
        ("text/markdown", "a.md", b"# Title\n<script>alert(1)</script>"),
        ("text/markdown", "a.md", b'# Title\n<img src="x" onerror="alert(1)">'),
        ("text/plain", "a.txt", b"\xff\xfe\x00\xd8\x00\xd8 not valid utf-16"),
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


def test_text_carrying_live_markup_is_refused_naming_the_markup_not_as_text() -> None:
    # Given plain text whose words come first and whose markup (an event handler, a script) comes later
    content = b'Plain words first, then <img src=x onerror="steal()"> and <script>x()</script>'
    # When it is checked as text/plain
    reason = mismatch(content, accepted_type("text/plain", "note.txt"))
    # Then the refusal says what is wrong with it and how to keep it, rather than "it looks like text"
    assert reason is not None
    assert "live markup" in reason
    assert "upload it as HTML" in reason


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


def test_a_long_name_downloads_with_its_extension() -> None:
    from shared.domain.uploads import attachment_disposition

    header = attachment_disposition("r" * 250 + ".pdf")
    ascii_name = header.split('"')[1]
    assert len(ascii_name) == 150
    assert ascii_name.endswith(".pdf")
    assert header.endswith(".pdf")


def test_invisible_and_direction_characters_are_cleaned() -> None:
    assert clean_filename("in\u200bvoice\u200f\u061c\u2066.pdf\ufeff") == "in_voice___.pdf_"


def test_an_archive_of_too_many_entries_is_refused_before_it_is_opened() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", f'<Types><Override ContentType="{WORD_MAIN}"/></Types>')
        archive.writestr("word/document.xml", "<x/>")
        for index in range(MAX_ARCHIVE_ENTRIES):
            archive.writestr(f"empty/{index}", b"")
    reason = mismatch(buffer.getvalue(), accepted_type(DOCX, "a.docx"))
    assert reason is not None


class FakeRangeStore:
    """Fake FileContentStore holding one object in memory and counting the bytes each range read returns."""

    def __init__(self, content: bytes) -> None:
        self.content = content
        self.bytes_read = 0

    def read_range(self, key: str, *, version_id: str | None, start: int, length: int) -> bytes:
        chunk = self.content[start : start + length]
        self.bytes_read += len(chunk)
        return chunk


def test_an_office_file_is_judged_from_its_directory_not_its_whole_body() -> None:
    import os

    from shared.domain.sniffing import SNIFF_PREFIX_BYTES, archive_mismatch
    from shared.services.upload_completion import RangedObject

    # A real-shaped DOCX carrying 8 MB of incompressible media.
    document = office("word/document.xml", WORD_MAIN, {"word/media/image1.bin": os.urandom(8 * 1024 * 1024)})
    store = FakeRangeStore(document)
    stream = io.BufferedReader(RangedObject(store, "k", None, len(document)), buffer_size=256 * 1024)  # type: ignore[arg-type]
    assert archive_mismatch(stream, len(document), document[:SNIFF_PREFIX_BYTES], accepted_type(DOCX, "a.docx")) is None
    assert store.bytes_read < 1024 * 1024  # a few ranges: the end record, the directory, one small member


def test_a_zip64_record_cannot_smuggle_counts_past_the_directory_check() -> None:
    document = bytearray(office("word/document.xml", WORD_MAIN))
    end = document.rfind(b"PK\x05\x06")
    # A ZIP64 end-of-directory locator just before the classic record: zipfile would believe it.
    document[end:end] = b"PK\x06\x07" + b"\x00" * 16
    assert mismatch(bytes(document), accepted_type(DOCX, "a.docx")) is not None


def test_a_content_types_member_that_is_large_when_compressed_is_refused() -> None:
    import os

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("[Content_Types].xml", WORD_MAIN.encode() + os.urandom(2 * 1024 * 1024))
        archive.writestr("word/document.xml", "<x/>")
    assert mismatch(buffer.getvalue(), accepted_type(DOCX, "a.docx")) is not None


def test_the_ranged_reader_refuses_to_fetch_past_its_budget() -> None:
    from shared.services.upload_completion import RangedObject

    reader = RangedObject(FakeRangeStore(b"x" * 1000), "k", None, 1000, budget=100)  # type: ignore[arg-type]
    assert reader.read(100) == b"x" * 100
    with pytest.raises(OSError, match="budget"):
        reader.read(1)


def open_document() -> bytes:
    """What LibreOffice writes: an uncompressed `mimetype` member first, then the content."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        archive.writestr("content.xml", "<office:document-content/>", zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("content", "looks_like"),
    [
        (open_document(), "an OpenDocument file (.odt, .ods or .odp)"),
        (b"{\\rtf1\\ansi\\deff0 {\\fonttbl {\\f0 Times;}} Hello}", "an RTF document"),
    ],
    ids=["odt", "rtf"],
)
def test_a_document_in_another_office_format_is_refused_naming_that_format(content: bytes, looks_like: str) -> None:
    # Given an OpenDocument or RTF file declared as a .docx
    # When its content is checked
    reason = mismatch(content, accepted_type(DOCX, "report.docx"))
    # Then the refusal names the format it is in, so the user knows what to save it as
    assert reason is not None
    assert reason.endswith(f"it looks like {looks_like}")


# Recordings (issue 35): sniffed by content as every type is, as written by FFmpeg (tests/builders/recordings.py).
RECORDINGS_AS_DECLARED = [
    ("wav", "wav", "pcm_s16le", None, "audio/wav", "talk.wav"),
    ("mp3", "mp3", "libmp3lame", None, "audio/mpeg", "talk.mp3"),
    ("flac", "flac", "flac", None, "audio/flac", "talk.flac"),
    ("ogg", "ogg", "libopus", None, "audio/ogg", "talk.opus"),
    ("m4a", "ipod", "aac", None, "audio/mp4", "talk.m4a"),
    ("weba", "webm", "libopus", None, "audio/webm", "talk.weba"),
    ("mp4", "mp4", "aac", "libx264", "video/mp4", "demo.mp4"),
    ("mov", "mov", "aac", "libx264", "video/quicktime", "demo.mov"),
    ("webm", "webm", "libopus", "libvpx", "video/webm", "demo.webm"),
    ("mkv", "matroska", "aac", "libx264", "video/x-matroska", "demo.mkv"),
]


@pytest.mark.parametrize("case", RECORDINGS_AS_DECLARED, ids=lambda case: case[0])
def test_a_recording_is_accepted_as_what_its_container_is(
    tmp_path: Path, case: tuple[str, str, str, str | None, str, str]
) -> None:
    suffix, muxer, audio, video, media_type, filename = case
    pytest.importorskip("av", reason="PyAV (the dev extra) writes the recordings")
    from tests.builders.recordings import Recording, write_recording

    content = write_recording(Recording(suffix, muxer, suffix, audio, video=video, seconds=0.5), tmp_path).read_bytes()
    accepted = accepted_type(media_type, filename)
    assert accepted.kind == media_type.split("/", maxsplit=1)[0]
    assert mismatch(content, accepted) is None


def test_a_renamed_file_is_not_a_recording_and_one_recording_is_not_another(tmp_path: Path) -> None:
    pytest.importorskip("av", reason="PyAV (the dev extra) writes the recordings")
    from tests.builders.recordings import Recording, write_recording

    assert mismatch(b"%PDF-1.7\n...", accepted_type("audio/mpeg", "talk.mp3")) == (
        "the content is not an audio recording as declared (audio/mpeg): it looks like a PDF"
    )
    mp3 = write_recording(Recording("mp3", "mp3", "mp3", "libmp3lame", seconds=0.5), tmp_path).read_bytes()
    assert mismatch(mp3, accepted_type("audio/wav", "talk.wav")) == (
        "the content is not an audio recording as declared (audio/wav): it looks like a recording (audio/mpeg)"
    )
    # An MP4 declared as audio is of the family (its tracks decide, which the probe reads): the first bytes agree.
    mp4 = write_recording(Recording("mp4", "mp4", "mp4", "aac", video="libx264", seconds=0.5), tmp_path).read_bytes()
    assert mismatch(mp4, accepted_type("audio/mp4", "talk.m4a")) is None
    assert mismatch(b"RIFF\x00\x00\x00\x00AVI LIST", accepted_type("video/mp4", "a.mp4")) is not None
