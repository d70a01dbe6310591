"""DOCX → headings (by style), paragraphs, list items (by numbering level), tables, images, text boxes,
headers and footers (every kind), footnotes, endnotes and comments, in document order, located by
paragraph and table index (or by the part they come from).

Text is read from the XML itself rather than python-docx's `paragraph.text`, which sees only a
paragraph's direct runs: tracked insertions, content controls, simple fields and smart tags hold text
a reader sees. What Word does not show is left out: deleted and moved-away text, the fallback copy of
a drawing (`mc:Fallback` repeats the `mc:Choice`), and the content of a cell merged into the one above.
"""

import io
import re
from collections.abc import Iterator
from typing import Any

from shared.adapters.parsers.ooxml_guard import RefusedPart, declares_dtd, read_office
from shared.domain.document import (
    Block,
    BlockCollector,
    BlockKind,
    ExtractionLimits,
    ExtractionOutcome,
    Location,
    Table,
)
from shared.domain.layout import looks_like_header
from shared.ports import DocumentParser

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_P, _TBL, _TR, _TC, _T = _W + "p", _W + "tbl", _W + "tr", _W + "tc", _W + "t"
_TEXT_BOX = _W + "txbxContent"
_FALLBACK = _MC + "Fallback"
_CHARACTERS = {_W + "tab": "\t", _W + "br": "\n", _W + "cr": "\n", _W + "noBreakHyphen": "-"}
# Subtrees that hold no text a reader sees (or hold it twice).
_HIDDEN = frozenset(
    {_FALLBACK, _W + "moveFrom", _W + "del", _W + "rPr", _W + "pPr", _W + "sdtPr", _W + "instrText", _W + "delText"}
)
# Elements that only wrap block-level content (paragraphs and tables).
_BLOCK_WRAPPERS = frozenset({_W + "sdt", _W + "sdtContent", _W + "customXml", _MC + "AlternateContent", _MC + "Choice"})
_NOTE_PARTS = (
    ("footnotes", "/footnotes", _W + "footnote"),
    ("endnotes", "/endnotes", _W + "endnote"),
    ("comments", "/comments", _W + "comment"),
)
_HEADING_STYLE = re.compile(r"^(?:heading|überschrift|titre|título)\s*(\d)$", re.IGNORECASE)


def _heading_level(style_name: str) -> int | None:
    if style_name.lower() == "title":
        return 1
    match = _HEADING_STYLE.match(style_name.strip())
    return min(int(match.group(1)), 6) if match else None


def _text(element: Any, *, text_boxes: bool) -> str:
    """What a reader sees of an element's runs, in order; a paragraph inside it ends a line."""
    parts: list[str] = []

    def visit(node: Any) -> None:
        for child in node.iterchildren():
            tag = child.tag
            if tag == _T:
                parts.append(child.text or "")
            elif tag in _CHARACTERS:
                parts.append(_CHARACTERS[tag])
            elif tag in _HIDDEN or (tag == _TEXT_BOX and not text_boxes) or (tag == _TC and _merged_above(child)):
                continue
            else:
                visit(child)
                if tag == _P:
                    parts.append("\n")

    visit(element)
    return "".join(parts)


def _block_elements(container: Any) -> Iterator[Any]:
    """The paragraphs and tables of a story (body, header, note, text box), through content controls."""
    for child in container.iterchildren():
        if child.tag in (_P, _TBL):
            yield child
        elif child.tag in _BLOCK_WRAPPERS:
            yield from _block_elements(child)


def _lines(element: Any) -> str:
    """An element's text (text boxes included), one line per non-empty line."""
    return "\n".join(line.strip() for line in _text(element, text_boxes=True).splitlines() if line.strip())


def _own(paragraph: Any, tag: str) -> list[Any]:
    """The elements `tag` of a paragraph itself: not in the fallback copy of a drawing, not in a text box."""
    found = []
    for element in paragraph.iter(tag):
        ancestor = element.getparent()
        while ancestor is not None and ancestor is not paragraph and ancestor.tag not in (_FALLBACK, _TEXT_BOX):
            ancestor = ancestor.getparent()
        if ancestor is paragraph:
            found.append(element)
    return found


class DocxParser(DocumentParser):
    media_types = frozenset({DOCX_TYPE})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        return read_office(content, limits, "DOCX", lambda: self._read(content, limits))

    def _read(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        from docx import Document

        document = Document(io.BytesIO(content))
        reader = _Reader(document, BlockCollector(limits))
        reader.margins("header")
        reader.body()
        reader.notes()
        reader.margins("footer")
        return reader.collector.document(DOCX_TYPE, title=document.core_properties.title)


class _Reader:
    def __init__(self, document: Any, collector: BlockCollector) -> None:
        self.document = document
        self.collector = collector
        self.paragraph_index = 0
        self.table_index = 0

    def add(self, block: Block) -> bool:
        return self.collector.add(block)

    def body(self) -> None:
        body = self.document.element.body
        if body is not None:  # a document part without a body still has its headers and notes
            self.story(body, self.document.part)

    def story(self, container: Any, part: Any, *, within: Location | None = None) -> bool:
        """The blocks of a story, numbered in document order (or all located `within` the paragraph that
        anchors a text box); False once the collector keeps nothing more."""
        for element in _block_elements(container):
            if element.tag == _P:
                location = within or Location(paragraph_index=self.paragraph_index)
                self.paragraph_index += within is None
                if not self.paragraph(element, part, location):
                    return False
            else:
                table = self.table(element, within or Location(table_index=self.table_index))
                self.table_index += within is None
                if table is not None and not self.add(table):
                    return False
        return True

    def paragraph(self, element: Any, part: Any, location: Location) -> bool:
        """A paragraph, its pictures, then the text boxes it anchors."""
        block = self.paragraph_block(element, location)
        if block is not None and not self.add(block):
            return False
        for image_ref in _images(element, part):
            if not self.add(Block(kind=BlockKind.IMAGE, image_ref=image_ref, location=location)):
                return False
        box_location = location.model_copy(update={"shape": "text box"})
        return all(self.story(box, part, within=box_location) for box in _own(element, _TEXT_BOX))

    def paragraph_block(self, element: Any, location: Location) -> Block | None:
        from docx.text.paragraph import Paragraph

        text = _text(element, text_boxes=False).strip()
        if not text:
            return None
        paragraph = Paragraph(element, self.document)
        style = paragraph.style.name if paragraph.style is not None else ""
        level = _heading_level(style)
        numbering = element.pPr.numPr if element.pPr is not None else None
        if level is not None:
            return Block(kind=BlockKind.HEADING, text=" ".join(text.split()), level=level, location=location)
        if numbering is not None or style.lower().startswith("list"):
            depth = 0
            if numbering is not None and numbering.ilvl is not None and numbering.ilvl.val is not None:
                depth = int(numbering.ilvl.val)
            ordered = "number" in style.lower()
            return Block(kind=BlockKind.LIST_ITEM, text=text, depth=depth, ordered=ordered, location=location)
        return Block(kind=BlockKind.PARAGRAPH, text=text, location=location)

    def table(self, element: Any, location: Location) -> Block | None:
        rows: list[tuple[str, ...]] = []
        # The cells as written (a merged cell is one w:tc): python-docx's grid view raises on the
        # irregular grids real documents contain.
        for tr in element.iterchildren(_TR):
            cells = self.collector.kept_columns(_cell_text(tc) for tc in _cells(tr))
            if any(cells):
                rows.append(cells)
        if not rows:
            return None
        first = next(element.iterchildren(_TR))
        header_rows = 1 if _is_header_row(first) or looks_like_header(rows) else 0
        return Block(kind=BlockKind.TABLE, table=Table(rows=tuple(rows), header_rows=header_rows), location=location)

    def margins(self, which: str) -> None:
        """Every header (or footer) a section defines, first-page and even-page ones too, each text once."""
        seen: set[str] = set()
        parts: set[str] = set()
        for section in self.document.sections:
            for kind in (which, f"first_page_{which}", f"even_page_{which}"):
                margin = getattr(section, kind)
                if margin.is_linked_to_previous:
                    continue
                part = margin.part
                if str(part.partname) in parts:
                    continue
                parts.add(str(part.partname))
                if not self.margin(part, which, seen):
                    return

    def margin(self, part: Any, which: str, seen: set[str]) -> bool:
        location = Location(shape=which)
        lines: list[str] = []
        for element in _block_elements(_root(part)):
            if element.tag == _P:
                lines.extend(filter(None, [_lines(element)]))
            else:
                table = self.table(element, location)
                key = repr(table.table.rows) if table is not None and table.table is not None else ""
                if table is not None and key not in seen:
                    seen.add(key)
                    if not self.add(table):
                        return False
        text = "\n".join(lines)
        if text and text not in seen:
            seen.add(text)
            return self.add(Block(kind=BlockKind.PARAGRAPH, text=text, location=location))
        return True

    def notes(self) -> None:
        """Footnotes, endnotes and comments: each one a paragraph, located by its part and id."""
        for label, reltype, tag in _NOTE_PARTS:
            part = next((rel.target_part for rel in self.document.part.rels.values()
                         if rel.reltype.endswith(reltype) and not rel.is_external), None)  # fmt: skip
            if part is None:
                continue
            root = _root(part)
            for note in root.iterchildren(tag):
                if note.get(_W + "type") in ("separator", "continuationSeparator", "continuationNotice"):
                    continue
                text = _lines(note)
                shape = f"{label.rstrip('s')} {note.get(_W + 'id', '')}".strip()
                if text and not self.add(Block(kind=BlockKind.PARAGRAPH, text=text, location=Location(shape=shape))):
                    return


def _root(part: Any) -> Any:
    """A part's XML. python-docx opens a part whose content type is missing or wrong as a plain part,
    without its XML (and the guard, going by names, may not have read it as XML): read it from its bytes,
    refusing a DTD as the guard does. A part that is not XML at all is read as empty."""
    from docx.oxml.parser import parse_xml

    if hasattr(part, "element"):
        return part.element
    if declares_dtd(part.blob):
        raise RefusedPart(f"{str(part.partname).lstrip('/')} declares a DTD or entities, which are refused")
    try:
        return parse_xml(part.blob)
    except SyntaxError:  # lxml's XMLSyntaxError
        return parse_xml(f'<w:hdr xmlns:w="{_W[1:-1]}"/>')


def _cells(tr: Any) -> Iterator[Any]:
    """A row's cells, through the content controls that may wrap them."""
    for child in tr.iterchildren():
        if child.tag == _TC:
            yield child
        elif child.tag in _BLOCK_WRAPPERS:
            yield from _cells(child)


def _merged_above(tc: Any) -> bool:
    """A cell merged into the one above it: Word shows that cell's content, not this one's."""
    properties = tc.find(_W + "tcPr")
    merge = properties.find(_W + "vMerge") if properties is not None else None
    return merge is not None and merge.get(_W + "val", "continue") == "continue"


def _cell_text(tc: Any) -> str:
    return "" if _merged_above(tc) else " ".join(_text(tc, text_boxes=True).split())


def _is_header_row(tr: Any) -> bool:
    """Word's "repeat as header row" flag on the first row."""
    properties = tr.find(_W + "trPr")
    return properties is not None and properties.find(_W + "tblHeader") is not None


def _images(paragraph: Any, part: Any) -> list[str]:
    """The package part names of the pictures in a paragraph (their bytes' reference, for OCR and vision),
    resolved through the relationships of the part the paragraph is in."""
    refs: list[str] = []
    for blip in _own(paragraph, _A + "blip"):
        relationship = blip.get(_R + "embed")
        if relationship and relationship in part.rels and not part.rels[relationship].is_external:
            refs.append(str(part.rels[relationship].target_part.partname))
    return refs
