"""text/csv → tables of at most ROWS_PER_BLOCK rows, each with the header repeated and its A1 range."""

import csv
import io

from shared.adapters.parsers.cells import ROWS_PER_BLOCK, a1_range
from shared.adapters.parsers.text_encoding import decode_text
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

MAX_FIELD_CHARS = 1024 * 1024


class CsvParser:
    media_types = frozenset({"text/csv"})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        decoded = decode_text(content)
        sample = decoded.text[: 64 * 1024]
        try:
            dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
        previous_limit = csv.field_size_limit(MAX_FIELD_CHARS)
        warnings = [decoded.warning] if decoded.warning else []
        try:
            rows = self._rows(decoded.text, dialect, limits, warnings)
        finally:
            csv.field_size_limit(previous_limit)
        collector = BlockCollector(limits)
        cells = [row for _, row in rows]
        header = [cells[0]] if looks_like_header(cells) else []
        columns = max((len(row) for row in cells), default=0)
        for start in range(len(header), len(rows), ROWS_PER_BLOCK):
            chunk = rows[start : start + ROWS_PER_BLOCK]
            block = Block(
                kind=BlockKind.TABLE,
                table=Table(
                    rows=tuple(tuple(row) for row in header + [row for _, row in chunk]), header_rows=len(header)
                ),
                # The rows' own numbers in the file: blank rows skipped above still count.
                location=Location(cell_range=a1_range(chunk[0][0], chunk[-1][0], columns)),
            )
            if not collector.add(block):
                break
        return collector.document("text/csv", warnings=tuple(warnings))

    @staticmethod
    def _rows(
        text: str, dialect: type[csv.Dialect] | csv.Dialect, limits: ExtractionLimits, warnings: list[str]
    ) -> list[tuple[int, list[str]]]:
        """(row number in the file, cells) for every row that has content."""
        rows: list[tuple[int, list[str]]] = []
        number = 0
        try:
            for row in csv.reader(io.StringIO(text), dialect):
                number += 1
                if not any(cell.strip() for cell in row):
                    continue
                rows.append((number, row))
                if len(rows) >= limits.max_blocks * ROWS_PER_BLOCK:
                    warnings.append("only the first rows were kept (the block limit)")
                    break
        except csv.Error as error:
            warnings.append(f"the CSV is damaged after row {len(rows)}: {error}")
        return rows
