"""XLSX → per sheet, tables of at most ROWS_PER_BLOCK rows with the header repeated, cells as displayed
(formulas by their cached values), located by sheet and A1 range. Empty rows cost nothing but are
counted: a sheet that declares a million empty cells is cut at the cell limit, not walked forever."""

import io
from typing import Any

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

XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
MAX_CELLS_VISITED = 5_000_000
# Columns kept per sheet: one cell far to the right must not widen every row of the table to it.
MAX_COLUMNS = 256


class XlsxParser:
    media_types = frozenset({XLSX_TYPE})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        return read_office(content, limits, "XLSX", lambda: self._read(content, limits))

    def _read(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        import openpyxl

        workbook = openpyxl.load_workbook(io.BytesIO(content), read_only=True, data_only=True)
        collector = BlockCollector(limits)
        warnings: list[str] = []
        visited = 0
        try:
            for sheet in workbook.worksheets:
                rows, visited = self._rows(sheet, visited, warnings)
                if not self._tables(sheet.title, rows, collector) or visited >= MAX_CELLS_VISITED:
                    break
        finally:
            workbook.close()
        return collector.document(XLSX_TYPE, warnings=tuple(warnings))

    @staticmethod
    def _rows(sheet: Any, visited: int, warnings: list[str]) -> tuple[list[tuple[int, int, list[str]]], int]:
        """(row number, first column, displayed cells) for each non-empty row, and the cells visited so far."""
        # Ignore the sheet's declared dimension: only cells actually present are walked.
        sheet.reset_dimensions()
        rows: list[tuple[int, int, list[str]]] = []
        for row in sheet.iter_rows():
            visited += len(row)
            if visited > MAX_CELLS_VISITED:
                warnings.append(f"only the first {MAX_CELLS_VISITED} cells were read (the cell limit)")
                break
            values = [display(cell.value, getattr(cell, "number_format", "General")) for cell in row]
            if not any(values):
                continue
            first = next(i for i, value in enumerate(values) if value)
            last = max(i for i, value in enumerate(values) if value)
            if last - first >= MAX_COLUMNS:
                if not any("columns" in warning for warning in warnings):
                    warnings.append(f"only the first {MAX_COLUMNS} columns of a row were kept (the column limit)")
                last = first + MAX_COLUMNS - 1
            number = next((cell.row for cell in row if getattr(cell, "row", None)), len(rows) + 1)
            column = getattr(row[first], "column", first + 1) - 1
            rows.append((number, column, values[first : last + 1]))
        return rows, visited

    @staticmethod
    def _tables(title: str, rows: list[tuple[int, int, list[str]]], collector: BlockCollector) -> bool:
        if not rows:
            return True
        first_column = min(column for _, column, _ in rows)
        width = min(max(column + len(cells) for _, column, cells in rows) - first_column, MAX_COLUMNS)
        grid = [([""] * (column - first_column) + cells)[:width] for _, column, cells in rows]
        grid = [row + [""] * (width - len(row)) for row in grid]
        header = [grid[0]] if looks_like_header(grid) else []
        for start in range(len(header), len(grid), ROWS_PER_BLOCK):
            chunk = grid[start : start + ROWS_PER_BLOCK]
            numbers = [number for number, _, _ in rows[start : start + ROWS_PER_BLOCK]]
            block = Block(
                kind=BlockKind.TABLE,
                table=Table(rows=tuple(tuple(r) for r in header + chunk), header_rows=len(header)),
                location=Location(sheet=title, cell_range=a1_range(numbers[0], numbers[-1], width, first_column)),
            )
            if not collector.add(block):
                return False
        return True
