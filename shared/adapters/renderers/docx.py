"""Blocks → DOCX with python-docx: real heading styles, list styles by depth, tables with a header row that
Word repeats on every page, code in a monospaced font, quotes in the Quote style, citations as numbered notes.

Deterministic bytes: python-docx stamps the core properties with the time of the call and every zip entry
with the time of the save; both are fixed here (the properties to RENDER_EPOCH, the entries to 1980-01-01)."""

import io
import re
from collections.abc import Sequence

from docx import Document
from docx.document import Document as DocumentObject
from docx.oxml import OxmlElement
from docx.shared import Pt, RGBColor
from docx.table import Table as DocxTable
from docx.table import _Cell

from shared.adapters.renderers.zipped import fixed_zip
from shared.domain.document import Block, BlockKind
from shared.domain.exports import (
    RENDER_EPOCH,
    ExportFormat,
    RenderedFile,
    RenderFailed,
    RenderLimits,
    RenderRequest,
    note_text,
)
from shared.ports import ArtifactRenderer

# Characters XML 1.0 cannot hold (python-docx refuses them): left out, and reported.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_MONO = "DejaVu Sans Mono"


class _Writer:
    def __init__(self) -> None:
        self.document: DocumentObject = Document()
        self.dropped: set[str] = set()

    def clean(self, text: str) -> str:
        self.dropped.update(_NOT_XML.findall(text))
        return _NOT_XML.sub("", text)

    def block(self, block: Block) -> None:
        document = self.document
        kind = block.kind
        if kind is BlockKind.HEADING:
            document.add_heading(self.clean(" ".join(block.text.split())), level=min(max(block.level or 1, 1), 6))
        elif kind is BlockKind.LIST_ITEM:
            depth = min(block.depth or 0, 2)
            style = ("List Number" if block.ordered else "List Bullet") + (f" {depth + 1}" if depth else "")
            document.add_paragraph(self.clean(block.text), style=style)
        elif kind is BlockKind.TABLE and block.table is not None and block.table.rows:
            self.table(block.table.rows, block.table.header_rows)
        elif kind is BlockKind.CODE:
            paragraph = document.add_paragraph()
            for number, line in enumerate(self.clean(block.text).split("\n")):
                run = paragraph.add_run(line)
                run.font.name = _MONO
                run.font.size = Pt(9)
                if number:
                    run.add_break()
        elif kind is BlockKind.QUOTE:
            document.add_paragraph(self.clean(block.text), style="Quote")
        elif kind is BlockKind.IMAGE:
            run = document.add_paragraph().add_run(f"[image{': ' + self.clean(block.text) if block.text else ''}]")
            run.italic = True
        elif kind is BlockKind.PAGE_BREAK:
            document.add_page_break()  # type: ignore[no-untyped-call]
        elif kind is BlockKind.DESCRIPTION:
            run = document.add_paragraph().add_run(f"[description] {self.clean(block.text)}")
            run.italic = True
        elif block.text:
            document.add_paragraph(self.clean(block.text))

    def table(self, rows: Sequence[Sequence[str]], header_rows: int) -> None:
        width = max(len(row) for row in rows)
        table: DocxTable = self.document.add_table(rows=0, cols=width)
        table.style = "Table Grid"
        grid_widths = [column.w for column in table._tbl.tblGrid.gridCol_lst]
        for index, row in enumerate(rows):
            # Rows are built on the XML: python-docx's `add_row().cells` walks the whole table each time,
            # which makes a 10,000-row table quadratic.
            tr = table._tbl.add_tr()
            for text, grid_width in zip((*row, *("",) * (width - len(row))), grid_widths, strict=True):
                tc = tr.add_tc()
                if grid_width is not None:
                    tc.width = grid_width
                run = _Cell(tc, table).paragraphs[0].add_run(self.clean(text))
                if index < header_rows:
                    run.bold = True
            if index < header_rows:
                # Word repeats a header row at the top of every page the table runs onto.
                tr.get_or_add_trPr().append(OxmlElement("w:tblHeader"))

    def notes(self, request: RenderRequest) -> None:
        if not request.citations:
            return
        self.document.add_heading("Notes", level=2)
        for note in request.citations:
            paragraph = self.document.add_paragraph()
            paragraph.add_run(f"[{note.number}] ").bold = True
            run = paragraph.add_run(self.clean(note_text(note)))
            run.font.size = Pt(9)
            run.font.color.rgb = RGBColor(0x33, 0x33, 0x33)


class DocxRenderer(ArtifactRenderer):
    format = ExportFormat.DOCX

    def render(self, request: RenderRequest, limits: RenderLimits) -> RenderedFile:
        writer = _Writer()
        for block in request.blocks:
            writer.block(block)
        writer.notes(request)
        properties = writer.document.core_properties
        properties.title = writer.clean(request.title)[:255]
        properties.author = "Quire"
        properties.last_modified_by = "Quire"
        properties.revision = 1
        # python-docx would write the time of this call; the epoch keeps renders byte-identical.
        epoch = RENDER_EPOCH.replace(tzinfo=None)
        properties.created = epoch
        properties.modified = epoch
        properties.last_printed = epoch
        buffer = io.BytesIO()
        writer.document.save(buffer)
        content = fixed_zip(buffer.getvalue())
        if len(content) > limits.max_bytes:
            raise RenderFailed(f"the DOCX would be {len(content)} bytes; the export limit is {limits.max_bytes}")
        return RenderedFile(content=content, format=self.format, unsupported_characters=tuple(sorted(writer.dropped)))
