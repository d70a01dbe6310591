"""Extraction throughput on the public corpus in ../shared/data, side by side with plain pypdf text dumps."""

import multiprocessing
import resource
import statistics
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA = REPO_ROOT.parent / "shared" / "data"
RUNS = 3


def _quire_pdf(paths: list[Path]) -> int:
    from shared.adapters.parsers.pdf import PdfParser
    from shared.domain.document import ExtractedDocument, ExtractionLimits

    parser, limits, pages = PdfParser(), ExtractionLimits(), 0
    for path in paths:
        outcome = parser.parse(path.read_bytes(), limits)
        if isinstance(outcome, ExtractedDocument):
            pages += outcome.page_count or 0
    return pages


def _pypdf(paths: list[Path]) -> int:
    from pypdf import PdfReader

    pages = 0
    for path in paths:
        for page in PdfReader(path).pages:
            page.extract_text()
            pages += 1
    return pages


def _readable_by_both(paths: list[Path]) -> list[Path]:
    """The files both extractors read (encrypted and broken ones are failure values in Quire, errors in pypdf)."""
    from pypdf import PdfReader

    from shared.adapters.parsers.pdf import PdfParser
    from shared.domain.document import ExtractedDocument, ExtractionLimits

    both = []
    for path in paths:
        try:
            reader = PdfReader(path)
            if reader.is_encrypted:
                continue
            len(reader.pages)
        except Exception:  # noqa: S112 - a file pypdf cannot open is simply not in the comparison
            continue
        if isinstance(PdfParser().parse(path.read_bytes(), ExtractionLimits()), ExtractedDocument):
            both.append(path)
    return both


def _peak_rss_mb(path: Path) -> tuple[float, float]:
    """Peak resident memory of a fresh process before and after extracting one file (PDFium's native
    memory included): the interpreter with its imports, then the extraction's high-water mark."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        before, after = pool.apply(_measure, (str(path),))
    return float(before), float(after)


def _measure(path: str) -> tuple[float, float]:
    from shared.adapters.parsers.pdf import PdfParser
    from shared.domain.document import ExtractionLimits

    content = Path(path).read_bytes()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    PdfParser().parse(content, ExtractionLimits())
    return before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rate(work: Any, paths: list[Path]) -> tuple[list[float], int]:
    rates, units = [], 0
    for _ in range(RUNS):
        begun = time.perf_counter()
        units = work(paths)
        rates.append(units / (time.perf_counter() - begun))
    return rates, units


def figures(result: Any) -> list[dict[str, Any]]:
    pdfs = sorted((DATA / "pdfs").rglob("*.pdf"))
    if not pdfs:
        print("(skipped extraction figures: ../shared/data/pdfs is not present)")
        return []
    corpus = _readable_by_both(pdfs)
    quire, pages = _rate(_quire_pdf, corpus)
    plain, _ = _rate(_pypdf, corpus)
    largest = max(corpus, key=lambda path: path.stat().st_size)
    before, after = _peak_rss_mb(largest)
    out = [
        result(
            "PDF structured extraction (PDFium: blocks, headings, boxes)",
            quire,
            "pages/s",
            files=len(corpus),
            pages=pages,
        ),
        result("PDF plain text, pypdf extract_text (baseline)", plain, "pages/s", files=len(corpus), pages=pages),
    ]
    out[0]["baseline"] = round(statistics.median(plain), 3)
    out[0]["ratio"] = round(statistics.median(quire) / statistics.median(plain), 2)
    out.append(result(f"PDF peak RSS extracting the largest file ({largest.name}, {largest.stat().st_size // 1024} KB)",
                      [after], "MB", process_before_extraction_mb=round(before, 1)))  # fmt: skip
    out.extend(_office(result))
    return out


def _office(result: Any) -> list[dict[str, Any]]:
    from shared.adapters.parsers.docx import DocxParser
    from shared.adapters.parsers.pptx import PptxParser
    from shared.adapters.parsers.xlsx import XlsxParser
    from shared.domain.document import ExtractionLimits

    figures_out = []
    for suffix, parser in ((".docx", DocxParser()), (".xlsx", XlsxParser()), (".pptx", PptxParser())):
        files = sorted(p for p in (DATA / "office").rglob(f"*{suffix}"))
        if not files:
            continue
        contents = [path.read_bytes() for path in files]

        def work(_: list[Path], contents: list[bytes] = contents, parser: Any = parser) -> int:
            for content in contents:
                parser.parse(content, ExtractionLimits())
            return len(contents)

        rates, _ = _rate(work, files)
        figures_out.append(result(f"{suffix[1:].upper()} extraction", rates, "files/s", files=len(files)))
    return figures_out
