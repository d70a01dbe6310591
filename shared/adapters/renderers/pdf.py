"""Blocks → PDF with fpdf2, in DejaVu Sans (a Unicode TrueType font: Latin, Latin Extended, Greek, Cyrillic,
Hebrew, Arabic and more), embedded as a subset.

Wrapping uses the font's real advance widths, and a word wider than its column is broken rather than left to
run off the page (fpdf2 breaks it by characters). Tables take their column widths from their content and
repeat their header rows after a page break. Text in a script that needs shaping (right to left, combining
marks) is shaped by HarfBuzz and laid out by the Unicode bidirectional algorithm; everything else is set
directly, which is several times faster. Characters the font has no glyph for are left out and reported
(`unsupported_characters`), and the document says so on its last page: never a blank or a "?" that reads as
text. Deterministic: a fixed creation date and an /ID derived from the content, never from the clock.
"""

import unicodedata
from collections.abc import Sequence
from functools import cache

from fontTools.ttLib import TTFont
from fpdf import FPDF
from fpdf.enums import TableHeadingsDisplay, WrapMode
from fpdf.errors import FPDFException

from quire_fonts import BOLD, MONO, REGULAR, font_path
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

_HEADING_SIZES = {1: 20.0, 2: 16.0, 3: 13.5, 4: 12.0, 5: 11.0, 6: 11.0}
# Every size a reader of the text layer could take for the body is within 15% of the body's (Quire's PDF parser
# calls a line a heading when it is 15% larger than the most common size): so whichever kind of text dominates
# a document (tables, code, notes), paragraphs read back as paragraphs and only headings as headings.
_BODY_SIZE = 10.5
_CODE_SIZE = 9.5
_TABLE_SIZE = 9.5
_NOTE_SIZE = 9.5
_LINE = 1.35  # line height as a multiple of the font size, in points → mm below
_PT = 0.3528  # millimetres per point
_INDENT = 6.0  # mm per list level
# Left and right inside a table cell: wider than an em of the table's text, so that a reader of the text layer
# (Quire's own PDF parser among them) sees a column gap between cells, not a word space.
_CELL_PADDING = 2.2
_KEEP = frozenset("\n")


@cache
def _coverage(name: str) -> frozenset[int]:
    """The code points `name` has a glyph for."""
    with TTFont(font_path(name), lazy=True) as font:
        return frozenset(font.getBestCmap())


def _needs_shaping(text: str) -> bool:
    return any(
        unicodedata.bidirectional(ch) in ("R", "AL", "AN", "RLE", "RLO", "RLI") or unicodedata.combining(ch)
        for ch in text
        if ord(ch) >= 0x0300
    )


class TableRowTooTall(Exception):
    """fpdf2 cannot split a table row across pages."""

    def __init__(self, block: int, longest: int) -> None:
        super().__init__(f"block {block}")
        self.block = block
        self.longest = longest


class _Pdf(FPDF):
    def __init__(self, document_id: str) -> None:
        super().__init__(format="A4", unit="mm")
        self._document_id = document_id

    def footer(self) -> None:
        self.set_y(-12)
        self.set_font("DejaVu", size=8)
        self.set_text_color(110, 110, 110)
        self.cell(0, 5, f"{self.page_no()} / {{nb}}", align="C")
        self.set_text_color(0, 0, 0)

    def file_id(self) -> str:
        # /ID from the content: two renders of one version are the same bytes, and a different version differs.
        half = self._document_id[:32].upper()
        return f"<{half}><{half}>"


class _Writer:
    def __init__(self, request: RenderRequest, limits: RenderLimits) -> None:
        self.limits = limits
        self.dropped: set[str] = set()
        pdf = _Pdf(request.content_id)
        pdf.set_creation_date(RENDER_EPOCH)
        pdf.set_title(self.printable(request.title, REGULAR))
        pdf.set_creator("Quire")
        pdf.set_producer("Quire (fpdf2)")
        pdf.set_margins(20, 18, 20)
        pdf.set_auto_page_break(auto=True, margin=18)
        pdf.add_font("DejaVu", "", font_path(REGULAR))
        pdf.add_font("DejaVu", "B", font_path(BOLD))
        pdf.add_font("DejaVuMono", "", font_path(MONO))
        pdf.add_page()
        self.pdf = pdf
        self._shaping = False

    # --- text ------------------------------------------------------------------------------------------

    def printable(self, text: str, font: str) -> str:
        """`text` without what `font` cannot draw (remembered, to be reported); a tab is spaces."""
        text = text.expandtabs(4)
        covered = _coverage(font)
        missing = {ch for ch in text if ord(ch) not in covered and ch not in _KEEP}
        if not missing:
            return text
        self.dropped.update(missing)
        return "".join(ch for ch in text if ch not in missing)

    def _font(self, family: str, style: str, size: float, text: str) -> None:
        self.pdf.set_font(family, style, size)
        shaping = _needs_shaping(text)
        if shaping != self._shaping:
            self.pdf.set_text_shaping(shaping)
            self._shaping = shaping

    def _write(self, text: str, *, size: float, style: str = "", family: str = "DejaVu", indent: float = 0.0) -> None:
        font = MONO if family == "DejaVuMono" else BOLD if style == "B" else REGULAR
        shown = self.printable(text, font)
        self._font(family, style, size, shown)
        pdf = self.pdf
        pdf.set_x(pdf.l_margin + indent)
        pdf.multi_cell(
            pdf.epw - indent,
            size * _LINE * _PT,
            shown,
            align="L",
            new_x="LMARGIN",
            new_y="NEXT",
            wrapmode=WrapMode.WORD,
        )

    def _gap(self, points: float) -> None:
        self.pdf.ln(points * _PT)

    # --- blocks ----------------------------------------------------------------------------------------

    def blocks(self, blocks: Sequence[Block]) -> None:
        for position, (block, number) in enumerate(zip(blocks, ordered_numbers(blocks), strict=True)):
            try:
                self.block(block, number)
            except ValueError as error:
                if "too high" not in str(error) or block.table is None:
                    raise
                longest = max(len(cell) for row in block.table.rows for cell in row)
                raise TableRowTooTall(position + 1, longest) from error
            if self.pdf.page_no() > self.limits.max_pages:
                raise RenderFailed(
                    f"the PDF would pass {self.limits.max_pages} pages (the export limit): export a shorter version,"
                    " or as DOCX, HTML or Markdown"
                )

    def block(self, block: Block, number: int | None) -> None:
        kind = block.kind
        pdf = self.pdf
        if kind is BlockKind.HEADING:
            level = min(max(block.level or 1, 1), 6)
            self._gap(8 if level <= 2 else 5)
            text = " ".join(block.text.split())
            self._write(text, size=_HEADING_SIZES[level], style="B")
            self._gap(3)
        elif kind is BlockKind.LIST_ITEM:
            depth = min(block.depth or 0, 8)
            marker = f"{number}." if number is not None else ("•" if depth % 2 == 0 else "◦")
            self._write(f"{marker} {block.text}", size=_BODY_SIZE, indent=_INDENT * (depth + 1) - 4)
            self._gap(1.5)
        elif kind is BlockKind.TABLE and block.table is not None and block.table.rows:
            self.table(block.table.rows, block.table.header_rows)
        elif kind is BlockKind.CODE:
            pdf.set_fill_color(244, 244, 244)
            shown = self.printable(block.text.expandtabs(4), MONO)
            self._font("DejaVuMono", "", _CODE_SIZE, shown)
            pdf.multi_cell(
                pdf.epw,
                _CODE_SIZE * _LINE * _PT,
                shown,
                align="L",
                fill=True,
                new_x="LMARGIN",
                new_y="NEXT",
                wrapmode=WrapMode.CHAR,
            )
            self._gap(5)
        elif kind is BlockKind.QUOTE:
            pdf.set_text_color(70, 70, 70)
            self._write(block.text, size=_BODY_SIZE, indent=_INDENT)
            pdf.set_text_color(0, 0, 0)
            self._gap(5)
        elif kind is BlockKind.PAGE_BREAK:
            pdf.add_page()
        elif kind in (BlockKind.IMAGE, BlockKind.DESCRIPTION):
            label = "image" if kind is BlockKind.IMAGE else "description"
            pdf.set_text_color(90, 90, 90)
            self._write(f"[{label}{': ' + block.text if block.text else ''}]", size=_BODY_SIZE)
            pdf.set_text_color(0, 0, 0)
            self._gap(4)
        elif block.text.strip():
            self._write(block.text, size=_BODY_SIZE)
            self._gap(5)

    def table(self, rows: Sequence[Sequence[str]], header_rows: int) -> None:
        pdf = self.pdf
        width = max(len(row) for row in rows)
        cells = [
            [self.printable(cell, BOLD if index < header_rows else REGULAR) for cell in row] + [""] * (width - len(row))
            for index, row in enumerate(rows)
        ]
        # Shaping costs several times plain setting: only a table that holds such a script pays for it.
        shaping = any(_needs_shaping(cell) for row in cells for cell in row)
        pdf.set_font("DejaVu", "", _TABLE_SIZE)
        if shaping != self._shaping:
            pdf.set_text_shaping(shaping)
            self._shaping = shaping
        widths = self._column_widths(cells, header_rows)
        pdf.set_draw_color(150, 150, 150)
        self._gap(2)
        with pdf.table(
            # Never a hair over the page (float sums): fpdf2 refuses a table wider than the page width.
            width=min(sum(widths), pdf.epw),
            col_widths=widths,
            align="LEFT",
            text_align="LEFT",
            line_height=_TABLE_SIZE * _LINE * _PT,
            padding=(0.6, _CELL_PADDING),
            num_heading_rows=header_rows,
            first_row_as_headings=header_rows > 0,
            repeat_headings=TableHeadingsDisplay.ON_TOP_OF_EVERY_PAGE,
            wrapmode=WrapMode.WORD,
        ) as table:
            for row in cells:
                table_row = table.row()
                for cell in row:
                    table_row.cell(cell)
        self._gap(5)

    def _column_widths(self, rows: Sequence[Sequence[str]], header_rows: int) -> list[float]:
        """From the content: each column as wide as its widest cell (headers measured in bold), then, when
        they do not fit the page, every column gets its longest word and the rest of the page is shared in
        proportion to what each wanted more. A column is never narrower than a few characters."""
        pdf = self.pdf
        columns = len(rows[0])
        natural = [0.0] * columns
        floor = [0.0] * columns
        for index, row in enumerate(rows[:2_000]):  # the first 2,000 rows decide: the rest looks the same
            pdf.set_font("DejaVu", "B" if index < header_rows else "", _TABLE_SIZE)
            for column, cell in enumerate(row):
                if cell:
                    sample = cell[:400]
                    natural[column] = max(natural[column], pdf.get_string_width(sample))
                    longest = max(sample.split() or [""], key=len)
                    floor[column] = max(floor[column], min(pdf.get_string_width(longest), pdf.epw / 4))
        pdf.set_font("DejaVu", "", _TABLE_SIZE)
        padding = 2 * _CELL_PADDING + 0.8
        minimum = min(12.0, pdf.epw / columns)
        wanted = [max(minimum, max(n, f) + padding) for n, f in zip(natural, floor, strict=True)]
        if sum(wanted) <= pdf.epw:
            return wanted
        base = [max(minimum, f + padding) for f in floor]
        if sum(base) >= pdf.epw:
            return [pdf.epw * b / sum(base) for b in base]
        extra = [w - b for w, b in zip(wanted, base, strict=True)]
        room = pdf.epw - sum(base)
        return [b + room * e / sum(extra) for b, e in zip(base, extra, strict=True)]

    def notes(self, request: RenderRequest) -> None:
        if not request.citations:
            return
        self._gap(8)
        self._write("Notes", size=_HEADING_SIZES[3], style="B")
        self._gap(2)
        for note in request.citations:
            self._write(f"[{note.number}] {note_text(note)}", size=_NOTE_SIZE)
            self._gap(1.5)

    def unsupported_notice(self) -> None:
        if not self.dropped:
            return
        shown = ", ".join(f"U+{ord(ch):04X}" for ch in sorted(self.dropped)[:40])
        more = f" and {len(self.dropped) - 40} more" if len(self.dropped) > 40 else ""
        self._gap(6)
        self.pdf.set_text_color(150, 0, 0)
        self._write(
            f"{len(self.dropped)} distinct character(s) this PDF's font cannot draw were left out: {shown}{more}."
            " The HTML, DOCX and Markdown exports keep them.",
            size=_NOTE_SIZE,
        )
        self.pdf.set_text_color(0, 0, 0)


class PdfRenderer(ArtifactRenderer):
    format = ExportFormat.PDF

    def render(self, request: RenderRequest, limits: RenderLimits) -> RenderedFile:
        writer = _Writer(request, limits)
        try:
            writer.blocks(request.blocks)
            writer.notes(request)
            writer.unsupported_notice()
            content = bytes(writer.pdf.output())
        except TableRowTooTall as error:
            raise RenderFailed(
                f"a row of the table in block {error.block} is taller than a page (one of its cells holds"
                f" {error.longest} characters): export it as DOCX, HTML or Markdown, or split the cell"
            ) from error
        except FPDFException as error:
            # What the layout engine cannot place (a table row taller than a page, say) is this content's
            # problem, said in a sentence; anything else is a broken renderer and propagates.
            raise RenderFailed(f"the PDF could not be laid out: {error}") from error
        if len(content) > limits.max_bytes:
            raise RenderFailed(f"the PDF would be {len(content)} bytes; the export limit is {limits.max_bytes}")
        return RenderedFile(
            content=content,
            format=self.format,
            page_count=writer.pdf.pages_count,
            unsupported_characters=tuple(sorted(writer.dropped)),
        )
