"""Page images (`GET /v1/files/{id}/pages/{n}`): the cost of drawing a page the console shows a citation on, the
whole path a cache miss takes (a fresh sandboxed child, PDFium or Pillow, the PNG), and the drawing's size.
A cache hit reads the drawing's first 256 bytes and signs a URL: no drawing, so it is not measured here."""

import io
import time
from typing import Any

RUNS = 5


def _pdf_page() -> bytes:
    """An A4 page of prose, as a typed report's page is."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    for _ in range(12):
        text = "Quarterly operations covered procurement, logistics and customer service. " * 4
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def _photo() -> bytes:
    """A 12-megapixel JPEG (4000 x 3000), as a phone's photo of a page is."""
    from PIL import Image

    image = Image.effect_noise((4000, 3000), 40).convert("RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=85)
    return buffer.getvalue()


def _draw(content: bytes, media_type: str) -> tuple[float, int, tuple[int, int]]:
    """Milliseconds to draw page 1 through the service's own sandboxed path, the PNG's bytes, its size."""
    from shared.adapters.renderers.page_image import PdfiumPageRasterizer
    from shared.domain.page_images import DrawnPage
    from shared.sandbox import dotted_name
    from shared.services.page_images import PAGE_DRAW_MEMORY_BYTES, PAGE_DRAW_SECONDS, draw_page

    begun = time.perf_counter()
    outcome = draw_page(
        dotted_name(PdfiumPageRasterizer),
        media_type,
        content,
        1,
        timeout_seconds=PAGE_DRAW_SECONDS,
        memory_limit_bytes=PAGE_DRAW_MEMORY_BYTES,
    )
    elapsed = (time.perf_counter() - begun) * 1000
    assert isinstance(outcome, DrawnPage), outcome
    return elapsed, len(outcome.png), (outcome.width, outcome.height)


def figures(result: Any) -> list[dict[str, Any]]:
    rows = []
    for name, content, media_type in (
        ("page image drawn, A4 PDF page (cache miss, sandboxed)", _pdf_page(), "application/pdf"),
        ("page image drawn, 12 MP photo (cache miss, sandboxed)", _photo(), "image/jpeg"),
    ):
        runs = [_draw(content, media_type) for _ in range(RUNS)]
        width, height = runs[0][2]
        rows.append(
            result(
                name,
                [run[0] for run in runs],
                "ms",
                png_kb=round(runs[0][1] / 1024, 1),
                size=f"{width}x{height}",
                table_note=f"{width}x{height} px, {runs[0][1] / 1024:.0f} KB PNG",
            )
        )
    return rows
