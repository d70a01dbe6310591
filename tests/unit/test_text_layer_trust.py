"""A text layer is judged before it is trusted: a scan whose layer covers little of its writing, or a layer that
is not text, goes to OCR like a page without text, the reason on the version; typeset pages (plain, with a big
photo, a full-bleed cover, a chart) and a scan with a good layer do not. The scans are generated
(tests/builders/text_layers.py): the words OCR must find exist only in their pixels."""

import re
from collections.abc import Callable
from typing import Any

import pytest

from shared.adapters.local.rapid_ocr import RapidOcr
from shared.adapters.local.unavailable import UnavailableOcr, UnavailableVision
from shared.adapters.parsers.pdf import PDF_TYPE, PdfParser
from shared.domain.capabilities import CapabilityStatus
from shared.domain.document import ExtractedDocument, ExtractionLimits
from shared.domain.files import FileVersionRecord, OcrState, ProcessingState
from shared.domain.recognition import BoundingBox, RecognitionResult, RecognizedLine, RecognizedPage
from shared.domain.usage import Usage
from shared.ports import OcrProvider, OcrSource
from shared.services.extracted_documents import ExtractedDocuments
from shared.services.extraction import Extractor
from shared.services.pipeline import IngestionPipeline
from shared.services.recognition import Recognizers, recognition_plan
from tests.builders import text_layers
from tests.builders.pdf import page_texts, report_pdf
from tests.fakes import Fakes, principal

LIMITS = ExtractionLimits()
COVERAGE = re.compile(r"text layer covers (\d+)% of the inked area")


def extracted(content: bytes) -> ExtractedDocument:
    outcome = PdfParser().parse(content, LIMITS)
    assert isinstance(outcome, ExtractedDocument), outcome
    return outcome


def ocr_pages(document: ExtractedDocument) -> tuple[int, ...]:
    return recognition_plan(PDF_TYPE, document, every_page=False).ocr_pages


def coverage_warning(document: ExtractedDocument) -> int:
    """The share of the page's writing its layer covers, as the document's warning says it."""
    found = [match for warning in document.warnings if (match := COVERAGE.search(warning))]
    assert found, document.warnings
    return int(found[0].group(1))


@pytest.mark.parametrize("beneath", [False, True], ids=["invisible-layer", "layer-beneath-the-scan"])
def test_a_scan_whose_layer_lost_its_chinese_goes_to_ocr_with_the_share_it_covers(beneath: bool) -> None:
    # Given a scanned report whose layer (GBK-EUC-H, not embedded, no ToUnicode) PDFium reads only the digits of
    content = text_layers.lost_cjk_layer_scan(beneath=beneath)
    read = page_texts(content)[0]
    assert read and re.fullmatch(r"[\d\s]+", read), read
    # When it is parsed
    document = extracted(content)
    # Then the page, which has a text layer, is read by OCR; the reason says how little of its writing it covers
    assert document.pages_without_text == ()
    assert ocr_pages(document) == (1,)
    assert coverage_warning(document) < 20
    # And what the layer said is kept until OCR has read the page
    assert "2023" in " ".join(block.text for block in document.blocks)


def test_a_scanners_letter_spaced_layer_goes_to_ocr_as_implausible() -> None:
    # Given a scan whose own layer spaced every letter apart: "T h e s e s e c r e t ..."
    content = text_layers.spaced_letters_layer_scan()
    assert page_texts(content)[0].startswith("T h e s e")
    # When it is parsed
    document = extracted(content)
    # Then it is read by OCR, and the reason names what is wrong with the layer
    assert ocr_pages(document) == (1,)
    assert any(
        "text layer implausible: 100% one-letter words (letters spaced apart)" in warning
        for warning in document.warnings
    )


GOOD_PAGES: dict[str, Callable[[], bytes]] = {
    "plain text": lambda: report_pdf(blank_second_page=False),
    "text and a big photo": text_layers.photo_page,
    "text over a full-page photo": text_layers.full_bleed_photo_page,
    "a chart with labels": text_layers.chart_page,
    "a scan with a good layer": text_layers.good_layer_scan,
    "a scan with a photo and a good layer": lambda: text_layers.good_layer_scan(photo=True),
}


@pytest.mark.parametrize("build", GOOD_PAGES.values(), ids=GOOD_PAGES.keys())
def test_a_page_whose_layer_is_good_is_not_sent_to_ocr(build: Callable[[], bytes]) -> None:
    # Given a page with a good text layer, whatever else it draws
    # When it is parsed
    document = extracted(build())
    # Then its layer is its text: nothing is sent to OCR, nothing is doubted
    assert document.blocks
    assert ocr_pages(document) == ()
    assert not any("not trusted" in warning for warning in document.warnings)


class ReadsTheScan:
    """An OCR engine that reads what the scan's pixels say (the scan's own words, as a generated scan knows
    them), and records which pages it was asked for."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        self.asked: list[tuple[int, ...] | None] = []

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready("reads-the-scan")

    def start(self, source: OcrSource) -> RecognitionResult:
        self.asked.append(source.pages)
        pages = tuple(
            RecognizedPage(
                page=page,
                lines=tuple(
                    RecognizedLine(
                        text=text,
                        box=BoundingBox(left=0.1, top=0.1 + 0.03 * index, width=0.8, height=0.02),
                        confidence=0.97,
                    )
                    for index, text in enumerate(self._lines)
                ),
            )
            for page in source.pages or (1,)
        )
        return RecognitionResult(
            engine="reads-the-scan",
            pages=pages,
            usage=Usage(provider="reads-the-scan", operation="read", priced=False, pages=1),
        )

    def collect(self, job: Any) -> None:
        return None

    def discard(self, job: Any) -> None:
        return None


def processed(content: bytes, ocr: OcrProvider, fakes: Fakes) -> tuple[FileVersionRecord, ExtractedDocument]:
    """Upload `content` as a PDF and walk the whole pipeline (the real Extractor: the parser in its sandboxed
    child), with `ocr` as the engine; the version and its stored document."""
    ticket = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename="report.pdf",
        media_type=PDF_TYPE,
        byte_size=len(content),
    )
    landed = fakes.content.post(ticket.upload, content)
    fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size)
    pipeline = IngestionPipeline(
        fakes.metadata,
        fakes.metadata,
        fakes.content,
        Extractor([PdfParser()], ExtractionLimits(max_pages=50, timeout_seconds=120), memory_limit_bytes=None),
        fakes.indexer(),
        recognizers=Recognizers(ocr=ocr, vision=UnavailableVision("none")),
        ledger=fakes.ledger,
        sleep=lambda seconds: None,
    )
    pipeline.run(fakes.workflow.started[-1])
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None
    version = found[1]
    return version, ExtractedDocuments(fakes.metadata, fakes.metadata, fakes.content).read(version)


def test_the_pipeline_ocrs_a_doubted_page_and_the_version_says_why() -> None:
    # Given the scanned report whose layer lost its Chinese, and an engine that reads the scan
    engine = ReadsTheScan(text_layers.REPORT[1])
    # When it is uploaded and processed
    version, document = processed(text_layers.lost_cjk_layer_scan(), engine, Fakes())
    # Then OCR was asked for the page, its reading replaced the layer, and the version's summary says why
    assert engine.asked == [(1,)]
    assert version.processing_state is ProcessingState.INDEXED
    assert version.ocr_state is OcrState.RECOGNIZED and version.recognized_pages == (1,)
    text = " ".join(block.text for block in document.blocks)
    assert "Xining reservoir" in text and "2020" not in text
    assert any(
        COVERAGE.search(warning) and "OCR reads these pages" in warning for warning in version.extraction_warnings
    )
    assert document.doubtful_text_layers == ()


def test_without_ocr_a_doubted_layer_is_kept_and_the_version_says_so() -> None:
    # Given the letter-spaced scan, and no OCR engine
    version, document = processed(
        text_layers.spaced_letters_layer_scan(), UnavailableOcr("no OCR engine here"), Fakes()
    )
    # Then the layer is all there is: kept, indexed, and the version says it is not trusted and was not read
    assert version.processing_state is ProcessingState.INDEXED
    assert "T h e s e" in " ".join(block.text for block in document.blocks)
    assert any("text layer implausible" in warning for warning in version.extraction_warnings)
    assert any("or one not trusted, and OCR is unavailable here" in warning for warning in version.extraction_warnings)


@pytest.fixture(scope="module")
def read_by_rapid_ocr() -> tuple[FileVersionRecord, ExtractedDocument]:
    return processed(text_layers.lost_cjk_layer_scan(), RapidOcr(), Fakes())


@pytest.mark.slow
def test_the_local_engine_reads_the_words_the_lost_layer_left_out(
    read_by_rapid_ocr: tuple[FileVersionRecord, ExtractedDocument],
) -> None:
    # Given the scanned report whose layer PDFium reads only the digits of, processed with RapidOCR
    version, document = read_by_rapid_ocr
    # Then the document holds the scan's words, read by OCR, where the layer had a year per line
    text = " ".join(block.text for block in document.blocks)
    for words in ("Water bureau annual report", "Xining reservoir", "Inspectors certified dam B7", "hydrological"):
        assert words in text, text
    assert version.ocr_state is OcrState.RECOGNIZED and version.recognized_pages == (1,)
    assert all(block.confidence is not None for block in document.blocks)
