"""Pages whose text layer is or is not worth trusting: scans with the layers found on public files (one that lost
most of the page's writing, one of letters spaced apart, a good one), and typeset pages whose ink is not all text
(a big photo, a chart). Every scan is typeset by fpdf2, rasterised by PDFium and embedded back as an image: the
words a test looks for exist in the pixels, and the layer says what the builder chose it to say."""

import io
import random
import zlib
from dataclasses import dataclass

import pypdfium2 as pdfium
from fpdf import FPDF
from fpdf.enums import TextMode

from shared.local.hostile_corpus import raw_pdf

A4 = (595.28, 841.89)
SCAN_DPI = 200
# The scan's words: what OCR must find once the layer is set aside.
REPORT = (
    "Water bureau annual report",
    [
        "Rainfall over the Qinghai basin rose by twelve percent in 2023 compared with the previous year.",
        "The Xining reservoir held 418 million cubic metres at the end of the flood season in September.",
        "Irrigation channels reached 96 townships, and the bureau repaired the northern canal in spring.",
        "Inspectors certified dam B7 for service until 2031 after the hydrostatic test of its spillway.",
        "Groundwater levels stayed stable in the eastern districts while the western wells fell slightly.",
        "The bureau will publish the full hydrological tables in its quarterly bulletin next spring.",
    ],
)
SECRET = (
    "These secret minutes",
    [
        "These secret minutes record the decision of the harbour board on the northern berth.",
        "The board approved dredging before the autumn regatta and asked for three new tenders.",
        "Funding comes from the maritime trust and the city council in equal shares this year.",
        "The harbourmaster reports on silt levels and the state of the breakwater at each meeting.",
        "Members agreed to keep these minutes confidential until the tenders have been awarded.",
    ],
)


@dataclass(frozen=True)
class TypesetLine:
    """A line of the typeset page, in PDF user space (points, y up)."""

    text: str
    left: float
    bottom: float
    right: float
    top: float


def _typeset(heading: str, paragraphs: list[str]) -> bytes:
    pdf = FPDF(format="A4")
    pdf.set_margins(25, 25)
    pdf.set_auto_page_break(auto=False)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 18)
    pdf.multi_cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.set_font("Helvetica", size=12)
    for paragraph in paragraphs:
        pdf.multi_cell(0, 7, paragraph, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)
    return bytes(pdf.output())


def _lines(typeset: bytes) -> list[TypesetLine]:
    """The typeset page's lines, where PDFium finds them."""
    document = pdfium.PdfDocument(typeset)
    try:
        textpage = document[0].get_textpage()
        lines: list[TypesetLine] = []
        for index in range(textpage.count_rects()):
            left, bottom, right, top = textpage.get_rect(index)
            text = textpage.get_text_bounded(left, bottom, right, top).strip()
            if text:
                lines.append(TypesetLine(text, left, bottom, right, top))
        return lines
    finally:
        document.close()


def _raster(typeset: bytes) -> bytes:
    """The typeset page as a scanner would see it: grey-scale at SCAN_DPI, as a JPEG."""
    document = pdfium.PdfDocument(typeset)
    try:
        image = document[0].render(scale=SCAN_DPI / 72, grayscale=True).to_pil().convert("L")
    finally:
        document.close()
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=80)
    return buffer.getvalue()


def _jpeg_size(jpeg: bytes) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(jpeg)) as image:
        return image.size


def _stream(dictionary: bytes, data: bytes) -> bytes:
    return b"<< " + dictionary + f" /Length {len(data)} >>\nstream\n".encode() + data + b"\nendstream"


def _scan_with_layer(
    jpeg: bytes, layer: bytes, fonts: list[bytes], *, beneath: bool = False, scale: float = 1.0
) -> bytes:
    """One A4 page (times `scale`): the scan drawn over the whole page, then `layer` (text operators using /F0,
    object 6, and whatever objects follow it in `fonts`); or, `beneath`, the layer first and the scan over it."""
    width, height = _jpeg_size(jpeg)
    scan = f"q {A4[0]} 0 0 {A4[1]} 0 0 cm /Im0 Do Q\n".encode()
    content = f"{scale} 0 0 {scale} 0 0 cm\n".encode() + (layer + b"\n" + scan if beneath else scan + layer)
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {A4[0] * scale} {A4[1] * scale}] /Contents 4 0 R".encode()
            + b" /Resources << /XObject << /Im0 5 0 R >> /Font << /F0 6 0 R >> >> >>",
            _stream(b"/Filter /FlateDecode", zlib.compress(content)),
            _stream(
                f"/Type /XObject /Subtype /Image /Width {width} /Height {height} /ColorSpace /DeviceGray"
                " /BitsPerComponent 8 /Filter /DCTDecode".encode(),
                jpeg,
            ),
            *fonts,
        ]
    )


# A Type0 font as the Chinese report had it: not embedded, the predefined GBK-EUC-H CMap, no ToUnicode. Its
# widths cover only the CIDs of single-byte (ASCII) codes, with /DW 0: PDFium measures each run of double-byte codes as
# a text object no wider than nothing and leaves it out of the text page, while poppler maps the same codes
# through Adobe-GB1. (With sane widths this PDFium maps GBK-EUC-H too.) What PDFium reads is the digits and
# Latin letters between the runs: a few per cent of what the page prints.
GBK_FONTS = [
    b"<< /Type /Font /Subtype /Type0 /BaseFont /SimSun /Encoding /GBK-EUC-H /DescendantFonts [7 0 R] >>",
    b"<< /Type /Font /Subtype /CIDFontType0 /BaseFont /SimSun"
    b" /CIDSystemInfo << /Registry (Adobe) /Ordering (GB1) /Supplement 2 >> /FontDescriptor 8 0 R"
    b" /DW 0 /W [1 95 500 814 939 500 7716 7810 500] >>",
    b"<< /Type /FontDescriptor /FontName /SimSun /Flags 6 /FontBBox [0 -141 1000 859] /ItalicAngle 0"
    b" /Ascent 859 /Descent -141 /CapHeight 683 /StemV 80 >>",
]
_HAN = "水利局年度报告降雨量增加百分之水库灌溉乡镇检查员认证大坝服务地下水位东部西部季度公报".encode("gbk")


def lost_cjk_layer_scan(*, beneath: bool = False, scale: float = 1.0) -> bytes:
    """A scanned report whose invisible layer (Tr 3) is GBK double-byte runs with a few ASCII tokens between:
    PDFium reads only the ASCII (see GBK_FONTS), about a tenth of the page's writing under its boxes. With
    `beneath`, the layer is drawn (Tr 0) before the scan, which hides it, as some scanners write it; `scale`
    makes the page that much larger."""
    typeset = _typeset(*REPORT)
    operators = [b"BT 0 Tr" if beneath else b"BT 3 Tr"]
    for number, line in enumerate(_lines(typeset)):
        size = (line.top - line.bottom) * 0.9
        operators.append(f"/F0 {size:.1f} Tf 1 0 0 1 {line.left:.2f} {line.bottom:.2f} Tm".encode())
        # Chinese, then a short ASCII token at a third of the line, then Chinese again.
        start = (number * 6) % (len(_HAN) - 24)
        operators.append(b"<" + _HAN[start : start + 12].hex().encode() + b"> Tj")
        operators.append(f"{(line.right - line.left) / 3:.2f} 0 Td".encode())
        operators.append(f"({2020 + number}) Tj".encode())
        operators.append(f"{size * 3:.2f} 0 Td".encode())
        operators.append(b"<" + _HAN[start + 12 : start + 24].hex().encode() + b"> Tj")
    operators.append(b"ET")
    return _scan_with_layer(_raster(typeset), b"\n".join(operators), GBK_FONTS, beneath=beneath, scale=scale)


HELVETICA = [b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]


def spaced_letters_layer_scan() -> bytes:
    """A scan whose own invisible layer spaced every letter apart (`T H E S E  S E C R E T ...`), one line of
    it over each printed line."""
    typeset = _typeset(*SECRET)
    operators = [b"BT 3 Tr"]
    for line in _lines(typeset):
        size = (line.top - line.bottom) * 0.7
        spaced = " ".join(character for character in line.text if not character.isspace())
        operators.append(f"/F0 {size:.1f} Tf 1 0 0 1 {line.left:.2f} {line.bottom:.2f} Tm".encode())
        # Squeezed to the printed line's width, as the scanner placed it.
        operators.append(f"{100 * (line.right - line.left) / (0.5 * size * len(spaced)):.1f} Tz".encode())
        operators.append(b"(" + spaced.encode("latin-1") + b") Tj")
    operators.append(b"ET")
    return _scan_with_layer(_raster(typeset), b"\n".join(operators), HELVETICA)


def good_layer_scan(*, photo: bool = False) -> bytes:
    """A scan with the layer a good OCR tool writes: the printed words, invisible, exactly where they are
    printed. With `photo`, the scanned page also carries a photograph under the text."""
    heading, paragraphs = REPORT
    page = FPDF(format="A4")
    page.set_margins(25, 25)
    page.set_auto_page_break(auto=False)
    page.add_page()
    page.set_font("Helvetica", "B", 18)
    page.multi_cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
    page.ln(4)
    page.set_font("Helvetica", size=12)
    for paragraph in paragraphs:
        page.multi_cell(0, 7, paragraph, new_x="LMARGIN", new_y="NEXT")
        page.ln(3)
    if photo:
        page.image(_photo(), x=25, y=page.get_y() + 5, w=160)
    typeset = bytes(page.output())
    pdf = FPDF(format="A4")
    pdf.set_margins(25, 25)
    pdf.set_auto_page_break(auto=False)
    pdf.add_page()
    pdf.image(io.BytesIO(_raster(typeset)), x=0, y=0, w=210, h=297)
    pdf.text_mode = TextMode.INVISIBLE
    pdf.set_font("Helvetica", "B", 18)
    pdf.multi_cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.set_font("Helvetica", size=12)
    for paragraph in paragraphs:
        pdf.multi_cell(0, 7, paragraph, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)
    return bytes(pdf.output())


def _photo(width: int = 640, height: int = 400) -> io.BytesIO:
    """A photograph's worth of ink: a sky, a dark hillside, a house, leaves of noise."""
    from PIL import Image, ImageDraw, ImageFilter

    generator = random.Random(7)
    image = Image.new("RGB", (width, height), (150, 190, 230))
    draw = ImageDraw.Draw(image)
    draw.polygon([(0, height), (0, 220), (200, 150), (420, 240), (width, 180), (width, height)], fill=(40, 90, 40))
    draw.rectangle((380, 230, 520, 330), fill=(170, 60, 50))
    draw.polygon([(370, 230), (450, 170), (530, 230)], fill=(80, 40, 30))
    for _ in range(2500):
        x, y = generator.randrange(width), generator.randrange(200, height)
        shade = generator.randrange(10, 120)
        draw.ellipse((x, y, x + 6, y + 4), fill=(shade // 2, shade, shade // 3))
    buffer = io.BytesIO()
    image.filter(ImageFilter.GaussianBlur(1)).save(buffer, format="JPEG", quality=85)
    buffer.seek(0)
    return buffer


def photo_page() -> bytes:
    """A typeset page that is mostly a photograph, with a heading and a caption: good text, little of the ink."""
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=False)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.cell(text="The new pumping station at Dunmore", new_x="LMARGIN", new_y="NEXT")
    pdf.image(_photo(), x=10, y=25, w=190)
    pdf.set_xy(10, 150)
    pdf.set_font("Helvetica", size=10)
    pdf.multi_cell(190, 5, "The station lifts water from the lower canal to the reservoir, seen here from the east.")
    return bytes(pdf.output())


def full_bleed_photo_page() -> bytes:
    """A typeset page drawn over a photograph that fills the page (a brochure's cover): images under all of the
    page, and text that is drawn, so nothing about it is a scan."""
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=False)
    pdf.add_page()
    pdf.image(_photo(), x=0, y=0, w=210, h=297)
    pdf.set_text_color(255, 255, 255)
    pdf.set_font("Helvetica", "B", 28)
    pdf.set_xy(15, 30)
    pdf.multi_cell(180, 12, "Northwind Robotics annual review")
    pdf.set_font("Helvetica", size=12)
    pdf.set_xy(15, 250)
    pdf.multi_cell(180, 6, "Our warehouse robots moved more parcels this year than in the three years before.")
    return bytes(pdf.output())


def chart_page() -> bytes:
    """A bar chart drawn as vector graphics, with its title, axis labels and a note."""
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=False)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(text="Parcels moved per quarter (thousands)", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=9)
    pdf.set_fill_color(40, 70, 140)
    for index, (label, value) in enumerate([("Q1", 120), ("Q2", 150), ("Q3", 95), ("Q4", 180)]):
        x = 30 + index * 42
        pdf.rect(x, 220 - value, 30, value, style="F")
        pdf.text(x + 11, 228, label)
        pdf.text(x + 9, 216 - value, str(value))
    pdf.line(25, 220, 200, 220)
    pdf.line(25, 30, 25, 220)
    pdf.set_xy(20, 240)
    pdf.multi_cell(170, 5, "Source: warehouse management system, all sites, counted when a parcel leaves the dock.")
    return bytes(pdf.output())
