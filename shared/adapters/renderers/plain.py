"""Blocks → plain text, CSV and XLSX: the formats an uploaded text file, CSV or workbook is replaced in.

A cell that a spreadsheet would run as a formula (starting with =, +, -, @ and not a number) is written so that
it stays text: in CSV with a leading apostrophe (the OWASP advice for CSV injection), in XLSX as a string cell."""

import csv
import io
import re

from openpyxl import Workbook

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
    ordered_numbers,
)
from shared.ports import ArtifactRenderer

_NUMBER = re.compile(r"^[+-]?(\d+([.,]\d+)*|\d*[.,]\d+)([eE][+-]?\d+)?%?$")
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
MAX_SHEET_TITLE = 31


def _formula_like(cell: str) -> bool:
    return cell[:1] in ("=", "+", "-", "@", "\t", "\r") and not _NUMBER.fullmatch(cell.strip())


def _tables(request: RenderRequest) -> list[Block]:
    return [block for block in request.blocks if block.kind is BlockKind.TABLE and block.table and block.table.rows]


class TextRenderer(ArtifactRenderer):
    format = ExportFormat.TEXT

    def render(self, request: RenderRequest, limits: RenderLimits) -> RenderedFile:
        parts: list[str] = []
        for block, number in zip(request.blocks, ordered_numbers(request.blocks), strict=True):
            if block.kind is BlockKind.TABLE and block.table:
                parts.append("\n".join("\t".join(row) for row in block.table.rows))
            elif block.kind is BlockKind.LIST_ITEM:
                marker = f"{number}." if number is not None else "-"
                parts.append(f"{'  ' * (block.depth or 0)}{marker} {block.text}")
            elif block.kind is BlockKind.PAGE_BREAK:
                parts.append("\f")
            elif block.text:
                parts.append(block.text)
        if request.citations:
            parts.append("Notes\n" + "\n".join(f"[{note.number}] {note_text(note)}" for note in request.citations))
        text = "\n\n".join(parts) + "\n"
        return RenderedFile(content=text.encode(), format=self.format)


class CsvRenderer(ArtifactRenderer):
    format = ExportFormat.CSV

    def render(self, request: RenderRequest, limits: RenderLimits) -> RenderedFile:
        tables = _tables(request)
        if not tables:
            raise RenderFailed("a CSV holds a table, and this content has none: export it as text or Markdown")
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        for index, block in enumerate(tables):
            if index:
                writer.writerow([])  # a blank row between tables
            assert block.table is not None
            for row in block.table.rows:
                writer.writerow([f"'{cell}" if _formula_like(cell) else cell for cell in row])
        return RenderedFile(content=out.getvalue().encode(), format=self.format)


class XlsxRenderer(ArtifactRenderer):
    format = ExportFormat.XLSX

    def render(self, request: RenderRequest, limits: RenderLimits) -> RenderedFile:
        tables = _tables(request)
        if not tables:
            raise RenderFailed("a workbook holds tables, and this content has none: export it as DOCX or PDF")
        workbook = Workbook()
        workbook.remove(workbook.active)
        used: set[str] = set()
        for index, block in enumerate(tables, start=1):
            assert block.table is not None
            sheet = workbook.create_sheet(_sheet_title(block, index, used))
            for row in block.table.rows:
                sheet.append([_XML_INVALID.sub("", cell) for cell in row])
            for row_cells in sheet.iter_rows():
                for cell in row_cells:
                    if isinstance(cell.value, str) and cell.value.startswith("="):
                        cell.data_type = "s"  # text, never a formula
            if block.table.header_rows:
                sheet.freeze_panes = sheet.cell(row=block.table.header_rows + 1, column=1)
        epoch = RENDER_EPOCH.replace(tzinfo=None)
        workbook.properties.created = epoch
        workbook.properties.modified = epoch
        workbook.properties.creator = "Quire"
        workbook.properties.title = request.title[:255]
        buffer = io.BytesIO()
        workbook.save(buffer)
        content = fixed_zip(buffer.getvalue(), dated=RENDER_EPOCH)
        if len(content) > limits.max_bytes:
            raise RenderFailed(f"the workbook would be {len(content)} bytes; the export limit is {limits.max_bytes}")
        return RenderedFile(content=content, format=self.format)


def _sheet_title(block: Block, index: int, used: set[str]) -> str:
    """The sheet a table came from (its location), or its heading, else "Table N": unique, at most 31 characters
    of what Excel allows."""
    wanted = block.location.sheet or (block.heading_path[-1] if block.heading_path else "") or f"Table {index}"
    title = re.sub(r"[\[\]:*?/\\]", " ", wanted).strip()[:MAX_SHEET_TITLE] or f"Table {index}"
    candidate, number = title, 2
    while candidate.lower() in used:
        suffix = f" ({number})"
        candidate, number = title[: MAX_SHEET_TITLE - len(suffix)] + suffix, number + 1
    used.add(candidate.lower())
    return candidate
