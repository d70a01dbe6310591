"""Local OCR: pages per second through RapidOCR (as the pipeline calls it: one sandboxed child per
document, models loaded in it, only the pages that need OCR rendered) and word accuracy against the words
the generated scans were typeset with. The degraded scan is reported apart: it is meant to read badly."""

import re
import statistics
import time
from collections import Counter
from typing import Any

from shared.adapters.local.rapid_ocr import RapidOcr
from shared.adapters.parsers.image import ImageParser
from shared.adapters.parsers.pdf import PdfParser
from shared.domain.document import ExtractedDocument, ExtractionLimits
from shared.domain.recognition import RecognitionResult
from shared.local.scan_corpus import GeneratedScan, degraded_pdf, long_scan, mixed_pdf, scanned_pdf, table_screenshot
from shared.ports import OcrSource

RUNS = 3


def _read(engine: RapidOcr, scan: GeneratedScan) -> RecognitionResult:
    parser = PdfParser() if scan.media_type == "application/pdf" else ImageParser()
    document = parser.parse(scan.content, ExtractionLimits())
    if not isinstance(document, ExtractedDocument):
        raise TypeError(f"{scan.filename} did not parse: {document}")
    source = OcrSource(
        media_type=scan.media_type,
        pages=document.pages_without_text,
        page_count=document.page_count,
        storage_key="bench",
        storage_version_id=None,
        read=lambda: scan.content,
    )
    return engine.start(source)


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def word_accuracy(scan: GeneratedScan, result: RecognitionResult) -> tuple[int, int]:
    """(words recognised, words printed) over the pages OCR read: each printed word counts once per time
    it was printed, matched at most as often as OCR read it (a bag of words: order is the layout's job)."""
    matched = printed = 0
    for page in result.pages:
        truth = Counter(_tokens(" ".join(scan.page_words[page.page])))
        read = Counter(_tokens(" ".join(line.text for line in page.lines)))
        read.update(_tokens(" ".join(cell for table in page.tables for row in table.rows for cell in row)))
        matched += sum((truth & read).values())
        printed += sum(truth.values())
    return matched, printed


def figures(result: Any) -> list[dict[str, Any]]:
    engine = RapidOcr()
    clean = [scanned_pdf(), mixed_pdf(), table_screenshot()]
    rates: list[float] = []
    last: list[RecognitionResult] = []
    for _ in range(RUNS):
        begun = time.perf_counter()
        last = [_read(engine, scan) for scan in clean]
        pages = sum(len(read.pages) for read in last)
        rates.append(pages / (time.perf_counter() - begun))
    matched = printed = 0
    for scan, read in zip(clean, last, strict=True):
        good, total = word_accuracy(scan, read)
        matched, printed = matched + good, printed + total
    # Per page once the engine is loaded: a ten-page scan pays the per-document cost (a fresh sandboxed
    # child, the models loaded into it, the first inference warming up) once.
    long = long_scan(10)
    long_rates = []
    for _ in range(RUNS):
        begun = time.perf_counter()
        long_read = _read(engine, long)
        long_rates.append(len(long_read.pages) / (time.perf_counter() - begun))
    faded = degraded_pdf()
    faded_read = _read(engine, faded)
    faded_good, faded_total = word_accuracy(faded, faded_read)
    return [
        result(
            "OCR pages per second, local RapidOCR (sandboxed child per document, orientation check, 200 dpi)",
            rates,
            "pages/s",
            pages=pages,
            documents=len(clean),
            upside_down_pages=1,
        ),
        result(
            "OCR pages per second on a 10-page scan (per-document cost paid once)",
            long_rates,
            "pages/s",
            pages=len(long_read.pages),
        ),
        result(
            "OCR word accuracy on generated scans (typeset text, one page upside down, a screenshot table)",
            [100.0 * matched / printed],
            "%",
            words=printed,
            confidence=round(statistics.mean(read.confidence for read in last), 3),
        ),
        result(
            "OCR word accuracy on the deliberately degraded scan (fax quality; flagged low confidence)",
            [100.0 * faded_good / faded_total],
            "%",
            words=faded_total,
            confidence=round(faded_read.confidence, 3),
        ),
    ]
