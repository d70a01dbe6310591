"""PDFs written by fpdf2 or object by object, the stream encoders PDF allows, and the text PDFium reads back."""

import pypdfium2 as pdfium
from fpdf import FPDF
from pypdf import PdfReader
from pypdf.generic import Destination

from shared.local.hostile_corpus import raw_pdf


def report_pdf(*, blank_second_page: bool = True, password: str | None = None) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(auto=False)
    pdf.add_page()
    pdf.set_font("Helvetica", size=24)
    pdf.cell(text="Annual report", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=16)
    pdf.cell(text="Revenue", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(w=170, text="Revenue grew twelve percent in the third quarter. " * 4)
    pdf.ln(8)
    pdf.multi_cell(w=170, text="Costs stayed flat across every region we operate in. " * 3)
    if blank_second_page:
        pdf.add_page()
    if password:
        pdf.set_encryption(owner_password="owner", user_password=password)
    return bytes(pdf.output())


def table_pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(w=170, text="Quarterly revenue by region is shown in the table below, in millions of euros.")
    pdf.ln(4)
    with pdf.table(col_widths=(50, 30, 30), text_align=("LEFT", "RIGHT", "RIGHT"), borders_layout="NONE") as table:
        for values in [
            ("Region", "Q2", "Q3"),
            ("Europe", "4.1", "4.6"),
            ("Americas", "3.3", "3.9"),
            ("Asia", "2.0", "2.4"),
        ]:
            row = table.row()
            for value in values:
                row.cell(value)
    pdf.ln(4)
    pdf.multi_cell(w=170, text="All figures are unaudited.")
    return bytes(pdf.output())


def page_with_text(origin: int) -> bytes:
    text = f"BT /F1 12 Tf {72 + origin} {720 + origin} Td (A line of text placed here for the test) Tj ET".encode()
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            f"<< /Type /Page /Parent 2 0 R /MediaBox [{origin} {origin} {origin + 612} {origin + 792}]"
            " /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".encode(),
            f"<< /Length {len(text)} >>\nstream\n".encode() + text + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def pdf_of(*texts: str) -> bytes:
    pdf = FPDF(format="A4")
    pdf.set_font("Helvetica", size=14)
    for text in texts:
        pdf.add_page()
        pdf.text(20, 30, text)
    return bytes(pdf.output())


def page_texts(content: bytes) -> list[str]:
    document = pdfium.PdfDocument(content)
    try:
        return [page.get_textpage().get_text_range().strip() for page in document]
    finally:
        document.close()


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


# An appearance for a box's "on" and "off" states (PDFium tells a checked box by its appearance state).
APPEARANCE = b"<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] /Length 0 >>\nstream\n\nendstream"


def form_pdf(annotations: list[bytes], *, content: bytes = b"", crop: bytes = b"") -> bytes:
    """One page (object 3) with `content` and `annotations` (objects 7, 8, …); every one that is a field is
    listed in the AcroForm. Object 5 is an appearance stream to point at, object 6 the font /F1."""
    numbers = " ".join(f"{7 + index} 0 R" for index in range(len(annotations)))
    fields = " ".join(
        f"{7 + index} 0 R"
        for index, annotation in enumerate(annotations)
        if b"/T (" in annotation and b"/Parent" not in annotation
    )
    return raw_pdf(
        [
            f"<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [{fields}] >> >>".encode(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] " + crop + b" /Contents 4 0 R"
            b" /Resources << /Font << /F1 6 0 R >> >> /Annots [" + numbers.encode() + b"] >>",
            f"<< /Length {len(content)} >>\nstream\n".encode() + content + b"\nendstream",
            APPEARANCE,
            FONT,
            *annotations,
        ]
    )


def widget(entries: bytes, rect: bytes = b"[100 700 300 720]") -> bytes:
    return b"<< /Type /Annot /Subtype /Widget /F 4 /P 3 0 R /Rect " + rect + b" " + entries + b" >>"


def text_field(name: bytes, value: bytes, *, rect: bytes = b"[100 700 300 720]", extra: bytes = b"") -> bytes:
    return widget(b"/FT /Tx /T (" + name + b") /V (" + value + b") " + extra, rect)


def checkbox(name: bytes, *, checked: bool, on: bytes = b"Yes") -> bytes:
    state = b"/" + on if checked else b"/Off"
    return widget(
        b"/FT /Btn /T ("
        + name
        + b") /V "
        + state
        + b" /AS "
        + state
        + b" /AP << /N << /"
        + on
        + b" 5 0 R /Off 5 0 R >> >>",
        b"[100 600 112 612]",
    )


def lzw(data: bytes) -> bytes:
    """PDF's LZW (MSB-first codes of 9 to 12 bits, clear 256, end 257, early change 1)."""
    table = {bytes([i]): i for i in range(256)}
    codes = [256]
    word = b""
    for byte in data:
        grown = word + bytes([byte])
        if grown in table:
            word = grown
            continue
        codes.append(table[word])
        if len(table) + 2 < 4096:
            table[grown] = len(table) + 2
        else:
            codes.append(256)
            table = {bytes([i]): i for i in range(256)}
        word = bytes([byte])
    codes.extend([table[word], 257] if word else [257])
    bits = width = entries = 0
    count = 0
    out = bytearray()
    first = True
    for code in codes:
        bits = (bits << (width or 9)) | code
        count += width or 9
        while count >= 8:
            count -= 8
            out.append((bits >> count) & 0xFF)
        bits &= (1 << count) - 1
        if code == 256:
            entries, first = 258, True
        elif not first:
            entries += 1
        else:
            first = False
        width = 9 if entries + 1 < 512 else 10 if entries + 1 < 1024 else 11 if entries + 1 < 2048 else 12
    if count:
        out.append((bits << (8 - count)) & 0xFF)
    return bytes(out)


def run_length(data: bytes) -> bytes:
    out = bytearray()
    for start in range(0, len(data), 128):
        run = data[start : start + 128]
        if run == run[:1] * len(run) and len(run) > 1:
            out += bytes([257 - len(run), run[0]])
        else:
            out += bytes([len(run) - 1]) + run
    return bytes(out + b"\x80")


def top_level_outline(reader: PdfReader) -> list[Destination]:
    """The outline's entries; a nested list (a sub-outline) fails the test, as no builder here writes one."""
    entries = [entry for entry in reader.outline if isinstance(entry, Destination)]
    assert len(entries) == len(reader.outline), reader.outline
    return entries
