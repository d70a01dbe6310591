"""Scans generated on the spot, for the OCR tests, the benchmark and the demo: nothing binary is committed.

A page is typeset by fpdf2 (a real PDF with a text layer), rasterised by PDFium at scanner resolution,
optionally degraded (blur, noise) or turned, and embedded back into a PDF as nothing but an image: what
a scanner produces. Each scan keeps the words printed on each page, the ground truth that word accuracy
is measured against. The words a test searches for exist only in the pixels.
"""

import io
from dataclasses import dataclass, field
from datetime import UTC, datetime

SCAN_DPI = 200
# Every date a writer would otherwise take from the clock: the same scan is the same bytes.
_FIXED_TIME = datetime(2026, 9, 1, 9, 0, 0, tzinfo=UTC)
PDF_TYPE = "application/pdf"
PNG_TYPE = "image/png"


@dataclass(frozen=True)
class GeneratedScan:
    filename: str
    media_type: str
    content: bytes
    # The words printed on each page (1-based), in reading order.
    page_words: dict[int, tuple[str, ...]]
    # Pages that carry a real text layer (a mixed PDF); OCR must leave them alone.
    text_layer_pages: tuple[int, ...] = ()
    # How far each turned page was turned clockwise before it was scanned.
    turned_pages: dict[int, int] = field(default_factory=dict)


INVOICE_PAGE = (
    "Remittance advice",
    [
        "Payment for invoice QX-7731 was received from Harrowgate Ceramics on 14 March 2026.",
        "The transfer of 18,240 euros settles the kiln maintenance contract for the Lisbon studio.",
        "Questions about this remittance go to the treasury desk, reference TREASURY-0915.",
    ],
)
INSPECTION_PAGE = (
    "Inspection certificate",
    [
        "The pressure vessel with serial number PV-40982 passed its hydrostatic test.",
        "Inspector Marguerite Okonkwo certified the vessel for service until October 2028.",
        "Any weld repair voids this certificate until the vessel is inspected again.",
    ],
)
MINUTES_PAGE = (
    "Harbour committee minutes",
    [
        "The committee approved dredging the northern berth before the autumn regatta.",
        "Funding of 96,500 pounds comes from the Quillbrook maritime trust.",
        "The harbourmaster will report on silt levels at the next meeting.",
    ],
)
TEXT_LAYER_PAGE = (
    "Quarterly operations summary",
    [
        "This page was typed, not scanned: its words come from the PDF's own text layer.",
        "Warehouse throughput rose by eleven percent over the previous quarter.",
    ],
)
BLURRED_PAGE = (
    "Faded delivery note",
    [
        "Consignment of ceramic insulators for the Brackenridge substation, crate 17 of 40.",
        "Received damaged; the carrier Velloria Freight accepts liability for two crates.",
        "The driver noted water ingress through the rear doors near the Dunmore depot.",
        "Replacement insulators are promised within nine working days of this note.",
        "Signed on behalf of the consignee by the night supervisor, Tobias Ferreira.",
    ],
)
# A fax-quality copy: the page sampled at 1/7.5 of scanner resolution (about 27 dpi) and blown back up.
# RapidOCR still finds every line but reads them at about 0.6 confidence (measured: 0.88 at 1/6.5,
# 0.74 at 1/7, 0.61 at 1/7.5), well under the 0.7 flag.
DEGRADED_SCALE = 7.5
SCREENSHOT_ROWS = (
    ("Region", "Orders", "Returns", "Margin"),
    ("Zanzibar", "1,204", "37", "12.5%"),
    ("Patagonia", "2,918", "112", "9.1%"),
    ("Kamchatka", "611", "8", "15.8%"),
    ("Tasmania", "3,377", "95", "11.2%"),
)


def scanned_pdf() -> GeneratedScan:
    """Two scanned pages without any text layer; the second was fed upside down."""
    pages = [_typeset(*INVOICE_PAGE), _rotated(_typeset(*INSPECTION_PAGE), 180)]
    return GeneratedScan(
        filename="scanned-remittance.pdf",
        media_type=PDF_TYPE,
        content=_image_pdf(pages),
        page_words={1: _words(INVOICE_PAGE), 2: _words(INSPECTION_PAGE)},
        turned_pages={2: 180},
    )


def mixed_pdf() -> GeneratedScan:
    """Page 1 typed (a text layer), page 2 scanned (pixels only)."""
    import pypdfium2 as pdfium

    typed = pdfium.PdfDocument(_typeset_pdf(*TEXT_LAYER_PAGE))
    scanned = pdfium.PdfDocument(_image_pdf([_typeset(*MINUTES_PAGE)]))
    merged = pdfium.PdfDocument.new()
    merged.import_pages(typed)
    merged.import_pages(scanned)
    buffer = io.BytesIO()
    merged.save(buffer)
    for document in (merged, scanned, typed):
        document.close()
    return GeneratedScan(
        filename="mixed-operations.pdf",
        media_type=PDF_TYPE,
        content=buffer.getvalue(),
        page_words={1: _words(TEXT_LAYER_PAGE), 2: _words(MINUTES_PAGE)},
        text_layer_pages=(1,),
    )


def degraded_pdf() -> GeneratedScan:
    """A scan too blurred and noisy to read with confidence: OCR must say so, not pretend."""
    return GeneratedScan(
        filename="faded-delivery-note.pdf",
        media_type=PDF_TYPE,
        content=_image_pdf([_degraded(_typeset(*BLURRED_PAGE))]),
        page_words={1: _words(BLURRED_PAGE)},
    )


def table_screenshot() -> GeneratedScan:
    """A PNG screenshot of a dashboard table: a title, a header row and four rows of figures."""
    from PIL import Image, ImageDraw, ImageFont

    title = "Regional returns dashboard"
    width, row_height, left = 1400, 64, 60
    columns = (left, 420, 680, 940)
    image = Image.new("RGB", (width, 140 + row_height * len(SCREENSHOT_ROWS) + 60), (248, 249, 251))
    draw = ImageDraw.Draw(image)
    draw.text((left, 40), title, fill=(20, 24, 33), font=ImageFont.load_default(size=40))
    body = ImageFont.load_default(size=28)
    for index, row in enumerate(SCREENSHOT_ROWS):
        top = 130 + index * row_height
        if index == 0:
            draw.rectangle((left - 20, top - 12, width - 60, top + row_height - 12), fill=(226, 232, 240))
        draw.line((left - 20, top + row_height - 12, width - 60, top + row_height - 12), fill=(203, 213, 225), width=2)
        for column, cell in zip(columns, row, strict=True):
            draw.text((column, top), cell, fill=(15, 23, 42), font=body)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    words = tuple(title.split()) + tuple(word for row in SCREENSHOT_ROWS for cell in row for word in cell.split())
    return GeneratedScan(
        filename="returns-dashboard.png", media_type=PNG_TYPE, content=buffer.getvalue(), page_words={1: words}
    )


def long_scan(pages: int = 10) -> GeneratedScan:
    """A scan of `pages` pages (the three typed pages over and over), for throughput."""
    texts = [INVOICE_PAGE, INSPECTION_PAGE, MINUTES_PAGE]
    chosen = [texts[index % len(texts)] for index in range(pages)]
    return GeneratedScan(
        filename=f"long-scan-{pages}.pdf",
        media_type=PDF_TYPE,
        content=_image_pdf([_typeset(*page) for page in chosen]),
        page_words={number: _words(page) for number, page in enumerate(chosen, start=1)},
    )


def scan_corpus() -> list[GeneratedScan]:
    return [scanned_pdf(), mixed_pdf(), table_screenshot(), degraded_pdf()]


def _words(page: tuple[str, list[str]]) -> tuple[str, ...]:
    heading, paragraphs = page
    return tuple(heading.split()) + tuple(word for paragraph in paragraphs for word in paragraph.split())


def _typeset_pdf(heading: str, paragraphs: list[str]) -> bytes:
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_creation_date(_FIXED_TIME)
    pdf.set_margins(25, 25)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 18)
    pdf.multi_cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.set_font("Helvetica", size=12)
    for paragraph in paragraphs:
        pdf.multi_cell(0, 7, paragraph, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    return bytes(pdf.output())


def _typeset(heading: str, paragraphs: list[str]) -> "object":
    """The page rasterised at scanner resolution: a grey-scale PIL image."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(_typeset_pdf(heading, paragraphs))
    try:
        page = document[0]
        image = page.render(scale=SCAN_DPI / 72, grayscale=True).to_pil()
        page.close()
    finally:
        document.close()
    return image.convert("L")


def _rotated(image: "object", degrees: int) -> "object":
    from PIL import Image

    assert isinstance(image, Image.Image)
    return image.rotate(-degrees, expand=True)  # PIL turns counter-clockwise


def _degraded(image: "object") -> "object":
    """Most of the detail thrown away and the rest blown up into blocks: text a person squints at."""
    from PIL import Image

    assert isinstance(image, Image.Image)
    width, height = image.size
    small = image.resize((int(width / DEGRADED_SCALE), int(height / DEGRADED_SCALE)), Image.Resampling.BILINEAR)
    return small.resize((width, height), Image.Resampling.NEAREST)


def _image_pdf(pages: list["object"]) -> bytes:
    """A PDF whose pages are nothing but these images (no text layer), at scanner resolution."""
    from PIL import Image

    images = [page for page in pages if isinstance(page, Image.Image)]
    buffer = io.BytesIO()
    images[0].save(
        buffer,
        format="PDF",
        resolution=SCAN_DPI,
        save_all=True,
        append_images=images[1:],
        creationDate=_FIXED_TIME.timetuple(),
        modDate=_FIXED_TIME.timetuple(),
    )
    return buffer.getvalue()
