"""text/csv → tables of at most ROWS_PER_BLOCK rows, each with the header repeated and its A1 range.

Rows are read as the blocks are made, each cut to the column limit as it is read, and reading stops
when the collector does: a huge file costs what is kept, not what it holds."""

import csv
import io
import logging
from collections.abc import Iterator
from itertools import chain, islice

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
from shared.ports import DocumentParser

_log = logging.getLogger(__name__)

MAX_FIELD_CHARS = 1024 * 1024
DELIMITERS = ",;\t|"
# The delimiter is judged on the first rows of the first 64 KiB.
_SAMPLE_CHARS = 64 * 1024
_SAMPLE_ROWS = 50
# looks_like_header reads the first row and the fifty below it.
_HEADER_EVIDENCE_ROWS = 51

Row = tuple[int, tuple[str, ...]]  # its number in the file, its cells


def sniff_delimiter(text: str) -> str:
    """The delimiter that cuts the first rows into the same number (more than one) of fields most often.

    In one linear pass per candidate: csv.Sniffer's quote-and-delimiter regexes are quadratic (a first
    line of `,"a,"a,"a…` kept it busy for a minute on 64 KiB)."""
    sample = text[:_SAMPLE_CHARS]
    best, best_score = ",", (0, 0)
    for delimiter in DELIMITERS:
        counts: dict[int, int] = {}
        try:
            for row in islice(csv.reader(io.StringIO(sample), delimiter=delimiter), _SAMPLE_ROWS):
                if row:
                    counts[len(row)] = counts.get(len(row), 0) + 1
        except csv.Error:
            continue
        fields, rows = max(((f, n) for f, n in counts.items() if f > 1), key=lambda item: item[1], default=(0, 0))
        if (rows, fields) > best_score:
            best, best_score = delimiter, (rows, fields)
    return best


class CsvParser(DocumentParser):
    media_types = frozenset({"text/csv"})

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        decoded = decode_text(content)
        warnings = [decoded.warning] if decoded.warning else []
        collector = BlockCollector(limits)
        previous_limit = csv.field_size_limit(MAX_FIELD_CHARS)
        try:
            rows = _rows(decoded.text, sniff_delimiter(decoded.text), collector, warnings)
            _tables(rows, collector)
        finally:
            csv.field_size_limit(previous_limit)
        return collector.document("text/csv", warnings=tuple(warnings))


def _rows(text: str, delimiter: str, collector: BlockCollector, warnings: list[str]) -> Iterator[Row]:
    """Every row that has content, its cells trimmed and cut to the column limit; a damaged file ends
    where it breaks."""
    kept = 0
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        for number, row in enumerate(reader, start=1):
            if any(cell.strip() for cell in row):
                kept += 1
                yield number, collector.kept_columns(cell.strip() for cell in row)
    except csv.Error as error:
        _log.warning("a CSV is damaged after row %d: %s", kept, error)
        warnings.append(
            f"the CSV is damaged after row {kept} (a quote left open, or a field over the size limit):"
            " the rows after it were not read"
        )


def _tables(rows: Iterator[Row], collector: BlockCollector) -> None:
    head = list(islice(rows, _HEADER_EVIDENCE_ROWS))
    header = [head[0][1]] if looks_like_header([cells for _, cells in head]) else []
    body = chain(head[len(header) :], rows)
    while chunk := list(islice(body, ROWS_PER_BLOCK)):
        table_rows = (*header, *(cells for _, cells in chunk))
        width = max(len(cells) for cells in table_rows)
        block = Block(
            kind=BlockKind.TABLE,
            table=Table(rows=table_rows, header_rows=len(header)),
            # The rows' own numbers in the file: blank rows skipped still count.
            location=Location(cell_range=a1_range(chunk[0][0], chunk[-1][0], width)),
        )
        if not collector.add(block):
            return
