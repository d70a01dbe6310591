"""Office (DOCX, XLSX, PPTX) seeds, and mutations that keep the zip valid.

A random byte flip breaks a zip's checksums and the parser refuses the file before the interesting code
runs. These edits rewrite what is inside and write the zip again, valid: XML parts element by element
(duplicated, deleted, reordered, nested deeper, given hostile attribute values, given the elements a
writer would put there with hostile values in them), relationships that point nowhere, content types
missing, parts renamed, deleted or listed twice.
"""

import copy
import io
import re
import warnings
import zipfile
from collections.abc import Callable, Iterable
from functools import cache
from xml.sax.saxutils import escape

from lxml import etree  # type: ignore[import-untyped]

from tests.unit.fuzzing import MAX_MUTATED_BYTES, OFFICE_DATA, Edit, pick, public_files

# ---------------------------------------------------------------------------------------------------
# Hostile values


NUMBERS = (
    "-1", "0", "1", "2", "7", "10", "99", "255", "256", "257", "1000", "16384", "65535", "65536", "100000",
    "1048576", "1048577", "2147483647", "2147483648", "4294967297", "-2147483649", "99999999999999999999999",
    "1e308", "1e309", "-1e309", "NaN", "inf", "-0", "1.5", "0.0001", "1,5", "0x1F", " 3 ", "", "abc", "\u00b2",
    "\u0663", "\u0967\u0966", "-",
)  # fmt: skip
CELL_REFERENCES = (
    "A1", "XFD1048576", "XFE1", "A1048577", "A0", "A-1", "ZZZZZZ1", "AAAAAAAAAAAAAAAAAAAA1", "1A", "A", "",
    "a1", "$A$1", "R1C1", "A2147483648", "XFD2147483647", "B2:C3", "A1:XFD1048576", "B2:A1", "A1:A1048576",
    "A0:B0", ":", "A1:", "A1:B2 C3:D4", "A1:ZZZZZ99999999",
)  # fmt: skip
STRINGS = (
    "", " ", "x" * 10_000, "\u202e\u2066", "\U0001d518\U0001d52b\U0001d526", "a\tb\nc", "&amp;", "<", "'\"",
    "=1+1", '=HYPERLINK("http://example.invalid")', "\u200b" * 100, "Heading 1", "Title", "List Bullet",
    "rId1", "rId999", "../../../../etc/passwd",
)  # fmt: skip
CELL_TYPES = ("s", "n", "b", "e", "str", "inlineStr", "d", "x", "")
_REFERENCE_ATTRIBUTES = frozenset({"r", "ref", "sqref", "activeCell", "topLeftCell", "spans"})


def hostile_value(attribute: str, index: int) -> str:
    """A value for `attribute` (its local name) that no writer produces but a reader must survive."""
    if attribute in _REFERENCE_ATTRIBUTES:
        return pick(CELL_REFERENCES + NUMBERS, index)
    if attribute == "t":
        return pick(CELL_TYPES + NUMBERS, index)
    return pick(NUMBERS + STRINGS, index)


# ---------------------------------------------------------------------------------------------------
# Office seeds


def _saved(document: object) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)  # type: ignore[attr-defined]
    return buffer.getvalue()


def _png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buffer, "PNG")
    return buffer.getvalue()


def rich_word_document() -> bytes:
    """Headings, numbered and bulleted lists two levels deep, a table with merged cells and a nested
    table, a picture, a comment, first-page and default headers and footers."""
    from docx import Document
    from docx.shared import Inches

    document = Document()
    document.add_heading("Policy", level=1)
    for style, text in [("List Number", "First"), ("List Number 2", "First a"), ("List Bullet", "Point")]:
        document.add_paragraph(text, style=style)
    table = document.add_table(rows=3, cols=3)
    for row, values in zip(table.rows, [("Region", "Q1", "Q2"), ("EU", "4", "5"), ("US", "3", "2")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    table.cell(0, 1).merge(table.cell(0, 2))
    table.cell(1, 0).merge(table.cell(2, 0))
    table.cell(1, 1).add_table(rows=2, cols=2).cell(1, 1).text = "inner"
    document.add_picture(io.BytesIO(_png()), width=Inches(1))
    commented = document.add_paragraph("Reviewed by legal.")
    document.add_comment(commented.runs, text="Which legal team?", author="Ann")
    section = document.sections[0]
    section.different_first_page_header_footer = True
    section.header.paragraphs[0].text = "Internal"
    section.first_page_header.paragraphs[0].text = "Cover"
    section.footer.paragraphs[0].text = "Page footer"
    return _saved(document)


_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PACKAGE_RELATIONSHIPS = "http://schemas.openxmlformats.org/package/2006/relationships"
_SHEET_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"


def shared_strings_workbook() -> bytes:
    """A workbook written part by part, as Excel writes one and openpyxl does not: cells that refer to a
    shared-string table (rich text among them), styles with date and percent formats, merged cells, a
    defined name and a second sheet."""
    relationship = f"{_RELATIONSHIPS}/"
    parts = {
        "[Content_Types].xml": (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{_SHEET_TYPE}"/>'
            f'<Override PartName="/xl/worksheets/sheet2.xml" ContentType="{_SHEET_TYPE}"/>'
            '<Override PartName="/xl/sharedStrings.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
            '<Override PartName="/xl/styles.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/></Types>'
        ),
        "_rels/.rels": (
            f'<Relationships xmlns="{_PACKAGE_RELATIONSHIPS}"><Relationship Id="rId1" '
            f'Type="{relationship}officeDocument" Target="xl/workbook.xml"/></Relationships>'
        ),
        "xl/workbook.xml": (
            f'<workbook xmlns="{_MAIN}" xmlns:r="{_RELATIONSHIPS}"><sheets>'
            '<sheet name="Sales" sheetId="1" r:id="rId1"/><sheet name="Staff" sheetId="2" r:id="rId2"/></sheets>'
            '<definedNames><definedName name="Total">Sales!$B$4</definedName></definedNames></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": (
            f'<Relationships xmlns="{_PACKAGE_RELATIONSHIPS}">'
            f'<Relationship Id="rId1" Type="{relationship}worksheet" Target="worksheets/sheet1.xml"/>'
            f'<Relationship Id="rId2" Type="{relationship}worksheet" Target="worksheets/sheet2.xml"/>'
            f'<Relationship Id="rId3" Type="{relationship}sharedStrings" Target="sharedStrings.xml"/>'
            f'<Relationship Id="rId4" Type="{relationship}styles" Target="styles.xml"/></Relationships>'
        ),
        "xl/sharedStrings.xml": (
            f'<sst xmlns="{_MAIN}" count="6" uniqueCount="6"><si><t>Region</t></si><si><t>Revenue</t></si>'
            '<si><r><t>Net</t></r><r><rPr><b/></rPr><t xml:space="preserve"> share</t></r></si>'
            "<si><t>Europe</t></si><si><t>Americas</t></si><si><t>Name</t></si></sst>"
        ),
        "xl/styles.xml": (
            f'<styleSheet xmlns="{_MAIN}"><numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/>'
            '</numFmts><fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts><fills count="1">'
            '<fill><patternFill patternType="none"/></fill></fills><borders count="1"><border><left/><right/><top/>'
            '<bottom/><diagonal/></border></borders><cellStyleXfs count="1"><xf/></cellStyleXfs><cellXfs count="3">'
            '<xf numFmtId="0"/><xf numFmtId="164" applyNumberFormat="1"/><xf numFmtId="9" applyNumberFormat="1"/>'
            "</cellXfs>"
            "</styleSheet>"
        ),
        "xl/worksheets/sheet1.xml": (
            f'<worksheet xmlns="{_MAIN}"><dimension ref="A1:C4"/><sheetData>'
            '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v>2</v></c></row>'
            '<row r="2"><c r="A2" t="s"><v>3</v></c><c r="B2"><v>4100.5</v></c><c r="C2" s="2"><v>0.55</v></c>'
            '</row><row r="3"><c r="A3" t="s"><v>4</v></c><c r="B3"><v>3300</v></c><c r="C3" s="2"><v>0.45</v>'
            '</c></row><row r="4"><c r="A4" t="str"><f>"Total"</f><v>Total</v></c><c r="B4"><f>SUM(B2:B3)</f>'
            '<v>7400.5</v></c><c r="C4" s="1"><v>46082</v></c></row></sheetData>'
            '<mergeCells count="1"><mergeCell ref="A4:A4"/></mergeCells></worksheet>'
        ),
        "xl/worksheets/sheet2.xml": (
            f'<worksheet xmlns="{_MAIN}"><sheetData><row r="2"><c r="B2" t="s"><v>5</v></c></row>'
            '<row r="3"><c r="B3" t="inlineStr"><is><t>Ann</t></is></c><c r="C3" t="b"><v>1</v></c></row>'
            "</sheetData></worksheet>"
        ),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, xml in parts.items():
            archive.writestr(name, xml)
    return buffer.getvalue()


def rich_slides() -> bytes:
    """A title slide, nested group shapes, a table with merged cells, a picture, a chart and notes."""
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = Presentation()
    title = deck.slides.add_slide(deck.slide_layouts[0])
    title.shapes.title.text = "Plan"
    title.placeholders[1].text = "Second half"
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    outer = slide.shapes.add_group_shape()
    inner = outer.shapes.add_group_shape()
    inner.shapes.add_textbox(Inches(1), Inches(1), Inches(2), Inches(1)).text_frame.text = "Deep box"
    frame = slide.shapes.add_table(3, 3, Inches(1), Inches(3), Inches(5), Inches(1))
    for row in range(3):
        for column in range(3):
            frame.table.cell(row, column).text = f"r{row}c{column}"
    frame.table.cell(0, 0).merge(frame.table.cell(0, 1))
    slide.shapes.add_picture(io.BytesIO(_png()), Inches(6), Inches(1))
    data = CategoryChartData()  # type: ignore[no-untyped-call]
    data.categories = ["Q1", "Q2"]
    data.add_series("Revenue", (4.1, 4.6))  # type: ignore[no-untyped-call]
    slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(5), Inches(3), Inches(2), data)
    slide.notes_slide.notes_text_frame.text = "Say the numbers slowly."
    return _saved(deck)


@cache
def generated_office_seeds(kind: str) -> tuple[bytes, ...]:
    from tests.builders import office

    seeds: dict[str, Callable[[], tuple[bytes, ...]]] = {
        "docx": lambda: (office.word_document(), office.word_document_with_hidden_places(), rich_word_document()),
        "xlsx": lambda: (office.workbook(), office.workbook_with_a_text_box(), shared_strings_workbook()),
        "pptx": lambda: (office.slides(), office.slides_with_line_breaks(), rich_slides()),
    }
    return seeds[kind]()


@cache
def public_office_seeds(kind: str) -> tuple[bytes, ...]:
    # A password-protected package is an OLE file, not a zip: nothing inside it to rewrite.
    return tuple(seed for seed in public_files(OFFICE_DATA, kind) if zipfile.is_zipfile(io.BytesIO(seed)))


# ---------------------------------------------------------------------------------------------------
# Office mutations


OFFICE_OPERATIONS = frozenset(
    {
        "duplicate", "delete", "reorder", "nest", "self_nest", "attribute", "text", "inject", "truncate_xml",
        "splice", "relationship", "content_type", "rename_part", "delete_part", "duplicate_entry",
    }
)  # fmt: skip
_NAMESPACES = {
    "w": "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "r": _RELATIONSHIPS,
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "p": "http://schemas.openxmlformats.org/presentationml/2006/main",
    "wp": "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing",
    "pic": "http://schemas.openxmlformats.org/drawingml/2006/picture",
    "xdr": "http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing",
}
_PPTX_TABLE = (
    '<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="{n}" name="Table {n}"/><p:cNvGraphicFramePr/><p:nvPr/>'
    '</p:nvGraphicFramePr><p:xfrm><a:off x="{n}" y="0"/><a:ext cx="{n}" cy="{n}"/></p:xfrm><a:graphic>'
    '<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tblGrid>'
    '<a:gridCol w="{n}"/></a:tblGrid><a:tr h="{n}"><a:tc gridSpan="{n}"><a:txBody><a:bodyPr/><a:p><a:r>'
    '<a:t>{s}</a:t></a:r></a:p></a:txBody></a:tc><a:tc hMerge="1"/></a:tr><a:tr h="1"/></a:tbl>'
    "</a:graphicData></a:graphic></p:graphicFrame>"
)
# Element snippets a writer would put under an element of that local name, with hostile holes: {n} a
# number, {ref} a cell reference, {s} a string, {t} a cell type.
INJECTIONS: dict[str, tuple[str, ...]] = {
    "tcPr": ('<w:gridSpan w:val="{n}"/>', "<w:vMerge/>", '<w:vMerge w:val="restart"/>', '<w:hMerge w:val="{s}"/>'),
    "pPr": (  # a paragraph's properties in a DOCX, and in a slide's text
        '<w:numPr><w:ilvl w:val="{n}"/><w:numId w:val="{n}"/></w:numPr>',
        '<w:pStyle w:val="{s}"/>',
        '<w:outlineLvl w:val="{n}"/>',
        '<a:buAutoNum type="{s}" startAt="{n}"/>',
    ),
    "r": (
        '<w:footnoteReference w:id="{n}"/>',
        '<w:commentReference w:id="{n}"/>',
        "<w:t>{s}</w:t>",
        '<w:drawing><wp:inline><a:graphic><a:graphicData><pic:pic><pic:blipFill><a:blip r:embed="{s}"/>'
        "</pic:blipFill></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing>",
    ),
    "body": (
        "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>{s}</w:t></w:r></w:p></w:tc></w:tr><w:tr>"
        + "<w:tc><w:p/></w:tc>" * 300
        + "</w:tr></w:tbl>",
        '<w:p><w:pPr><w:pStyle w:val="Heading{n}"/></w:pPr><w:r><w:t>{s}</w:t></w:r></w:p>',
        "<w:sdt><w:sdtContent>" * 40 + "<w:p><w:r><w:t>{s}</w:t></w:r></w:p>" + "</w:sdtContent></w:sdt>" * 40,
    ),
    "tr": ('<w:tc><w:tcPr><w:gridSpan w:val="{n}"/></w:tcPr><w:p><w:r><w:t>{s}</w:t></w:r></w:p></w:tc>',),
    "sheetData": (
        '<row r="{n}"><c r="{ref}" t="s"><v>{n}</v></c></row>',
        '<row r="{n}" spans="1:{n}"><c r="{ref}"><v>{n}</v></c></row>',
        '<row><c><v>1</v></c><c t="inlineStr"><is><t>{s}</t></is></c></row>',
    ),
    "row": (
        '<c r="{ref}" t="s"><v>{n}</v></c>',
        '<c r="{ref}" t="{t}"><v>{n}</v></c>',
        '<c r="{ref}" s="{n}"><v>{n}</v></c>',
        '<c r="{ref}" t="str"><f>{s}</f><v>{s}</v></c>',
    ),
    "worksheet": (
        '<mergeCells count="{n}"><mergeCell ref="{ref}"/></mergeCells>',
        '<dimension ref="{ref}"/>',
        '<cols><col min="{n}" max="{n}" width="{n}"/></cols>',
        '<drawing r:id="{s}"/>',
    ),
    "sst": ("<si><t>{s}</t></si>", "<si><r><t>{s}</t></r><r><t>{n}</t></r></si>", "<si/>"),
    "sheets": ('<sheet name="{s}" sheetId="{n}" r:id="{s}"/>',),
    "spTree": (
        _PPTX_TABLE,
        '<p:grpSp><p:nvGrpSpPr><p:cNvPr id="{n}" name="G"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>' * 40
        + "</p:grpSp>" * 40,
        '<p:pic><p:nvPicPr><p:cNvPr id="{n}" name="P"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr><p:blipFill>'
        '<a:blip r:embed="{s}"/></p:blipFill><p:spPr/></p:pic>',
    ),
    "tbl": ('<a:tr h="{n}"><a:tc gridSpan="{n}" rowSpan="{n}"><a:txBody><a:bodyPr/><a:p/></a:txBody></a:tc></a:tr>',),
    "sldIdLst": ('<p:sldId id="{n}" r:id="{s}"/>',),
    "numbering": ('<w:num w:numId="{n}"><w:abstractNumId w:val="{n}"/></w:num>',),
}
_RELATIONSHIP_TARGETS = (
    "missing.xml", "../missing/part.xml", "/xl/worksheets/none.xml", "", "..", "/", "../../../../etc/passwd",
    "http://example.invalid/x", "media/image1.png#fragment", "%2e%2e/x", "worksheets/sheet1.xml",
    "slides/slide1.xml", "document.xml", "[Content_Types].xml",
)  # fmt: skip
_RELATIONSHIP_TYPES = tuple(
    f"{_RELATIONSHIPS}/{name}"
    for name in ("officeDocument", "worksheet", "slide", "image", "hyperlink", "styles", "numbering", "externalLink",
                 "footnotes", "comments", "header", "notesSlide", "slideLayout", "drawing", "sharedStrings", "oops")
)  # fmt: skip
_CONTENT_TYPES = (
    "application/xml", "image/png", "text/plain", "",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.chartsheet+xml",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
    "application/vnd.ms-excel.sheet.macroEnabled.main+xml",
)  # fmt: skip
_SPLICES = (
    b"<", b"&undefined;", b"&#0;", b"&#xD800;", b"<![CDATA[", b"]]>", b"<!-- ", b"\xff\xfe", b"<?xml version='1.0'?>",
    b"</w:p>", b"<x:y/>", b"\x00", b"\xc3(",
)  # fmt: skip
_NEST_DEPTHS = (1, 2, 3, 8, 32, 100, 255, 300, 1000)
_SELF_NEST_DEPTHS = (1, 2, 5, 20, 100)

Part = list[str | bytes]  # [name, data]: edited in place


def unzipped(content: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return [(item.filename, archive.read(item)) for item in archive.infolist()]


def zipped(parts: Iterable[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a duplicate name is one of the mutations
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            for name, data in parts:
                member = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
                member.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(member, data)
    return buffer.getvalue()


@cache
def _unzipped_seed(content: bytes) -> tuple[tuple[str, bytes], ...]:
    return tuple(unzipped(content))


def mutate_office(seed: bytes, changes: list[Edit]) -> bytes:
    """The seed's zip with each edit applied to its parts in turn, written again as a valid zip."""
    parts = [(name, data) for name, data in _unzipped_seed(seed)]
    for change in changes:
        if sum(len(data) for _, data in parts) > MAX_MUTATED_BYTES:
            break  # edits that repeat what earlier ones repeated grow without bound: it is big enough
        parts = _OFFICE_EDITS[change.operation](parts, change)
    return zipped(parts)


def _is_xml(name: str) -> bool:
    return name.endswith((".xml", ".rels"))


def _xml_part_indexes(parts: list[tuple[str, bytes]], change: Edit) -> int | None:
    """The index of the XML part an edit works on: the main parts (document, sheets, slides, shared
    strings, numbering, relationships) more often than the rest."""
    xml = [index for index, (name, _) in enumerate(parts) if _is_xml(name)]
    if not xml:
        return None
    main = [
        i for i in xml if re.search(r"(document|sheet\d*|slide\d*|sharedStrings|numbering|workbook)\.xml", parts[i][0])
    ]
    return pick(main * 3 + xml, change.part)


def _parsed(data: bytes) -> etree._Element | None:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_blank_text=False)
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError:
        return None


def _serialized(root: etree._Element) -> bytes:
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True))


def _elements(root: etree._Element) -> list[etree._Element]:
    return [element for element in root.iter() if isinstance(element.tag, str) and element is not root]


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _xml_edit(
    apply: Callable[[etree._Element, Edit], bool],
) -> Callable[[list[tuple[str, bytes]], Edit], list[tuple[str, bytes]]]:
    """An edit of one parsed XML part: `apply` changes the tree (False when it found nothing to change)."""

    def edit(parts: list[tuple[str, bytes]], change: Edit) -> list[tuple[str, bytes]]:
        index = _xml_part_indexes(parts, change)
        if index is None:
            return parts
        name, data = parts[index]
        root = _parsed(data)
        if root is None or not apply(root, change):
            return parts
        return [*parts[:index], (name, _serialized(root)), *parts[index + 1 :]]

    return edit


def _element(root: etree._Element, change: Edit) -> etree._Element | None:
    elements = _elements(root)
    return pick(elements, change.target) if elements else None


def _duplicate(root: etree._Element, change: Edit) -> bool:
    element = _element(root, change)
    if element is None:
        return False
    times = 1 + change.value % 3 * (change.value % 50)  # once, or many times over (up to about a megabyte)
    for _ in range(min(times, max(1, 1024 * 1024 // len(etree.tostring(element))))):
        element.addnext(copy.deepcopy(element))
    return True


def _delete(root: etree._Element, change: Edit) -> bool:
    element = _element(root, change)
    if element is None:
        return False
    element.getparent().remove(element)
    return True


def _reorder(root: etree._Element, change: Edit) -> bool:
    element = _element(root, change)
    if element is None:
        return False
    parent = element.getparent()
    parent.remove(element)
    parent.insert(change.value % (len(parent) + 1), element)
    return True


def _nest(root: etree._Element, change: Edit) -> bool:
    """The element wrapped in copies of itself (its tag and attributes, not its children), many deep."""
    element = _element(root, change)
    if element is None:
        return False
    parent, position = element.getparent(), element.getparent().index(element)
    parent.remove(element)
    outer = inner = etree.Element(element.tag, dict(element.attrib))
    for _ in range(pick(_NEST_DEPTHS, change.value) - 1):
        inner = etree.SubElement(inner, element.tag, dict(element.attrib))
    inner.append(element)
    parent.insert(position, outer)
    return True


def _self_nest(root: etree._Element, change: Edit) -> bool:
    """A copy of the element inside it, and a copy inside that one, and so on (a table in a cell of itself)."""
    element = _element(root, change)
    if element is None:
        return False
    original, current = copy.deepcopy(element), element
    depth = pick(_SELF_NEST_DEPTHS, change.value)
    for _ in range(min(depth, max(1, 1024 * 1024 // len(etree.tostring(element))))):
        inner = copy.deepcopy(original)
        current.append(inner)
        current = inner
    return True


def _attribute(root: etree._Element, change: Edit) -> bool:
    pairs = [(element, name) for element in _elements(root) for name in element.attrib]
    if not pairs:
        return False
    element, name = pick(pairs, change.target)
    element.set(name, _xml_safe(hostile_value(_local(name), change.value)))
    return True


def _text(root: etree._Element, change: Edit) -> bool:
    holders = [element for element in _elements(root) if element.text and element.text.strip()]
    if not holders:
        return False
    element = pick(holders, change.target)
    values = NUMBERS if _local(element.tag) in {"v", "f", "row", "col", "val"} else STRINGS + NUMBERS
    element.text = _xml_safe(pick(values, change.value))
    return True


def _xml_safe(text: str) -> str:
    return "".join(character for character in text if character in "\t\n\r" or ord(character) >= 0x20)


def _inject(root: etree._Element, change: Edit) -> bool:
    """A snippet a writer would put under one of the part's elements, with hostile values in its holes."""
    hosts = [element for element in [root, *_elements(root)] if _local(element.tag) in INJECTIONS]
    if not hosts:
        return False
    host = pick(hosts, change.target)
    template = pick(INJECTIONS[_local(host.tag)], change.value)
    values = {
        "n": pick(NUMBERS, change.value // 7),
        "ref": pick(CELL_REFERENCES, change.value // 11),
        "s": pick(STRINGS, change.value // 13),
        "t": pick(CELL_TYPES, change.value // 17),
    }
    snippet = template.format(**{key: escape(value, {'"': "&quot;"}) for key, value in values.items()})
    declarations = " ".join(f'xmlns:{prefix}="{uri}"' for prefix, uri in _NAMESPACES.items())
    default = host.nsmap.get(None)
    if default:
        declarations += f' xmlns="{default}"'
    holder = _parsed(f"<holder {declarations}>{snippet}</holder>".encode())
    if holder is None:
        return False
    position = change.part % (len(host) + 1)
    for offset, child in enumerate(list(holder)):
        host.insert(position + offset, child)
    return True


def _truncate_xml(parts: list[tuple[str, bytes]], change: Edit) -> list[tuple[str, bytes]]:
    index = _xml_part_indexes(parts, change)
    if index is None:
        return parts
    name, data = parts[index]
    return [*parts[:index], (name, data[: change.value % (len(data) + 1)]), *parts[index + 1 :]]


def _splice(parts: list[tuple[str, bytes]], change: Edit) -> list[tuple[str, bytes]]:
    index = _xml_part_indexes(parts, change)
    if index is None:
        return parts
    name, data = parts[index]
    at = change.target % (len(data) + 1)
    return [*parts[:index], (name, data[:at] + pick(_SPLICES, change.value) + data[at:]), *parts[index + 1 :]]


def _in_named_part(
    suffix: str, apply: Callable[[etree._Element, Edit], bool]
) -> Callable[[list[tuple[str, bytes]], Edit], list[tuple[str, bytes]]]:
    def edit(parts: list[tuple[str, bytes]], change: Edit) -> list[tuple[str, bytes]]:
        candidates = [index for index, (name, _) in enumerate(parts) if name.endswith(suffix)]
        if not candidates:
            return parts
        index = pick(candidates, change.part)
        name, data = parts[index]
        root = _parsed(data)
        if root is None or not apply(root, change):
            return parts
        return [*parts[:index], (name, _serialized(root)), *parts[index + 1 :]]

    return edit


def _relationship(root: etree._Element, change: Edit) -> bool:
    """A relationship that points at a part that is not there, outside the package, at the wrong kind of
    part, or that shares its id with another."""
    relationships = list(root)
    if not relationships:
        return False
    relationship = pick(relationships, change.target)
    choice = change.value % 4
    if choice == 0:
        relationship.set("Target", pick(_RELATIONSHIP_TARGETS, change.value // 4))
    elif choice == 1:
        relationship.set("TargetMode", "External")
    elif choice == 2:
        relationship.set("Type", pick(_RELATIONSHIP_TYPES, change.value // 4))
    else:
        relationship.set("Id", pick(relationships, change.value // 4).get("Id", ""))
    return True


def _content_type(root: etree._Element, change: Edit) -> bool:
    entries = list(root)
    if not entries:
        return False
    entry = pick(entries, change.target)
    if change.value % 2:
        root.remove(entry)
    else:
        entry.set("ContentType", pick(_CONTENT_TYPES, change.value // 2))
    return True


def _rename_part(parts: list[tuple[str, bytes]], change: Edit) -> list[tuple[str, bytes]]:
    if not parts:
        return parts
    index = change.target % len(parts)
    name, data = parts[index]
    folder, _, base = name.rpartition("/")
    renamings = (
        name + "x", name.upper(), f"renamed/{base}", f"{folder}/../{base}".lstrip("/"), f"/{name}", base,
        name.replace(".xml", ".XML"),
    )  # fmt: skip
    choice = change.value % (len(renamings) + 1)
    if choice == len(renamings):  # two parts swap their names
        other = change.part % len(parts)
        swapped = list(parts)
        swapped[index], swapped[other] = (parts[other][0], data), (name, parts[other][1])
        return swapped
    return [*parts[:index], (renamings[choice], data), *parts[index + 1 :]]


def _delete_part(parts: list[tuple[str, bytes]], change: Edit) -> list[tuple[str, bytes]]:
    if not parts:
        return parts
    index = change.target % len(parts)
    return parts[:index] + parts[index + 1 :]


def _duplicate_entry(parts: list[tuple[str, bytes]], change: Edit) -> list[tuple[str, bytes]]:
    """A second zip entry of the same name, holding another part's data (a reader takes one of them)."""
    if not parts:
        return parts
    name = parts[change.target % len(parts)][0]
    return [*parts, (name, parts[change.value % len(parts)][1])]


_OFFICE_EDITS: dict[str, Callable[[list[tuple[str, bytes]], Edit], list[tuple[str, bytes]]]] = {
    "duplicate": _xml_edit(_duplicate),
    "delete": _xml_edit(_delete),
    "reorder": _xml_edit(_reorder),
    "nest": _xml_edit(_nest),
    "self_nest": _xml_edit(_self_nest),
    "attribute": _xml_edit(_attribute),
    "text": _xml_edit(_text),
    "inject": _xml_edit(_inject),
    "truncate_xml": _truncate_xml,
    "splice": _splice,
    "relationship": _in_named_part(".rels", _relationship),
    "content_type": _in_named_part("[Content_Types].xml", _content_type),
    "rename_part": _rename_part,
    "delete_part": _delete_part,
    "duplicate_entry": _duplicate_entry,
}
assert set(_OFFICE_EDITS) == OFFICE_OPERATIONS
