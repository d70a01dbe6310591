"""Documents built to break a document pipeline, for the corpus sweep (`make sweep`).

Each is a pattern found on real files or an attack shape the parsers' tests build, written small: a
decompression bomb, a loop, a ragged table, a password, a form, a dangling link. None may hang the
stack, crash it, or end with a sentence that sends the user the wrong way. The names say what each is.
"""

import functools
import io
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

Builder = Callable[[], bytes]


def raw_pdf(objects: list[bytes], *, trailer_extra: bytes = b"") -> bytes:
    """A PDF assembled object by object, with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R ".encode() + trailer_extra
    out += f">>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _stream(dictionary: bytes, data: bytes) -> bytes:
    return b"<< " + dictionary + f" /Length {len(data)} >>\nstream\n".encode() + data + b"\nendstream"


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _text_page_pdf(content: bytes, *, filter_name: bytes = b"/FlateDecode", extra_page: bytes = b"") -> bytes:
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> " + extra_page + b">>",
            _stream(b"/Filter " + filter_name, content),
            _FONT,
        ]
    )


def _text_operators(lines: list[str]) -> bytes:
    body = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(f"({line}) '" for line in lines) + " ET"
    return body.encode()


def flate_with_trailing_bytes() -> bytes:
    """A content stream that inflates past a megabyte and whose zlib data ends before `endstream`, with bytes
    to spare (real scanners write these): the inflation scan once looped on them forever."""
    operators = _text_operators(["Trailing bytes after the zlib stream end.", "Invoice INV-7731 is paid."])
    data = zlib.compress(operators + b"\n" + b" " * (2 * 1024 * 1024))
    return _text_page_pdf(data + b"\r\n\x00\x00 garbage after the end of the deflate data \x00" * 20)


@functools.cache
def _compressed_operators() -> bytes:
    """About 600 MB of drawing operators, deflated to about 1 MB: past the 512 MiB inflation ceiling."""
    return zlib.compress(b"0 0 m " * (600 * 1024 * 1024 // 6), 9)


def flate_bomb() -> bytes:
    """One small content stream that inflates past the ceiling."""
    return _text_page_pdf(_compressed_operators())


def flate_bomb_behind_image_decoy() -> bytes:
    """A Flate bomb whose dictionary mentions /Image in a string, so a scan looking for the word skips it."""
    bomb = _compressed_operators()
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
            _stream(b"/Note (/Image) /Filter /FlateDecode", bomb),
        ]
    )


def page_tree_loop() -> bytes:
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
            b"<< /Type /Pages /Kids [2 0 R] /Count 1 >>",
        ]
    )


def many_empty_pages() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    for _ in range(5_000):
        pdf.add_page()
    return bytes(pdf.output())


def truncated_pdf() -> bytes:
    whole = _text_page_pdf(zlib.compress(_text_operators(["A document cut off in the middle of its upload."])))
    return whole[: len(whole) // 2]


def password_pdf() -> bytes:
    """AES-256 with a user password: nothing is readable without it."""
    from fpdf import FPDF
    from pypdf import PdfReader, PdfWriter

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 8, "Salary review 2026: confidential figures for the board only.")
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(bytes(pdf.output()))))
    writer.encrypt(user_password="open-sesame", owner_password="owner", algorithm="AES-256")  # noqa: S106 - a sample
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def filled_form_pdf() -> bytes:
    """A form whose page says almost nothing: the answers are AcroForm field values (and a note)."""
    fields = [(b"applicant_name", b"Jane Doe", 700), (b"policy_number", b"POL-55021", 660), (b"city", b"Utrecht", 620)]
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields ["
        + b" ".join(f"{6 + i} 0 R".encode() for i in range(len(fields)))
        + b"] /NeedAppearances true >> >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> /Annots ["
        + b" ".join(f"{6 + i} 0 R".encode() for i in range(len(fields) + 1))
        + b"] >>",
        _stream(b"", _text_operators(["Claim form"])),
        _FONT,
    ]
    for name, value, top in fields:
        objects.append(
            b"<< /Type /Annot /Subtype /Widget /FT /Tx /T ("
            + name
            + b") /V ("
            + value
            + f") /Rect [200 {top} 400 {top + 20}] /P 3 0 R /DA (/Helv 10 Tf 0 g) >>".encode()
        )
    objects.append(
        b"<< /Type /Annot /Subtype /FreeText /Rect [72 500 400 540] /P 3 0 R"
        b" /Contents (Reviewer note: the claim was approved on 2026-11-03.) /DA (/Helv 10 Tf 0 g) >>"
    )
    return raw_pdf(objects)


def _ooxml(kind: str) -> bytes:
    buffer = io.BytesIO()
    if kind == "docx":
        import docx

        document = docx.Document()
        document.add_heading("Quarterly review", level=1)
        document.add_paragraph("Revenue rose nine percent in the third quarter.")
        document.save(buffer)
    elif kind == "xlsx":
        import openpyxl

        book = openpyxl.Workbook()
        sheet = book.active
        sheet.append(["Region", "Revenue"])
        sheet.append(["North", 1200])
        book.save(buffer)
    else:
        import pptx

        deck = pptx.Presentation()
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = "Launch plan"
        deck.save(buffer)
    return buffer.getvalue()


def _rewritten(archive: bytes, replace: dict[str, bytes], add: dict[str, bytes] | None = None) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(archive))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            target.writestr(item, replace.get(item.filename, source.read(item.filename)))
        for name, data in (add or {}).items():
            target.writestr(name, data)
    return buffer.getvalue()


def office_zip_bomb() -> bytes:
    return _rewritten(_ooxml("docx"), {}, {"word/media/bomb.bin": b"\0" * (700 * 1024 * 1024)})


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r>
<w:t>&lol3;</w:t></w:r></w:p></w:body></w:document>"""


def office_entity_expansion() -> bytes:
    return _rewritten(_ooxml("docx"), {"word/document.xml": BILLION_LAUGHS})


def sheet_declaring_every_cell() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "first"
    sheet["XFD1048576"] = "last"
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def workbook_with_dangling_external_link() -> bytes:
    """A workbook that links an external (DDE) source whose part is not in the file: openpyxl raised
    KeyError on it, which read as `malformed`."""
    archive = _ooxml("xlsx")
    source = zipfile.ZipFile(io.BytesIO(archive))
    workbook = source.read("xl/workbook.xml").decode()
    relationships = source.read("xl/_rels/workbook.xml.rels").decode()
    workbook = workbook.replace(
        "</workbook>",
        '<externalReferences><externalReference xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships" r:id="rIdLink"/></externalReferences></workbook>',
    )
    relationships = relationships.replace(
        "</Relationships>",
        '<Relationship Id="rIdLink" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'externalLink" Target="externalLinks/externalLink1.xml"/></Relationships>',
    )
    return _rewritten(
        archive, {"xl/workbook.xml": workbook.encode(), "xl/_rels/workbook.xml.rels": relationships.encode()}
    )


def encrypted_ooxml(kind: str) -> bytes:
    """What Office writes for a password-protected .docx/.xlsx/.pptx: an OLE compound file whose root
    holds `EncryptionInfo` and `EncryptedPackage` (MS-OFFCRYPTO), built here as a minimal valid CFB."""
    package = _ooxml(kind)
    info = struct.pack("<HHI", 4, 4, 0x40) + b"<encryption/>"  # agile encryption's header, body elided
    encrypted = struct.pack("<Q", len(package)) + bytes(len(package))
    return compound_file({"EncryptionInfo": info, "EncryptedPackage": encrypted})


_SECTOR = 512
_FREE, _END_OF_CHAIN, _FAT_SECTOR = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD


def compound_file(streams: dict[str, bytes]) -> bytes:
    """A version 3 compound file (512-byte sectors) with `streams` in its root storage. Every stream is
    stored in regular sectors (each padded to 4,096 bytes, the mini-stream cutoff), so no mini FAT."""
    sectors: list[bytes] = []
    fat: list[int] = []

    def chain(data: bytes) -> int:
        count = max(1, -(-len(data) // _SECTOR))
        first = len(sectors)
        for index in range(count):
            sectors.append(data[index * _SECTOR : (index + 1) * _SECTOR].ljust(_SECTOR, b"\0"))
            fat.append(first + index + 1 if index < count - 1 else _END_OF_CHAIN)
        return first

    placed = [(name, chain(data.ljust(4096, b"\0")), len(data.ljust(4096, b"\0"))) for name, data in streams.items()]

    def entry(name: str, kind: int, start: int, size: int, *, child: int = _FREE, right: int = _FREE) -> bytes:
        encoded = (name + "\0").encode("utf-16-le")
        return (
            encoded.ljust(64, b"\0")
            + struct.pack("<HBB", len(encoded), kind, 1)
            + struct.pack("<III", _FREE, right, child)
            + bytes(16 + 4 + 16)
            + struct.pack("<IQ", start, size)
        )

    # Root (storage 5) → its children as a right-leaning chain of siblings (a valid, if unbalanced, tree).
    entries = [entry("Root Entry", 5, _END_OF_CHAIN, 0, child=1 if placed else _FREE)]
    for index, (name, start, size) in enumerate(placed):
        entries.append(entry(name, 2, start, size, right=index + 2 if index + 1 < len(placed) else _FREE))
    directory = b"".join(entries).ljust(-(-len(entries) * 128 // _SECTOR) * _SECTOR, b"\0")
    directory_start = chain(directory)
    fat_sectors_needed = 1
    while (len(sectors) + fat_sectors_needed) > fat_sectors_needed * (_SECTOR // 4):
        fat_sectors_needed += 1
    fat_start = len(sectors)
    fat.extend([_FAT_SECTOR] * fat_sectors_needed)
    fat_bytes = b"".join(struct.pack("<I", value) for value in fat).ljust(fat_sectors_needed * _SECTOR, b"\xff")
    sectors.extend(fat_bytes[i * _SECTOR : (i + 1) * _SECTOR] for i in range(fat_sectors_needed))
    difat = [fat_start + i for i in range(fat_sectors_needed)] + [_FREE] * (109 - fat_sectors_needed)
    header = (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
        + bytes(16)
        + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6)
        + bytes(6)
        + struct.pack("<IIIIIIIII", 0, fat_sectors_needed, directory_start, 0, 4096, _END_OF_CHAIN, 0, _END_OF_CHAIN, 0)
        + b"".join(struct.pack("<I", value) for value in difat)
    )
    return header + b"".join(sectors)


def ragged_csv() -> bytes:
    """About 2 MB: a header, ordinary rows, and one row of 2,000,000 empty columns (rendered padded, every row
    of the table would be that wide)."""
    rows = ["id,name,amount"] + [f"{i},item {i},{i * 3}" for i in range(2_000)]
    rows.insert(1000, "," * 2_000_000 + "tail")
    return ("\n".join(rows) + "\n").encode()


def markdown_of_angle_brackets() -> bytes:
    """A million `<` with no `>`, and unclosed <script> tags: backtracking regexes go quadratic on both."""
    return b"# Notes\n\n<div " + b"<" * 1_000_000 + b"\n\n" + b"<script " * 100_000 + b"\n"


def deeply_nested_html() -> bytes:
    return b"<html><body>" + b"<div>" * 100_000 + b"deep text" + b"</div>" * 100_000 + b"</body></html>"


def text_with_nul_bytes() -> bytes:
    return b"A log line\x00 with NUL bytes\x00\x00 in it.\n" * 200


def one_enormous_line() -> bytes:
    return (b"word " * 1_000_000).strip() + b"\n"


def html_disguised_as_png() -> bytes:
    return b"<html><script>alert(1)</script></html>"


def png_declaring_a_huge_canvas() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00")) + chunk(b"IEND", b"")


def random_bytes_named_pdf() -> bytes:
    return b"%PDF-1.4\n" + bytes(range(256)) * 64


def bulky_pdf(serial: int, ballast_bytes: int = 1024 * 1024) -> bytes:
    """A one-page PDF heavy in bytes (an unreferenced stream of random data) and light in text (one chunk):
    cheap to index, and it grows the bucket quickly, which is what a per-file cost that grows with the
    bucket shows up on."""
    import os

    text = _text_operators([f"Ledger entry {serial}: the bulky sample number {serial} carries little text."])
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> >>",
            _stream(b"", text),
            _FONT,
            _stream(b"/Type /Ballast", os.urandom(ballast_bytes)),
        ]
    )


HOSTILE_DOCUMENTS: dict[str, Builder] = {
    "flate-trailing-bytes.pdf": flate_with_trailing_bytes,
    "flate-bomb.pdf": flate_bomb,
    "flate-bomb-image-decoy.pdf": flate_bomb_behind_image_decoy,
    "page-tree-loop.pdf": page_tree_loop,
    "five-thousand-empty-pages.pdf": many_empty_pages,
    "truncated.pdf": truncated_pdf,
    "password-aes256.pdf": password_pdf,
    "filled-form.pdf": filled_form_pdf,
    "random-bytes.pdf": random_bytes_named_pdf,
    "zip-bomb.docx": office_zip_bomb,
    "entity-expansion.docx": office_entity_expansion,
    "every-cell-declared.xlsx": sheet_declaring_every_cell,
    "dangling-external-link.xlsx": workbook_with_dangling_external_link,
    "password-protected.docx": lambda: encrypted_ooxml("docx"),
    "password-protected.xlsx": lambda: encrypted_ooxml("xlsx"),
    "password-protected.pptx": lambda: encrypted_ooxml("pptx"),
    "ragged-2mb.csv": ragged_csv,
    "angle-brackets.md": markdown_of_angle_brackets,
    "deeply-nested.html": deeply_nested_html,
    "nul-bytes.txt": text_with_nul_bytes,
    "one-enormous-line.txt": one_enormous_line,
    "html-disguised.png": html_disguised_as_png,
    "huge-canvas.png": png_declaring_a_huge_canvas,
}


def write_hostile_documents(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, build in HOSTILE_DOCUMENTS.items():
        path = directory / name
        path.write_bytes(build())
        written.append(path)
    return written
