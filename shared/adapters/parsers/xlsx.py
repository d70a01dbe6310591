"""XLSX → per sheet, tables of at most ROWS_PER_BLOCK rows with the header repeated, cells as displayed
(formulas by their cached values), located by sheet and A1 range, then the text of the sheet's text
boxes and shapes. Empty rows cost nothing but are counted: a sheet that declares a million empty cells
is cut at the cell limit, not walked forever. Links to other workbooks (or DDE sources) are never
followed: a formula shows the value saved with the file."""

import io
import posixpath
import zipfile
from collections.abc import Iterator
from typing import Any
from xml.etree import ElementTree

from shared.adapters.parsers.cells import ROWS_PER_BLOCK, a1_range, display
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
from shared.ports import DocumentParser

XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
MAX_CELLS_VISITED = 5_000_000
EXTERNAL_LINKS_WARNING = (
    "the workbook links to other workbooks or DDE sources; the links were not followed, "
    "and cells show the values saved with the file"
)
MISSING_STRINGS_WARNING = "some cells refer to text the workbook does not have; they are shown empty"
_DRAWING_RELATIONSHIP = "/drawing"
_XDR = "{http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}"


class _SharedStrings(list[str]):
    """The workbook's shared-string table, as openpyxl indexes it with whatever number a cell holds: a
    number past its end (or below zero) is one empty cell, not an unreadable workbook."""

    missed = False

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, int) and not 0 <= index < len(self):
            self.missed = True
            return ""
        return super().__getitem__(index)


class XlsxParser(DocumentParser):
    media_types = frozenset({XLSX_TYPE})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        return read_office(content, limits, "XLSX", lambda: self._read(content, limits))

    def _read(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        import openpyxl

        # keep_links=False: openpyxl would otherwise read every external link part, and raises on a
        # link whose part (or whose own relationships) the file does not have.
        workbook = openpyxl.load_workbook(io.BytesIO(content), read_only=True, data_only=True, keep_links=False)
        collector = BlockCollector(limits)
        package = zipfile.ZipFile(io.BytesIO(content))
        warnings = [EXTERNAL_LINKS_WARNING] if _links_elsewhere(package) else []
        strings = _SharedStrings(getattr(workbook.worksheets[0], "_shared_strings", []) if workbook.worksheets else [])
        visited = 0
        try:
            for sheet in workbook.worksheets:
                if hasattr(sheet, "_shared_strings"):  # openpyxl's read-only sheets share the workbook's table
                    sheet._shared_strings = strings
                rows, visited = self._rows(sheet, visited, warnings, collector)
                if not self._tables(sheet.title, rows, collector):
                    break
                if not _drawings(package, sheet, collector) or visited >= MAX_CELLS_VISITED:
                    break
        finally:
            workbook.close()
            package.close()
        if strings.missed:
            warnings.append(MISSING_STRINGS_WARNING)
        return collector.document(XLSX_TYPE, warnings=tuple(warnings))

    @staticmethod
    def _rows(
        sheet: Any, visited: int, warnings: list[str], collector: BlockCollector
    ) -> tuple[list[tuple[int, int, tuple[str, ...]]], int]:
        """(row number, first column, displayed cells) for each non-empty row, and the cells visited so far."""
        # Ignore the sheet's declared dimension: only cells actually present are walked.
        sheet.reset_dimensions()
        rows: list[tuple[int, int, tuple[str, ...]]] = []
        for row in _present_rows(sheet):
            visited += max(1, len(row))
            if visited > MAX_CELLS_VISITED:
                warnings.append(f"only the first {MAX_CELLS_VISITED} cells were read (the cell limit)")
                break
            values = [display(cell.value, getattr(cell, "number_format", "General")) for cell in row]
            if not any(values):
                continue
            first = next(i for i, value in enumerate(values) if value)
            last = max(i for i, value in enumerate(values) if value)
            number = next((cell.row for cell in row if getattr(cell, "row", None)), len(rows) + 1)
            column = getattr(row[first], "column", first + 1) - 1
            rows.append((number, column, collector.kept_columns(values[first : last + 1])))
        return rows, visited

    @staticmethod
    def _tables(title: str, rows: list[tuple[int, int, tuple[str, ...]]], collector: BlockCollector) -> bool:
        if not rows:
            return True
        limit = collector.limits.max_columns
        first_column = min(column for _, column, _ in rows)
        full_width = max(column + len(cells) for _, column, cells in rows) - first_column
        if full_width > limit:
            collector.columns_cut()  # rows that start further right are cut to the first one's columns
        width = min(full_width, limit)
        grid = [(("",) * (column - first_column) + cells)[:width] for _, column, cells in rows]
        grid = [row + ("",) * (width - len(row)) for row in grid]
        header = [grid[0]] if looks_like_header(grid) else []
        for start in range(len(header), len(grid), ROWS_PER_BLOCK):
            chunk = grid[start : start + ROWS_PER_BLOCK]
            numbers = [number for number, _, _ in rows[start : start + ROWS_PER_BLOCK]]
            block = Block(
                kind=BlockKind.TABLE,
                table=Table(rows=tuple(header + chunk), header_rows=len(header)),
                location=Location(sheet=title, cell_range=a1_range(numbers[0], numbers[-1], width, first_column)),
            )
            if not collector.add(block):
                return False
        return True


def _present_rows(sheet: Any) -> Iterator[tuple[Any, ...]]:
    """The rows the sheet's XML holds, read as openpyxl's read-only iter_rows reads them, without the
    empty row it makes up for every row number skipped (a sheet whose one row is numbered two billion
    would be walked to it). openpyxl 3.1's own reader, through its internals; iter_rows where they differ."""
    from openpyxl.worksheet._reader import WorkSheetParser

    workbook = sheet.parent
    try:
        source = sheet._get_source()
        strings, get_row = sheet._shared_strings, sheet._get_row
        formats = {"date_formats": workbook._date_formats, "timedelta_formats": workbook._timedelta_formats}
    except AttributeError:
        yield from sheet.iter_rows()
        return
    with source:
        parser = WorkSheetParser(source, strings, data_only=workbook.data_only, epoch=workbook.epoch, **formats)
        last = 0
        for number, cells in parser.parse():
            if number > last:  # a row out of order, or repeated, is skipped, as openpyxl skips it
                last = number
                yield get_row(cells, 1, None, False)


def _links_elsewhere(package: zipfile.ZipFile) -> bool:
    """Whether the workbook declares external links (the parts may be there, or only the reference)."""
    names = package.namelist()
    if any(name.startswith("xl/externalLinks/") for name in names):
        return True
    return any(b"externalReference" in package.read(name) for name in names if name.endswith("/workbook.xml"))


def _part_xml(package: zipfile.ZipFile, name: str) -> ElementTree.Element | None:
    """A part's XML. The guard refuses DTDs in the parts named as XML; this part is reached through a
    relationship, whatever its name or encoding, so the parser itself refuses them too."""
    from defusedxml.ElementTree import fromstring

    try:
        data = package.read(name)
    except KeyError:
        return None
    element: ElementTree.Element = fromstring(data, forbid_dtd=True)
    return element


def _drawings(package: zipfile.ZipFile, sheet: Any, collector: BlockCollector) -> bool:
    """The text of a sheet's text boxes and shapes (a disclaimer, a note, a label), one block each,
    located by sheet, shape name and the cells the shape covers. False once nothing more is kept."""
    path = str(getattr(sheet, "_worksheet_path", "")).lstrip("/")
    if not path:
        return True
    folder, name = posixpath.split(path)
    relationships = _part_xml(package, posixpath.join(folder, "_rels", name + ".rels"))
    if relationships is None:
        return True
    for relationship in relationships.iter(_RELS + "Relationship"):
        if not relationship.get("Type", "").endswith(_DRAWING_RELATIONSHIP) or relationship.get("TargetMode"):
            continue
        target = posixpath.normpath(posixpath.join(folder, relationship.get("Target", "")))
        drawing = _part_xml(package, target.lstrip("/"))
        for anchor in drawing if drawing is not None else ():
            for shape in anchor.iter(_XDR + "sp"):
                block = _shape_block(sheet.title, anchor, shape)
                if block is not None and not collector.add(block):
                    return False
    return True


def _shape_block(title: str, anchor: ElementTree.Element, shape: ElementTree.Element) -> Block | None:
    body = shape.find(_XDR + "txBody")
    if body is None:
        return None
    lines = []
    for paragraph in body.findall(_A + "p"):
        line = "".join(
            (node.text or "") if node.tag == _A + "t" else "\n"
            for node in paragraph.iter()
            if node.tag in (_A + "t", _A + "br")
        )
        if line.strip():
            lines.append(" ".join(line.split()))
    if not lines:
        return None
    properties = shape.find(f"{_XDR}nvSpPr/{_XDR}cNvPr")
    cells = None
    start, end = anchor.find(_XDR + "from"), anchor.find(_XDR + "to")
    if start is not None:
        first_row, first_column = _cell(start)
        last_row, last_column = _cell(end) if end is not None else (first_row, first_column)
        cells = a1_range(first_row + 1, last_row + 1, last_column - first_column + 1, first_column)
    return Block(
        kind=BlockKind.PARAGRAPH,
        text="\n".join(lines),
        location=Location(
            sheet=title, shape=properties.get("name") if properties is not None else None, cell_range=cells
        ),
    )


def _cell(marker: ElementTree.Element) -> tuple[int, int]:
    """A drawing anchor's (row, column), 0-based."""

    def number(tag: str) -> int:
        text = marker.findtext(_XDR + tag) or "0"
        return max(0, int(text)) if text.strip().isdigit() else 0

    return number("row"), number("col")
