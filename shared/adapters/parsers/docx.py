"""DOCX → headings (by style), paragraphs, list items (by numbering level), tables, images, and the
headers and footers, in document order, located by paragraph and table index."""

import io
import re
from typing import Any

from shared.adapters.parsers.ooxml_guard import read_office
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

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_HEADING_STYLE = re.compile(r"^(?:heading|überschrift|titre|título)\s*(\d)$", re.IGNORECASE)


def _heading_level(style_name: str) -> int | None:
    if style_name.lower() == "title":
        return 1
    match = _HEADING_STYLE.match(style_name.strip())
    return min(int(match.group(1)), 6) if match else None


class DocxParser:
    media_types = frozenset({DOCX_TYPE})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        return read_office(content, limits, "DOCX", lambda: self._read(content, limits))

    def _read(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        from docx import Document

        document = Document(io.BytesIO(content))
        collector = BlockCollector(limits)
        self._sections(document, collector, "header")
        self._body(document, collector)
        self._sections(document, collector, "footer")
        return collector.document(DOCX_TYPE)

    def _body(self, document: Any, collector: BlockCollector) -> None:
        from docx.oxml.ns import qn
        from docx.table import Table as DocxTable
        from docx.text.paragraph import Paragraph

        paragraph_index = table_index = 0
        for element in document.element.body.iterchildren():
            if element.tag == qn("w:p"):
                paragraph = Paragraph(element, document)
                for block in self._paragraph(paragraph, document, Location(paragraph_index=paragraph_index)):
                    if not collector.add(block):
                        return
                paragraph_index += 1
            elif element.tag == qn("w:tbl"):
                table = self._table(DocxTable(element, document), Location(table_index=table_index))
                table_index += 1
                if table is not None and not collector.add(table):
                    return

    @staticmethod
    def _paragraph(paragraph: Any, document: Any, location: Location) -> list[Block]:
        blocks: list[Block] = []
        text = paragraph.text.strip()
        style = paragraph.style.name if paragraph.style is not None else ""
        level = _heading_level(style)
        properties = paragraph._p.pPr
        numbering = properties.numPr if properties is not None else None
        if text and level is not None:
            blocks.append(Block(kind=BlockKind.HEADING, text=text, level=level, location=location))
        elif text and (numbering is not None or style.lower().startswith("list")):
            depth = 0
            if numbering is not None and numbering.ilvl is not None and numbering.ilvl.val is not None:
                depth = int(numbering.ilvl.val)
            ordered = "number" in style.lower()
            blocks.append(Block(kind=BlockKind.LIST_ITEM, text=text, depth=depth, ordered=ordered, location=location))
        elif text:
            blocks.append(Block(kind=BlockKind.PARAGRAPH, text=text, location=location))
        for image_ref in _images(paragraph, document):
            blocks.append(Block(kind=BlockKind.IMAGE, image_ref=image_ref, location=location))
        return blocks

    @staticmethod
    def _table(table: Any, location: Location) -> Block | None:
        from docx.oxml.ns import qn

        rows: list[tuple[str, ...]] = []
        # The cells as written (a merged cell is one w:tc): python-docx's grid view raises on the
        # irregular grids real documents contain.
        for tr in table._tbl.tr_lst:
            cells = tuple(" ".join(" ".join(t.text or "" for t in tc.iter(qn("w:t"))).split()) for tc in tr.tc_lst)
            if any(cells):
                rows.append(cells)
        if not rows:
            return None
        first = table._tbl.tr_lst[0]
        header_rows = 1 if _is_header_row(first) or looks_like_header(rows) else 0
        return Block(kind=BlockKind.TABLE, table=Table(rows=tuple(rows), header_rows=header_rows), location=location)

    @staticmethod
    def _sections(document: Any, collector: BlockCollector, which: str) -> None:
        seen: set[str] = set()
        for section in document.sections:
            part = getattr(section, which)
            if part.is_linked_to_previous:
                continue
            text = "\n".join(p.text.strip() for p in part.paragraphs if p.text.strip())
            if text and text not in seen:
                seen.add(text)
                collector.add(Block(kind=BlockKind.PARAGRAPH, text=text, location=Location(shape=which)))


def _is_header_row(tr: Any) -> bool:
    """Word's "repeat as header row" flag on the first row."""
    from docx.oxml.ns import qn

    properties = tr.trPr
    return properties is not None and properties.find(qn("w:tblHeader")) is not None


def _images(paragraph: Any, document: Any) -> list[str]:
    """The package part names of the pictures in a paragraph (their bytes' reference, for OCR and vision)."""
    from docx.oxml.ns import qn

    refs: list[str] = []
    for blip in paragraph._p.iter(qn("a:blip")):
        relationship = blip.get(qn("r:embed"))
        if relationship and relationship in document.part.rels:
            refs.append(str(document.part.rels[relationship].target_part.partname))
    return refs
