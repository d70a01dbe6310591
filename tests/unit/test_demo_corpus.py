"""The demo corpus: one document per accepted format, each passing the real sniffing and parsing to its facts."""

import io
from dataclasses import dataclass
from pathlib import Path

import pytest

from shared.adapters.parsers.csv_table import CsvParser
from shared.adapters.parsers.docx import DocxParser
from shared.adapters.parsers.html import HtmlParser
from shared.adapters.parsers.markdown import MarkdownParser
from shared.adapters.parsers.pdf import PdfParser
from shared.adapters.parsers.plain_text import PlainTextParser
from shared.adapters.parsers.pptx import PptxParser
from shared.adapters.parsers.xlsx import XlsxParser
from shared.domain.document import BlockKind, ExtractedDocument, ExtractionLimits
from shared.domain.sniffing import SNIFF_PREFIX_BYTES, archive_mismatch, is_archive_type, mismatch
from shared.domain.uploads import ACCEPTED_TYPES, MEDIA_KINDS, AcceptedType, accepted_type
from shared.local.demo_corpus import write_demo_corpus
from shared.ports import DocumentParser

# The parsers the composition root builds (Container.extractor), called directly rather than in a fork.
PARSERS: list[DocumentParser] = [
    PdfParser(),
    DocxParser(),
    XlsxParser(),
    PptxParser(),
    HtmlParser(),
    MarkdownParser(),
    CsvParser(),
    PlainTextParser(),
]


@dataclass(frozen=True)
class Expected:
    min_blocks: int
    kinds: frozenset[BlockKind]
    facts: tuple[str, ...]
    table_row: tuple[str, ...] = ()  # cells that one row of one table must hold, in order
    pages: int | None = None  # pages or slides, where the format has them


H, P, L, T, C = BlockKind.HEADING, BlockKind.PARAGRAPH, BlockKind.LIST_ITEM, BlockKind.TABLE, BlockKind.CODE
# Spreadsheets and CSV become one table per sheet (up to 100 rows each), so they have fewer blocks.
EXPECTED = {
    "incident-report-ERR-4021.pdf": Expected(
        5,
        frozenset({H, P, T}),
        ("ERR-4021", "certificate", "47 minutes", "expiry alarm"),
        ("09:12", "Payments certificate expires", "-"),
        pages=2,
    ),
    "employee-handbook.docx": Expected(
        5, frozenset({H, P, L, T}), ("Remote work", "Parental leave"), ("Germany", "30")
    ),
    "budget-Q3-2026.xlsx": Expected(
        2, frozenset({T}), ("Manufacturing", "ERR-4021"), ("Department", "Q3-2026 spend (EUR)", "Headcount", "Owner")
    ),
    "product-roadmap.pptx": Expected(
        5,
        frozenset({H, L, P}),
        ("Warehouse robot R2 launches in Q3-2026", "14 hours", "Pilot customers"),
        pages=4,
    ),
    "security-policy.html": Expected(
        5,
        frozenset({H, P, L, T}),
        ("rotation is not required", "MFA is required", "hardware security keys"),
        ("Administrator", "16 characters", "Hardware key only", "Not required"),
    ),
    "onboarding.md": Expected(5, frozenset({H, P, L, C}), ("VPN-7731", "Laptop setup", "First-week checklist")),
    "suppliers.csv": Expected(1, frozenset({T}), ("Kessler Antriebe GmbH",), ("Kessler Antriebe GmbH", "Germany")),
    "meeting-notes-2026-09-02.txt": Expected(5, frozenset({P}), ("ERR-4021", "battery supplier", "R2")),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_demo_corpus(tmp_path_factory.mktemp("demo") / "corpus")


def declared_type(path: Path) -> AcceptedType:
    """The media type an uploader would declare for the file, checked by the upload rules for its name."""
    media_type = next(accepted.media_type for accepted in ACCEPTED_TYPES if path.suffix.lower() in accepted.extensions)
    return accepted_type(media_type, path.name)


def sniffed_mismatch(content: bytes, accepted: AcceptedType) -> str | None:
    """As upload completion sniffs: the first bytes of anything, the zip directory of an Office file."""
    prefix = content[:SNIFF_PREFIX_BYTES]
    if not is_archive_type(accepted):
        return mismatch(prefix, accepted)
    return archive_mismatch(io.BytesIO(content), len(content), prefix, accepted)


def extracted(path: Path) -> ExtractedDocument:
    media_type = declared_type(path).media_type
    parser = next(parser for parser in PARSERS if media_type in parser.media_types)
    outcome = parser.parse(path.read_bytes(), ExtractionLimits())
    assert isinstance(outcome, ExtractedDocument), outcome
    return outcome


# Scans whose words exist only in pixels (OCR reads them in the pipeline): no text layer at all.
SCANS = {"scanned-remittance.pdf": 2, "returns-dashboard.png": 1, "faded-delivery-note.pdf": 1}


def test_the_corpus_has_one_file_for_each_accepted_document_format(corpus: list[Path]) -> None:
    # Given the document formats Quire accepts: images aside (the demo's images are scans, below), and recordings
    formats = sorted(
        accepted.kind
        for accepted in ACCEPTED_TYPES
        if not accepted.media_type.startswith("image/") and accepted.kind not in MEDIA_KINDS
    )
    # When the corpus is written
    documents = [path for path in corpus if path.name not in SCANS]
    kinds = sorted(declared_type(path).kind for path in documents)
    # Then there is exactly one file per format, all of them in the directory, in the documented order
    assert kinds == formats
    assert [path.name for path in documents] == list(EXPECTED)
    assert [path.name for path in corpus if path.name in SCANS] == list(SCANS)
    assert all(path.is_file() for path in corpus)


@pytest.mark.parametrize("name", list(SCANS))
def test_every_scan_is_its_declared_type_with_every_page_left_to_ocr(corpus: list[Path], name: str) -> None:
    from shared.adapters.parsers.image import ImageParser

    path = next(path for path in corpus if path.name == name)
    accepted = declared_type(path)
    assert sniffed_mismatch(path.read_bytes(), accepted) is None
    parser = ImageParser() if accepted.media_type.startswith("image/") else PdfParser()
    outcome = parser.parse(path.read_bytes(), ExtractionLimits())
    assert isinstance(outcome, ExtractedDocument)
    assert outcome.blocks == () and outcome.pages_without_text == tuple(range(1, SCANS[name] + 1))


def test_writing_twice_gives_the_same_files_byte_for_byte(corpus: list[Path], tmp_path: Path) -> None:
    # Given a corpus already written
    # When it is written again elsewhere
    again = write_demo_corpus(tmp_path)
    # Then every file is identical: nothing in them comes from a clock
    assert [(path.name, path.read_bytes()) for path in again] == [(path.name, path.read_bytes()) for path in corpus]


@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_file_is_sniffed_as_its_declared_type(corpus: list[Path], name: str) -> None:
    # Given a corpus file and the media type its extension declares
    path = next(path for path in corpus if path.name == name)
    accepted = declared_type(path)
    # When its bytes are sniffed as upload completion does
    # Then the content agrees with the declaration
    assert sniffed_mismatch(path.read_bytes(), accepted) is None


@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_file_extracts_to_blocks_holding_its_key_facts(corpus: list[Path], name: str) -> None:
    # Given a corpus file and what it is known to say
    path = next(path for path in corpus if path.name == name)
    expected = EXPECTED[name]
    # When the project's parser for its type extracts it
    document = extracted(path)
    # Then it has the blocks and structure of a real document, and the facts a search demo looks for
    assert len(document.blocks) >= expected.min_blocks
    assert expected.kinds <= {block.kind for block in document.blocks}
    assert document.warnings == ()
    assert document.page_count == expected.pages
    text = " ".join(
        " ".join([block.text, *(cell for row in (block.table.rows if block.table else ()) for cell in row)])
        for block in document.blocks
    )
    for fact in expected.facts:
        assert fact in " ".join(text.split()), fact
    if expected.table_row:
        rows = [row for block in document.blocks if block.table for row in block.table.rows]
        width = len(expected.table_row)
        assert any(row[:width] == expected.table_row for row in rows), rows


def test_the_demo_recording_is_a_spoken_mp3_or_the_reason_there_is_none(tmp_path: Path) -> None:
    import os

    from shared.domain.media_sniffing import sniff_media_type
    from shared.local.demo_corpus import write_demo_recording
    from shared.local.speech_corpus import espeak_missing

    made = write_demo_recording(tmp_path)
    if espeak_missing() is not None:
        # Said, never pretended: the demo prints this and runs on without the recording.
        assert made == espeak_missing() and not os.environ.get("QUIRE_REQUIRE_SPEECH")
        return
    assert isinstance(made, Path) and made.name == "standup-recording.mp3"
    content = made.read_bytes()
    assert sniff_media_type(content[:8192]) == "audio/mpeg" and len(content) > 10_000


def test_a_recordings_citation_is_printed_with_its_moment_and_how_surely_it_was_heard() -> None:
    from shared.local.search_output import _provenance, where

    cited = {"startSeconds": 6.45, "endSeconds": 10.25, "speaker": None, "kind": "transcription"}
    assert where(cited) == "[00:06\u201300:10]"
    assert where({**cited, "speaker": "spk_1"}) == "[00:06\u201300:10] spk_1"
    assert _provenance({**cited, "speechConfidence": 0.8}) == "; heard by the speech engine, confidence 0.80"
