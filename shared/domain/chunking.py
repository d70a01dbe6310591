"""Cutting an extracted document into chunks for embedding and keyword search.

A chunk is a run of whole blocks from one section, no larger than the embedding model takes, under the
headings that say what it is about. Blocks are cut only when one alone is too large: a paragraph between
sentences, a table between rows (its header repeated on every piece), and only as a last resort between
words or characters. A chunk never crosses a page, slide or sheet, and it keeps where each of its blocks
is (a bounded list of regions), so a citation can point at the block whose words matched.
"""

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Protocol, TypeVar

from shared.domain.chunk_context import caption_before, same_words
from shared.domain.document import Block, BlockKind, ExtractedDocument, Location, Table
from shared.domain.knowledge import (
    MAX_CHUNK_REGIONS,
    ChunkDraft,
    ChunkLocation,
    ChunkRegion,
    chunk_context,
    embedded_content,
)
from shared.domain.layout import union
from shared.domain.text import BLOCK_SEPARATOR, CELL_SEPARATOR, ROW_SEPARATOR, Span, block_text, sentence_spans
from shared.domain.text import row_text as _row_text

# The text primitives are re-exported: they lived here before shared/domain/text.py.
__all__ = [
    "BLOCK_SEPARATOR",
    "CELL_SEPARATOR",
    "ROW_SEPARATOR",
    "ChunkingStrategy",
    "CountedSpan",
    "Span",
    "StructuralChunker",
    "block_text",
    "sentence_spans",
]

_WORD = re.compile(r"\S+")
_CELL_RANGE = re.compile(r"\$?([A-Za-z]{1,3})\$?(\d+)(?::\$?([A-Za-z]{1,3})\$?(\d+))?")

_T = TypeVar("_T")


class ChunkingStrategy(Protocol):
    def chunk(self, document: ExtractedDocument, *, title: str | None = None) -> list[ChunkDraft]: ...


def _has_text(block: Block) -> bool:
    if block.kind is BlockKind.PAGE_BREAK:
        return False
    if block.table is not None:
        return any(cell.strip() for row in block.table.rows for cell in row)
    return bool(block.text.strip())


CountedSpan = tuple[int, int, int]  # start, end, tokens


def _word_spans(text: str, start: int, end: int) -> list[Span]:
    return [(match.start(), match.end()) for match in _WORD.finditer(text, start, end)]


def _longest_fitting(stops: Sequence[int], tokens_of: Callable[[int], int], budget: int) -> tuple[int, int] | None:
    """The last of the ascending `stops` whose prefix fits `budget`, with its tokens (bisected: a prefix's
    tokens grow with its length)."""
    best: tuple[int, int] | None = None
    low, high = 0, len(stops) - 1
    while low <= high:
        middle = (low + high) // 2
        tokens = tokens_of(stops[middle])
        if tokens <= budget:
            best, low = (stops[middle], tokens), middle + 1
        else:
            high = middle - 1
    return best


def _agreed(values: Sequence[_T | None]) -> _T | None:
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def _with_recognition(draft: ChunkDraft, blocks: Sequence[Block]) -> ChunkDraft:
    """The chunk's OCR confidence: the least sure of the recognised blocks it spans (None: none was)."""
    recognised = [
        block.confidence for block in blocks[draft.block_start : draft.block_end + 1] if block.confidence is not None
    ]
    if not recognised:
        return draft
    return draft.model_copy(update={"location": draft.location.model_copy(update={"ocr_confidence": min(recognised)})})


def _region(location: Location, start: int, end: int) -> ChunkRegion:
    return ChunkRegion(
        start=start,
        end=end,
        page=location.page,
        box=location.box,
        sheet=location.sheet,
        cell_range=location.cell_range,
        slide=location.slide,
        shape=location.shape,
        line_start=location.line_start,
        line_end=location.line_end,
        paragraph_start=location.paragraph_index,
        paragraph_end=location.paragraph_index,
        table_index=location.table_index,
        start_seconds=location.start_seconds,
        end_seconds=location.end_seconds,
        speaker=location.speaker,
    )


def _merged(regions: Sequence[ChunkRegion]) -> ChunkRegion:
    """One region for a run of adjacent ones: the places they agree on, the spans they cover, and the union
    of their boxes when all are boxed on one page."""
    page = _agreed([region.page for region in regions])
    boxes = [region.box for region in regions if region.box is not None]
    starts = [region.line_start for region in regions if region.line_start is not None]
    ends = [region.line_end for region in regions if region.line_end is not None]
    first_paragraphs = [region.paragraph_start for region in regions if region.paragraph_start is not None]
    last_paragraphs = [region.paragraph_end for region in regions if region.paragraph_end is not None]
    starts_spoken = [region.start_seconds for region in regions if region.start_seconds is not None]
    ends_spoken = [region.end_seconds for region in regions if region.end_seconds is not None]
    return ChunkRegion(
        start=regions[0].start,
        end=regions[-1].end,
        page=page,
        box=union(boxes) if page is not None and len(boxes) == len(regions) else None,
        sheet=_agreed([region.sheet for region in regions]),
        cell_range=_agreed([region.cell_range for region in regions]),
        slide=_agreed([region.slide for region in regions]),
        shape=_agreed([region.shape for region in regions]),
        line_start=min(starts, default=None),
        line_end=max(ends, default=None),
        paragraph_start=min(first_paragraphs, default=None),
        paragraph_end=max(last_paragraphs, default=None),
        table_index=_agreed([region.table_index for region in regions]),
        start_seconds=min(starts_spoken, default=None),
        end_seconds=max(ends_spoken, default=None),
        speaker=_agreed([region.speaker for region in regions]),
    )


def _bounded(regions: Sequence[ChunkRegion]) -> tuple[ChunkRegion, ...]:
    """At most MAX_CHUNK_REGIONS: beyond it, adjacent regions (on one page: a chunk never crosses one) are
    merged in runs of equal length, so 200 one-line blocks become a few boxes of 25 lines."""
    if len(regions) <= MAX_CHUNK_REGIONS:
        return tuple(regions)
    run = math.ceil(len(regions) / MAX_CHUNK_REGIONS)
    return tuple(_merged(regions[start : start + run]) for start in range(0, len(regions), run))


def _chunk_location(pieces: Sequence["_Piece"]) -> ChunkLocation:
    """The span of the pieces' blocks, and a region for each block (its pieces together), in body order."""
    by_block: list[ChunkRegion] = []
    offset = 0
    for index, piece in enumerate(pieces):
        start, offset = offset, offset + len(piece.text)
        if index and pieces[index - 1].block_index == piece.block_index:
            by_block[-1] = by_block[-1].model_copy(update={"end": offset})  # parts of one block: one region
        else:
            by_block.append(_region(piece.location, start, offset))
        offset += len(BLOCK_SEPARATOR)
    whole = _merged(by_block)
    pages = [region.page for region in by_block if region.page is not None]
    return ChunkLocation(
        page_start=min(pages, default=None),
        page_end=max(pages, default=None),
        box=whole.box,
        sheet=whole.sheet,
        cell_range=whole.cell_range,
        slide=whole.slide,
        line_start=whole.line_start,
        line_end=whole.line_end,
        paragraph_start=whole.paragraph_start,
        paragraph_end=whole.paragraph_end,
        table_index=whole.table_index,
        shape=whole.shape,
        start_seconds=whole.start_seconds,
        end_seconds=whole.end_seconds,
        speaker=whole.speaker,
        regions=_bounded(by_block),
    )


@dataclass(frozen=True, slots=True)
class _SheetRows:
    """Where a table's data rows are in its sheet, from its A1 cell range."""

    first_column: str
    last_column: str
    first_row: int
    last_row: int


def _sheet_rows(cell_range: str | None, data_rows: int) -> _SheetRows | None:
    match = _CELL_RANGE.fullmatch(cell_range.strip()) if cell_range else None
    if match is None:
        return None
    first_column, first_row = match[1].upper(), int(match[2])
    last_column, last_row = (match[3] or match[1]).upper(), int(match[4] or match[2])
    if last_row - first_row + 1 < data_rows:
        return None  # the range cannot hold the rows: pieces could not be placed in it
    return _SheetRows(first_column, last_column, first_row, last_row)


@dataclass(frozen=True, slots=True)
class _TableLayout:
    """What every piece of one table shares."""

    block_index: int
    location: Location
    header: tuple[str, ...]  # the header rows' lines, repeated on every piece
    header_tokens: int  # of the header lines and the line break after them; 0 without a header
    data_rows: int
    sheet_rows: _SheetRows | None

    def location_of(self, first: int, last: int) -> Location:
        """The location of data rows first..last (0-based, inclusive). The parsers skip blank rows, so the
        sheet's rows may have gaps the table does not show: the range is then the narrowest that surely
        holds the rows, and exact when there are none."""
        if self.sheet_rows is None:
            return self.location
        rows = self.sheet_rows
        top = rows.first_row + first
        bottom = rows.last_row - (self.data_rows - 1 - last)
        return self.location.model_copy(update={"cell_range": f"{rows.first_column}{top}:{rows.last_column}{bottom}"})


@dataclass(frozen=True, slots=True)
class _TableSlice:
    layout: _TableLayout
    rows: tuple[str, ...]  # data rows' lines, or one fragment of one row
    row_tokens: tuple[int, ...]
    first_row: int  # of rows[0], among the table's data rows


_STANDALONE_KINDS = frozenset({BlockKind.TABLE, BlockKind.DESCRIPTION})


@dataclass(frozen=True, slots=True)
class _Piece:
    """What a chunk is packed from: a whole block, or a piece of one that is too large alone."""

    text: str
    tokens: int  # counted alone; a chunk's sum of them is an estimate, checked once the chunk is cut
    block_index: int
    kind: BlockKind
    location: Location
    whole_block: bool  # only whole blocks are repeated as overlap
    table: _TableSlice | None = None  # set on a table's piece, to cut it again by rows
    caption: str | None = None  # a table's piece: the table's caption, part of its chunk's context

    @property
    def place(self) -> tuple[int | None, str | None, int | None]:
        return self.location.page, self.location.sheet, self.location.slide

    @property
    def stands_alone(self) -> bool:
        # A table never shares a chunk, so a citation of it is the table and nothing else; nor does a
        # description, so a citation can always tell a model's reading of an image from a quote.
        return self.kind in _STANDALONE_KINDS


def _can_be_cut(piece: _Piece) -> bool:
    if piece.table is not None:
        return len(piece.table.rows) > 1 or len(piece.table.rows[0].split()) > 1
    return len(piece.text.split()) > 1


@dataclass(frozen=True, slots=True)
class _Section:
    heading_path: tuple[str, ...]
    parent: int | None
    budget: int  # tokens left for the body once the title and heading path are prefixed
    title: str | None = None  # the document's, unless the heading path begins with it

    def context(self, piece: _Piece) -> tuple[str, ...]:
        return chunk_context(self.title, self.heading_path, piece.caption)


class StructuralChunker:
    """Chunks that follow the document's structure, each within `max_tokens` as `count_tokens` counts them.

    The next chunk of a section starts with the last `overlap_blocks` whole non-table blocks of the one
    before, when they take no more than `max_overlap_fraction` of `max_tokens`.
    """

    def __init__(
        self,
        count_tokens: Callable[[str], int],
        max_tokens: int,
        *,
        overlap_blocks: int = 1,
        max_overlap_fraction: float = 0.25,
    ) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
        if overlap_blocks < 0:
            raise ValueError(f"overlap_blocks cannot be negative ({overlap_blocks})")
        if not 0 <= max_overlap_fraction <= 1:
            raise ValueError(f"max_overlap_fraction must be between 0 and 1, not {max_overlap_fraction}")
        self._count = count_tokens
        self._max_tokens = max_tokens
        self._overlap_blocks = overlap_blocks
        self._overlap_tokens = int(max_overlap_fraction * max_tokens)
        self._block_gap = count_tokens(BLOCK_SEPARATOR)
        self._row_gap = count_tokens(ROW_SEPARATOR)

    def chunk(self, document: ExtractedDocument, *, title: str | None = None) -> list[ChunkDraft]:
        """The document's chunks, each indexed under `title` (the document's, shared/domain/chunk_context.py)
        and its heading path."""
        drafts: list[ChunkDraft] = []
        heading: int | None = None
        members: list[int] = []
        for index, block in enumerate(document.blocks):
            if block.kind is BlockKind.HEADING:
                self._chunk_section(document.blocks, heading, members, drafts, title)
                heading, members = index, []
            elif _has_text(block):
                members.append(index)
        self._chunk_section(document.blocks, heading, members, drafts, title)
        return [_with_recognition(draft, document.blocks) for draft in drafts]

    # Sections

    def _chunk_section(
        self,
        blocks: tuple[Block, ...],
        heading: int | None,
        members: list[int],
        drafts: list[ChunkDraft],
        title: str | None,
    ) -> None:
        if not members:
            return  # a heading with nothing under it lives on only in the paths of what follows
        path: tuple[str, ...] = ()
        if heading is not None:
            opener = blocks[heading]
            path = opener.heading_path + ((opener.text,) if opener.text.strip() else ())
        if title and path and same_words(title, path[0]):
            title = None  # the path says it already
        section = self._section(path, heading, title)
        self._pack(section, self._pieces(blocks, members, section.budget), drafts)

    def _section(self, path: tuple[str, ...], parent: int | None, title: str | None) -> _Section:
        kept: tuple[str, ...] = ()
        if title and title.strip():
            kept, _ = self._cut_heading(title.strip(), self._max_tokens // 4)
        path, tokens = self._fitted_path(path, kept)
        return _Section(
            heading_path=path, parent=parent, budget=self._max_tokens - tokens, title=kept[0] if kept else None
        )

    def _fitted_path(self, path: tuple[str, ...], before: tuple[str, ...] = ()) -> tuple[tuple[str, ...], int]:
        """The heading path and the tokens of the context it makes after `before` (the title, cut to a quarter
        of the budget), trimmed to half the budget: the headings say what a chunk is about, but the body is
        what is found. The outermost headings go first, being the least specific; then the innermost is cut
        short."""
        limit = self._max_tokens // 2
        while path:
            tokens = self._count(embedded_content(before + path, ""))
            if tokens <= limit:
                return path, tokens
            if len(path) == 1:
                cut, tokens = self._cut_heading(path[0].strip(), limit, before)
                return (cut, tokens) if cut else ((), self._count(embedded_content(before, "")))
            path = path[1:]
        return (), self._count(embedded_content(before, "")) if before else 0

    def _cut_heading(self, heading: str, limit: int, before: tuple[str, ...] = ()) -> tuple[tuple[str, ...], int]:
        def tokens_of(end: int) -> int:
            return self._count(embedded_content((*before, heading[:end]), ""))

        word_ends = [end for _, end in _word_spans(heading, 0, len(heading))]
        fitting = _longest_fitting(word_ends, tokens_of, limit)
        if fitting is None and word_ends:
            fitting = _longest_fitting(range(1, word_ends[0]), tokens_of, limit)
        if fitting is None:
            return (), 0
        end, tokens = fitting
        return (heading[:end],), tokens

    # Pieces

    def _pieces(self, blocks: tuple[Block, ...], members: list[int], budget: int) -> Iterator[_Piece]:
        for position, index in enumerate(members):
            block = blocks[index]
            if block.kind is BlockKind.TABLE and block.table is not None:
                caption = caption_before(blocks, members, position)
                cost = self._count(embedded_content(("", caption), "")) if caption else 0
                if cost > budget // 4:
                    caption, cost = None, 0  # a table is found by its rows: its caption may not crowd them out
                pieces = self._table_pieces(index, block, block.table, budget - cost)
                yield from (replace(piece, caption=caption) for piece in pieces) if caption else pieces
            else:
                yield from self._text_pieces(index, block, budget)

    def _text_pieces(self, index: int, block: Block, budget: int) -> list[_Piece]:
        text = block_text(block)
        whole = _Piece(text, self._count(text), index, block.kind, block.location, whole_block=True)
        if whole.tokens <= budget:
            return [whole]
        return self._parts(whole, budget, sentences=True)

    def _parts(self, whole: _Piece, budget: int, *, sentences: bool) -> list[_Piece]:
        """`whole` cut into pieces of at most `budget` tokens each (as counted alone), in order, keeping its
        block and location."""
        text = whole.text
        spans = self._group(self._atoms(text, budget, sentences=sentences), budget)
        return [replace(whole, text=text[start:end], tokens=tokens, whole_block=False) for start, end, tokens in spans]

    def _atoms(self, text: str, budget: int, *, sentences: bool) -> list[CountedSpan]:
        """The smallest units that fit: sentences, then (for a sentence too large) words, then (for a word
        too large, such as a long base64 run) characters."""
        if not sentences:
            return self._word_atoms(text, 0, len(text), budget)
        atoms: list[CountedSpan] = []
        for start, end in sentence_spans(text):
            tokens = self._count(text[start:end])
            if tokens <= budget:
                atoms.append((start, end, tokens))
            else:
                atoms.extend(self._word_atoms(text, start, end, budget))
        return atoms

    def _word_atoms(self, text: str, start: int, end: int, budget: int) -> list[CountedSpan]:
        atoms: list[CountedSpan] = []
        for word_start, word_end in _word_spans(text, start, end):
            tokens = self._count(text[word_start:word_end])
            if tokens <= budget:
                atoms.append((word_start, word_end, tokens))
            else:
                atoms.extend(self._character_atoms(text, word_start, word_end, budget))
        return atoms

    def _character_atoms(self, text: str, start: int, end: int, budget: int) -> list[CountedSpan]:
        atoms: list[CountedSpan] = []
        while start < end:
            tokens_of = partial(self._span_tokens, text, start)
            # Double the length until it no longer fits, then bisect: linear in the run, however long.
            fitting: tuple[int, int] | None = None
            length = 1
            while True:
                stop = min(end, start + length)
                tokens = tokens_of(stop)
                if tokens > budget:
                    fitting = _longest_fitting(range(start + length // 2 + 1, stop), tokens_of, budget) or fitting
                    break
                fitting = (stop, tokens)
                if stop == end:
                    break
                length *= 2
            if fitting is None:
                # Not one character fits: it goes alone, and the final check refuses it if it must.
                fitting = (start + 1, tokens_of(start + 1))
            atoms.append((start, *fitting))
            start = fitting[0]
        return atoms

    def _span_tokens(self, text: str, start: int, end: int) -> int:
        return self._count(text[start:end])

    @staticmethod
    def _group(atoms: list[CountedSpan], budget: int) -> list[CountedSpan]:
        """Consecutive atoms packed greedily, each group a span of the text with the white space between."""
        groups: list[CountedSpan] = []
        for start, end, tokens in atoms:
            if groups and groups[-1][2] + tokens <= budget:
                groups[-1] = (groups[-1][0], end, groups[-1][2] + tokens)
            else:
                groups.append((start, end, tokens))
        return groups

    @staticmethod
    def _halves(text: str, *, sentences: bool) -> tuple[str, str]:
        """The text cut in two at the boundary nearest its middle: between sentences, else between words."""
        cuts = [start for start, _ in sentence_spans(text)][1:] if sentences else []
        cuts = cuts or [start for start, _ in _word_spans(text, 0, len(text))][1:]
        cut = min(cuts, key=lambda position: abs(2 * position - len(text)))
        return text[:cut].rstrip(), text[cut:].lstrip()

    # Tables

    def _table_pieces(self, index: int, block: Block, table: Table, budget: int) -> list[_Piece]:
        text = block_text(block)
        whole = _Piece(text, self._count(text), index, BlockKind.TABLE, block.location, whole_block=True)
        if whole.tokens <= budget:
            return [whole]
        lines = [_row_text(row) for row in table.rows]
        header_count = min(max(table.header_rows, 0), len(lines))
        header, data = lines[:header_count], lines[header_count:]
        if not any(cell.strip() for row in table.rows[header_count:] for cell in row):
            return self._parts(whole, budget, sentences=False)
        if not any(cell.strip() for row in table.rows[:header_count] for cell in row):
            header = []  # a blank header says nothing about the columns
        pieces: list[_Piece] = []
        header_tokens = self._count(ROW_SEPARATOR.join(header)) + self._row_gap if header else 0
        if header_tokens > budget // 2:
            # A header filling half of every piece would leave too little room for the rows it explains: it
            # goes once, in pieces of its own, and the rows go without it.
            header_piece = replace(whole, text=ROW_SEPARATOR.join(header), tokens=header_tokens - self._row_gap)
            fits = header_piece.tokens <= budget
            pieces.extend([header_piece] if fits else self._parts(header_piece, budget, sentences=False))
            header, header_tokens = [], 0
        layout = _TableLayout(
            block_index=index,
            location=block.location,
            header=tuple(header),
            header_tokens=header_tokens,
            data_rows=len(data),
            sheet_rows=_sheet_rows(block.location.cell_range, len(data)),
        )
        row_tokens = [self._count(line) for line in data]
        pieces.extend(self._row_pieces(layout, data, row_tokens, 0, budget))
        return pieces

    def _row_pieces(
        self, layout: _TableLayout, rows: Sequence[str], row_tokens: Sequence[int], first: int, budget: int
    ) -> list[_Piece]:
        """Rows packed greedily under the header; a row too large alone is cut into fragments."""
        room = max(1, budget - layout.header_tokens)
        pieces: list[_Piece] = []
        start, tokens = 0, 0
        for index, row_cost in enumerate(row_tokens):
            if start < index and tokens + self._row_gap + row_cost > room:
                pieces.extend(self._slices(layout, rows[start:index], row_tokens[start:index], first + start))
                start, tokens = index, 0
            if row_cost > room:
                pieces.extend(self._row_fragments(layout, rows[index], row_cost, first + index, room))
                start, tokens = index + 1, 0
                continue
            tokens += (self._row_gap if start < index else 0) + row_cost
        if start < len(rows):
            pieces.extend(self._slices(layout, rows[start:], row_tokens[start:], first + start))
        return pieces

    def _slices(self, layout: _TableLayout, rows: Sequence[str], row_tokens: Sequence[int], first: int) -> list[_Piece]:
        # Blank rows alone would make a chunk with nothing to find (or only the header): they are left out.
        if all(not row.replace("|", "").strip() for row in rows):
            return []
        return [self._slice(layout, rows, row_tokens, first)]

    def _slice(self, layout: _TableLayout, rows: Sequence[str], row_tokens: Sequence[int], first: int) -> _Piece:
        """A piece of data rows from the `first` (0-based among the table's data rows) on, under the header."""
        return _Piece(
            text=ROW_SEPARATOR.join((*layout.header, *rows)),
            tokens=layout.header_tokens + sum(row_tokens) + self._row_gap * (len(rows) - 1),
            block_index=layout.block_index,
            kind=BlockKind.TABLE,
            location=layout.location_of(first, first + len(rows) - 1),
            whole_block=False,
            table=_TableSlice(layout, tuple(rows), tuple(row_tokens), first),
        )

    def _row_fragments(self, layout: _TableLayout, row: str, tokens: int, row_index: int, room: int) -> list[_Piece]:
        # A row is a record, not prose: it has no sentences to keep whole, so the smallest honest unit is a
        # word (a cell's value stays readable); the header above each fragment still names the columns.
        fragment = _Piece(row, tokens, layout.block_index, BlockKind.TABLE, layout.location, whole_block=False)
        return [
            self._slice(layout, (part.text,), (part.tokens,), row_index)
            for part in self._parts(fragment, room, sentences=False)
        ]

    # Packing

    def _pack(self, section: _Section, pieces: Iterator[_Piece], drafts: list[ChunkDraft]) -> None:
        returned: list[_Piece] = []  # pieces to take again before the rest, the next one last
        current: list[_Piece] = []
        current_tokens = 0
        overlap = 0
        previous: list[_Piece] = []
        while True:
            piece = returned.pop() if returned else next(pieces, None)
            if piece is None or (current and not self._joins(current, current_tokens, piece, section)):
                if not current:
                    return
                if piece is not None:
                    returned.append(piece)
                previous, given_back = self._emit(section, current, overlap, drafts)
                returned.extend(reversed(given_back))
                current = []
                continue
            if not current:
                current = self._overlap(previous, piece, section)
                overlap = len(current)
                current_tokens = self._joined_tokens(current)
            current_tokens += (self._block_gap if current else 0) + piece.tokens
            current.append(piece)

    def _joins(self, current: list[_Piece], current_tokens: int, piece: _Piece, section: _Section) -> bool:
        if current[0].stands_alone or piece.stands_alone or current[-1].place != piece.place:
            return False  # a chunk on two pages, slides or sheets could be cited as none of them
        return current_tokens + self._block_gap + piece.tokens <= section.budget

    def _joined_tokens(self, pieces: list[_Piece]) -> int:
        return sum(piece.tokens for piece in pieces) + self._block_gap * max(0, len(pieces) - 1)

    def _overlap(self, previous: list[_Piece], piece: _Piece, section: _Section) -> list[_Piece]:
        """The end of the previous chunk to repeat at the start of the next, so a thought cut at the chunk
        boundary is still found whole: whole blocks only (never half a sentence), never a table."""
        if not self._overlap_blocks or not previous or piece.stands_alone or previous[-1].place != piece.place:
            return []
        tail: list[_Piece] = []
        for candidate in reversed(previous):
            if len(tail) == self._overlap_blocks or not candidate.whole_block or candidate.stands_alone:
                break
            tail.insert(0, candidate)
        while tail:
            tokens = self._joined_tokens(tail)
            if tokens <= self._overlap_tokens and tokens + self._block_gap + piece.tokens <= section.budget:
                return tail
            tail = tail[1:]
        return []

    def _emit(
        self, section: _Section, pieces: list[_Piece], overlap: int, drafts: list[ChunkDraft]
    ) -> tuple[list[_Piece], list[_Piece]]:
        """Cut a chunk from `pieces` once its content is counted whole, the sum of the pieces being only an
        estimate. If it is over: without its overlap, then with its last pieces given back to start the
        next chunk, then (one piece alone) cut smaller. The pieces cut, and those given back."""
        pieces = list(pieces)
        given_back: list[_Piece] = []
        while True:
            text = BLOCK_SEPARATOR.join(piece.text for piece in pieces)
            tokens = self._count(embedded_content(section.context(pieces[0]), text))
            if tokens <= self._max_tokens:
                drafts.append(self._draft(section, pieces, text, tokens, ordinal=len(drafts)))
                return pieces, given_back[::-1]
            if overlap:
                pieces, overlap = pieces[overlap:], 0
            elif len(pieces) > 1:
                given_back.append(pieces.pop())
            else:
                self._emit_cut_smaller(section, pieces[0], tokens, drafts)
                return [], given_back[::-1]

    def _emit_cut_smaller(self, section: _Section, piece: _Piece, tokens: int, drafts: list[ChunkDraft]) -> None:
        """A piece over the budget once counted whole is cut in two until each part fits: halving converges
        in a few steps whatever the tokenizer's error, and keeps the parts as large as it allows."""
        pending = [(piece, tokens)]
        while pending:
            piece, tokens = pending.pop()
            if tokens <= self._max_tokens:
                drafts.append(self._draft(section, [piece], piece.text, tokens, ordinal=len(drafts)))
            elif _can_be_cut(piece):
                halves = self._cut_in_two(piece)
                counted = [(half, self._count(embedded_content(section.context(half), half.text))) for half in halves]
                pending.extend(reversed(counted))
            else:
                self._emit_as_last_resort(section, piece, drafts)

    def _cut_in_two(self, piece: _Piece) -> list[_Piece]:
        return [replace(half, caption=piece.caption) for half in self._halves_of(piece)]

    def _halves_of(self, piece: _Piece) -> list[_Piece]:
        table = piece.table
        if table is None:
            halves = self._halves(piece.text, sentences=piece.kind is not BlockKind.TABLE)
            return [replace(piece, text=half, tokens=self._count(half), whole_block=False) for half in halves]
        layout, rows, row_tokens, first = table.layout, table.rows, table.row_tokens, table.first_row
        if len(rows) == 1:
            halves = self._halves(rows[0], sentences=False)
            return [self._slice(layout, (half,), (self._count(half),), first) for half in halves]
        middle = len(rows) // 2
        return [
            *self._slices(layout, rows[:middle], row_tokens[:middle], first),
            *self._slices(layout, rows[middle:], row_tokens[middle:], first + middle),
        ]

    def _emit_as_last_resort(self, section: _Section, piece: _Piece, drafts: list[ChunkDraft]) -> None:
        """One word still over the budget (a tokenizer that counts a whole far above its parts): it goes under
        fewer headings, then without its table's header. Alone, each word was counted within the budget when
        its block was cut, so only a character over the budget by itself is refused: no chunk could hold it."""
        candidates = [piece]
        if piece.table is not None and piece.table.layout.header:
            bare = replace(piece.table.layout, header=(), header_tokens=0)
            bare_slice = self._slice(bare, piece.table.rows, piece.table.row_tokens, piece.table.first_row)
            candidates.append(replace(bare_slice, caption=piece.caption))
        for candidate in candidates:
            for fewer_headings, fewer in _shorter_contexts(section, candidate):
                tokens = self._count(embedded_content(fewer_headings.context(fewer), fewer.text))
                if tokens <= self._max_tokens:
                    drafts.append(self._draft(fewer_headings, [fewer], fewer.text, tokens, ordinal=len(drafts)))
                    return
        raise ValueError(f"max_tokens={self._max_tokens} cannot hold even {piece.text!r}")

    @staticmethod
    def _draft(section: _Section, pieces: list[_Piece], text: str, tokens: int, *, ordinal: int) -> ChunkDraft:
        return ChunkDraft(
            ordinal=ordinal,
            text=text,
            heading_path=section.heading_path,
            block_kind=pieces[0].kind,
            location=_chunk_location(pieces),
            block_start=min(piece.block_index for piece in pieces),
            block_end=max(piece.block_index for piece in pieces),
            parent=section.parent,
            token_count=tokens,
            title=section.title,
            caption=pieces[0].caption,
        )


def _shorter_contexts(section: _Section, piece: _Piece) -> Iterator[tuple[_Section, _Piece]]:
    """The section and piece under less and less context: all of it, without the title, then without each
    outermost heading in turn, then without the caption."""
    yield section, piece
    section = replace(section, title=None)
    yield section, piece
    path = section.heading_path
    while path:
        path = path[1:]
        yield replace(section, heading_path=path), piece
    if piece.caption:
        yield replace(section, heading_path=()), replace(piece, caption=None)
