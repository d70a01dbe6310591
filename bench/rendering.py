"""Export rendering: PDF and DOCX throughput (pages/s) of a 100-page artifact with 20 tables, peak memory, and how
much of a document survives the round trip: extract (Quire's parsers) → render to every format → parse back,
as the fraction of headings and of table cells recovered, over the demo documents and ../shared/data office files."""

import multiprocessing
import resource
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA = REPO_ROOT.parent / "shared" / "data"
RUNS = 3
TABLES = 20


def artifact_blocks() -> tuple[Any, ...]:
    """About 100 PDF pages: 20 sections, each a heading, prose, a list and a 40-row table."""
    from shared.domain.document import Block, BlockKind, Table

    prose = (
        "Quarterly operations in this region covered procurement, logistics and customer service. Volumes grew"
        " steadily while unit costs fell, and the remaining risks are listed below with their owners. "
    ) * 6
    blocks: list[Block] = [Block(kind=BlockKind.HEADING, text="Operations review", level=1)]
    for section in range(1, TABLES + 1):
        blocks.append(Block(kind=BlockKind.HEADING, text=f"Region {section}", level=2))
        blocks.extend(Block(kind=BlockKind.PARAGRAPH, text=prose) for _ in range(14))
        blocks.extend(
            Block(kind=BlockKind.LIST_ITEM, text=f"Risk {item}: supplier lead times", depth=0) for item in range(4)
        )
        rows = [
            ("Month", "Orders", "Cost", "Owner"),
            *((f"M{r}", str(r * 17), f"{r * 3.5:.2f}", "Ops") for r in range(40)),
        ]
        blocks.append(Block(kind=BlockKind.TABLE, table=Table(rows=tuple(rows), header_rows=1)))
    return tuple(blocks)


def _peak_rss_mb() -> float:
    """This process's own high-water mark. Not ru_maxrss: Linux keeps that across exec, so a spawned child
    would report the (much larger) benchmark process it was forked from; VmHWM starts again with the exec."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _render(fmt: str) -> tuple[int, float, float, float]:
    """In a fresh process: pages, seconds, and the process's peak RSS (MB) before and after one render (its
    imports included: a high-water mark, so the render's own growth can hide below the imports')."""
    from shared.bootstrap import export_renderers
    from shared.domain.exports import ExportFormat, RenderLimits, RenderRequest

    request = RenderRequest(title="Operations review", blocks=artifact_blocks(), content_id="0" * 64)
    renderer = export_renderers()[ExportFormat(fmt)]
    before = _peak_rss_mb()
    begun = time.perf_counter()
    rendered = renderer.render(request, RenderLimits())
    seconds = time.perf_counter() - begun
    return rendered.page_count or 0, seconds, before, _peak_rss_mb()


def _in_fresh_process(fmt: str) -> tuple[int, float, float, float]:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_render, (fmt,))


def throughput(result: Any) -> list[dict[str, Any]]:
    pages = 0
    out = []
    for fmt in ("pdf", "docx"):
        runs = [_in_fresh_process(fmt) for _ in range(RUNS)]
        if fmt == "pdf":
            pages = runs[0][0]
        rates = [pages / seconds for _, seconds, _, _ in runs]
        out.append(
            result(
                f"{fmt.upper()} render of a {pages}-page artifact with {TABLES} tables",
                rates,
                "pages/s",
                pages=pages,
                seconds=[round(seconds, 2) for _, seconds, _, _ in runs],
            )
        )
        out.append(
            result(
                f"{fmt.upper()} render peak RSS of the rendering process",
                [peak for _, _, _, peak in runs],
                "MB",
                before_render_mb=[round(before, 1) for _, _, before, _ in runs],
            )
        )
    return out


def _documents() -> list[tuple[str, bytes, Any]]:
    """(name, bytes, parser) of every source: the demo corpus (the files with a text layer) and the data's
    office files."""
    from shared.bootstrap import document_parsers
    from shared.local.api_client import media_type_for
    from shared.local.demo_corpus import write_demo_corpus

    parsers = {media: parser for parser in document_parsers() for media in parser.media_types}
    sources: list[tuple[str, bytes, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        for path in write_demo_corpus(Path(scratch)):
            media = media_type_for(path)
            if media in parsers and not media.startswith("image/"):
                sources.append((f"demo/{path.name}", path.read_bytes(), parsers[media]))
    for suffix in (".docx", ".xlsx", ".pptx"):
        for path in sorted((DATA / "office").rglob(f"*{suffix}")):
            sources.append((str(path.relative_to(DATA)), path.read_bytes(), parsers[media_type_for(path)]))
    return sources


def _normal(text: str) -> str:
    return " ".join(text.split())


def _structure(document: Any) -> tuple[Counter[str], Counter[str]]:
    from shared.domain.document import BlockKind

    headings = Counter(_normal(b.text) for b in document.blocks if b.kind is BlockKind.HEADING and _normal(b.text))
    cells = Counter(_normal(c) for b in document.blocks if b.table for row in b.table.rows for c in row if _normal(c))
    return headings, cells


def fidelity(result: Any) -> list[dict[str, Any]]:
    from shared.bootstrap import document_parsers, export_renderers
    from shared.domain.document import ExtractedDocument, ExtractionLimits
    from shared.domain.exports import ExportFormat, RenderFailed, RenderLimits, RenderRequest

    parsers = {media: parser for parser in document_parsers() for media in parser.media_types}
    renderers = export_renderers()
    totals: dict[str, list[int]] = {
        fmt.value: [0, 0, 0, 0, 0] for fmt in ExportFormat
    }  # heads, found, cells, found, failed
    sources = _documents()
    for _, content, parser in sources:
        source = parser.parse(content, ExtractionLimits())
        if not isinstance(source, ExtractedDocument):
            continue
        headings, cells = _structure(source)
        request = RenderRequest(title="fidelity", blocks=source.blocks, content_id="0" * 64)
        for fmt, renderer in renderers.items():
            tally = totals[fmt.value]
            try:
                rendered = renderer.render(request, RenderLimits())
            except RenderFailed:
                tally[4] += 1
                continue
            back = parsers[fmt.media_type].parse(rendered.content, ExtractionLimits())
            got_headings, got_cells = (
                _structure(back) if isinstance(back, ExtractedDocument) else (Counter(), Counter())
            )
            # CSV and XLSX hold tables only, and plain text has no headings: they are scored on what they hold.
            tally[0] += sum(headings.values())
            tally[1] += sum((headings & got_headings).values())
            tally[2] += sum(cells.values())
            tally[3] += sum((cells & got_cells).values())
    out = []
    for format_name, (heads, found_heads, all_cells, found_cells, failed) in totals.items():
        out.append(
            result(
                f"round trip to {format_name}: headings recovered",
                [found_heads / heads if heads else 0.0],
                "ratio",
                headings=heads,
                documents=len(sources),
                refused=failed,
            )
        )
        out.append(
            result(
                f"round trip to {format_name}: table cells recovered",
                [found_cells / all_cells if all_cells else 0.0],
                "ratio",
                cells=all_cells,
                documents=len(sources),
                refused=failed,
            )
        )
    return out


def figures(result: Any) -> list[dict[str, Any]]:
    return [*throughput(result), *fidelity(result)]
