"""A structural diff of two block lists (two versions of a file, or two files), needing no model.

Sections are matched by heading path, blocks within a matched section by their text, table cells by row and
column: what a reader asks of two versions is which sections came and went and what changed inside the rest,
not which characters moved. difflib's SequenceMatcher does the aligning, but never on an unbounded input:
items that occur once on each side, in the same order, anchor the alignment first (as patience diff does), and
only the gaps between anchors, each at most MAX_ALIGNED_ITEMS a side, go to SequenceMatcher. The report is
bounded too: at most `max_changes` entries, each text at most MAX_CHANGE_TEXT characters, and `truncated` says
when something was left out. The same inputs always give the same diff.
"""

from bisect import bisect_left, bisect_right
from collections import Counter, deque
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import StrEnum
from itertools import islice, zip_longest
from typing import Literal

from pydantic import BaseModel, ConfigDict

from shared.domain.chunking import block_text
from shared.domain.document import Block, BlockKind, Table

MAX_DIFF_CHANGES = 200  # entries reported in all: sections, block changes, tables, cells and rows
MAX_SECTION_CHANGES = 25  # block changes shown for one section
MAX_TABLE_CHANGES = 50  # cells and rows shown for one table
MAX_CHANGE_TEXT = 160  # characters of a before or after text, "…" included where it was cut
MAX_ALIGNED_ITEMS = 500  # a side of one SequenceMatcher run; a larger gap that differs is paired by position
_CONTEXT = 40  # characters kept before the first difference when a long text is cut

Opcode = tuple[Literal["equal", "replace", "delete", "insert"], int, int, int, int]


class BlockRange(BaseModel):
    """Indexes [start, end) into one side's blocks."""

    model_config = ConfigDict(frozen=True)

    start: int
    end: int


class BlockChangeKind(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


class BlockChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    change: BlockChangeKind
    kind: BlockKind  # the after block's kind; the before block's when removed
    before_index: int | None  # None when added
    after_index: int | None  # None when removed
    before_text: str | None  # short: white space collapsed (a table a row a line), cut around the first difference
    after_text: str | None


class SectionDiff(BaseModel):
    model_config = ConfigDict(frozen=True)

    heading_path: tuple[str, ...]  # the headings above the section's, then its own; () before the first heading
    before: BlockRange | None  # None when added
    after: BlockRange | None  # None when removed
    moved: bool = False  # matched out of order: the sections around it were not in this order before
    changes: tuple[BlockChange, ...] = ()  # for a changed section
    truncated: bool = False  # it has more changes than shown


class CellChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    row: int  # in the after table, header rows counted
    before_row: int  # the same row in the before table (they differ when rows were added or removed above it)
    column: int
    before: str
    after: str


class TableDiff(BaseModel):
    model_config = ConfigDict(frozen=True)

    heading_path: tuple[str, ...]  # the after table's section
    before_index: int  # block indexes
    after_index: int
    # "position": the same place in a matched section; "header": the same header row, somewhere else.
    matched_by: Literal["position", "header"]
    cells_changed: tuple[CellChange, ...] = ()
    rows_added: tuple[int, ...] = ()  # after table's rows
    rows_removed: tuple[int, ...] = ()  # before table's rows
    truncated: bool = False


class DocumentDiff(BaseModel):
    model_config = ConfigDict(frozen=True)

    identical: bool
    sections_added: tuple[SectionDiff, ...] = ()
    sections_removed: tuple[SectionDiff, ...] = ()
    sections_changed: tuple[SectionDiff, ...] = ()
    tables_changed: tuple[TableDiff, ...] = ()
    unchanged_sections: int = 0
    truncated: bool = False


# Alignment


def _increasing(pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of `pairs` (ascending in their first) whose seconds ascend too; ties to the earliest."""
    tails: list[int] = []  # tails[k]: the pair ending the best run of length k + 1 found so far
    tail_values: list[int] = []
    previous = [-1] * len(pairs)
    for index, (_, value) in enumerate(pairs):
        length = bisect_left(tail_values, value)
        if length:
            previous[index] = tails[length - 1]
        if length == len(tails):
            tails.append(index)
            tail_values.append(value)
        else:
            tails[length], tail_values[length] = index, value
    run: list[tuple[int, int]] = []
    index = tails[-1] if tails else -1
    while index >= 0:
        run.append(pairs[index])
        index = previous[index]
    return run[::-1]


def _anchors(before: Sequence[int], after: Sequence[int]) -> list[tuple[int, int]]:
    """Items that occur once on each side, the longest run of them in the same order on both."""
    before_counts, after_counts = Counter(before), Counter(after)
    unique_after = {item: j for j, item in enumerate(after) if after_counts[item] == 1}
    pairs = [
        (i, unique_after[item]) for i, item in enumerate(before) if before_counts[item] == 1 and item in unique_after
    ]
    return _increasing(pairs)


def _gap(before: Sequence[int], after: Sequence[int], span: tuple[int, int, int, int]) -> Iterator[Opcode]:
    """Opcodes for before[i1:i2] against after[j1:j2], `span` being (i1, i2, j1, j2)."""
    i1, i2, j1, j2 = span
    prefix = 0
    while i1 + prefix < i2 and j1 + prefix < j2 and before[i1 + prefix] == after[j1 + prefix]:
        prefix += 1
    if prefix:
        yield ("equal", i1, i1 + prefix, j1, j1 + prefix)
        i1, j1 = i1 + prefix, j1 + prefix
    suffix = 0
    while i1 < i2 - suffix and j1 < j2 - suffix and before[i2 - suffix - 1] == after[j2 - suffix - 1]:
        suffix += 1
    middle_end_i, middle_end_j = i2 - suffix, j2 - suffix
    if i1 == middle_end_i and j1 < middle_end_j:
        yield ("insert", i1, i1, j1, middle_end_j)
    elif j1 == middle_end_j and i1 < middle_end_i:
        yield ("delete", i1, middle_end_i, j1, j1)
    elif i1 < middle_end_i and max(middle_end_i - i1, middle_end_j - j1) <= MAX_ALIGNED_ITEMS:
        # autojunk stays on: an item filling over 1% of a large side is junk, which bounds the matcher's work on a
        # repetitive input; such items may then come back as "replace", where equal pairs are skipped.
        matcher = SequenceMatcher(None, before[i1:middle_end_i], after[j1:middle_end_j])
        for tag, a1, a2, b1, b2 in matcher.get_opcodes():
            yield (tag, i1 + a1, i1 + a2, j1 + b1, j1 + b2)
    elif i1 < middle_end_i:
        yield ("replace", i1, middle_end_i, j1, middle_end_j)
    if suffix:
        yield ("equal", middle_end_i, i2, middle_end_j, j2)


def _alignment(before: Sequence[int], after: Sequence[int]) -> list[Opcode]:
    """SequenceMatcher's opcodes for the two sequences, in bounded time whatever they hold."""
    opcodes: list[Opcode] = []
    i = j = 0
    for anchor_i, anchor_j in [*_anchors(before, after), (len(before), len(after))]:
        for opcode in _gap(before, after, (i, anchor_i, j, anchor_j)):
            _append(opcodes, opcode)
        if anchor_i < len(before):
            _append(opcodes, ("equal", anchor_i, anchor_i + 1, anchor_j, anchor_j + 1))
        i, j = anchor_i + 1, anchor_j + 1
    return opcodes


def _append(opcodes: list[Opcode], opcode: Opcode) -> None:
    """Consecutive equal runs merged into one."""
    if opcodes and opcodes[-1][0] == "equal" == opcode[0]:
        _, i1, _, j1, _ = opcodes[-1]
        opcodes[-1] = ("equal", i1, opcode[2], j1, opcode[4])
    else:
        opcodes.append(opcode)


# Texts


def _normal(text: str) -> str:
    """White space collapsed: text reflowed onto other lines has not changed."""
    return " ".join(text.split())


def _common_prefix(first: str, second: str) -> int:
    low, high = 0, min(len(first), len(second))
    while low < high:
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _short(text: str, start: int = 0) -> str:
    """At most MAX_CHANGE_TEXT characters of `text` from `start`, "…" where it was cut."""
    if start == 0 and len(text) <= MAX_CHANGE_TEXT:
        return text
    lead = "…" if start else ""
    room = MAX_CHANGE_TEXT - len(lead)
    if len(text) - start <= room:
        return lead + text[start:]
    return lead + text[start : start + room - 1] + "…"


def _shown(block: Block) -> str:
    """A block's text as a change shows it: white space collapsed, a table's rows kept one a line."""
    if block.table is None:
        return _normal(block.text)
    return "\n".join(_normal(line) for line in block_text(block).splitlines())


def _excerpts(before: str, after: str) -> tuple[str, str]:
    """Both texts short, and when cut, cut from just before where they first differ."""
    if len(before) <= MAX_CHANGE_TEXT and len(after) <= MAX_CHANGE_TEXT:
        return before, after
    start = max(0, _common_prefix(before, after) - _CONTEXT)
    return _short(before, min(start, len(before))), _short(after, min(start, len(after)))


# Signatures: what makes two blocks, two sections or two rows the same


def _row(row: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_normal(cell) for cell in row)


def _signature(block: Block) -> Hashable:
    if block.table is not None:
        return (block.kind, tuple(_row(row) for row in block.table.rows))
    return (block.kind, block.level, _normal(block.text))


def _header(table: Table) -> tuple[tuple[str, ...], ...] | None:
    """The rows a table is recognised by elsewhere: its header rows, or its first row; None when blank."""
    rows = tuple(_row(row) for row in table.rows[: max(1, table.header_rows)])
    return rows if any(cell for row in rows for cell in row) else None


class _Interner:
    """Equal signatures as equal small integers: what the alignment compares, cheaply."""

    def __init__(self) -> None:
        self._ids: dict[Hashable, int] = {}

    def __call__(self, signature: Hashable) -> int:
        return self._ids.setdefault(signature, len(self._ids))


@dataclass(frozen=True)
class _Section:
    path: tuple[str, ...]  # normalised, whole
    start: int
    end: int

    @property
    def blocks(self) -> BlockRange:
        return BlockRange(start=self.start, end=self.end)

    @property
    def shown_path(self) -> tuple[str, ...]:
        return tuple(_short(heading) for heading in self.path)


def _sections(blocks: Sequence[Block]) -> list[_Section]:
    """A section per heading, from it to the next; the blocks before the first heading, if any, a section of
    their own with the path ()."""
    sections: list[_Section] = []
    start = 0
    path: tuple[str, ...] = ()
    for index, block in enumerate(blocks):
        if block.kind is BlockKind.HEADING:
            if index > start:
                sections.append(_Section(path, start, index))
            start, path = index, tuple(_normal(text) for text in (*block.heading_path, block.text))
    if len(blocks) > start:
        sections.append(_Section(path, start, len(blocks)))
    return sections


class _Budget:
    def __init__(self, limit: int) -> None:
        self._left = limit
        self.exceeded = False

    @property
    def spent(self) -> bool:
        return self._left == 0

    def take(self) -> bool:
        if self._left > 0:
            self._left -= 1
            return True
        self.exceeded = True
        return False


# A block change before it is shown: (change, before index, after index).
_Pending = tuple[BlockChangeKind, int | None, int | None]
# A table's change before it is shown: a changed cell, or a row added or removed (and its index).
_RowChange = CellChange | tuple[Literal["added", "removed"], int]


class _Comparison:
    def __init__(self, before: Sequence[Block], after: Sequence[Block], max_changes: int) -> None:
        self._before, self._after = before, after
        interner = _Interner()
        self._before_ids = [interner(_signature(block)) for block in before]
        self._after_ids = [interner(_signature(block)) for block in after]
        self._budget = _Budget(max_changes)
        self.truncated = False
        self.tables: list[TableDiff] = []
        # Tables not paired by position, which may still be paired by their header: block indexes, in order.
        self._loose_before: list[int] = []
        self._loose_after: list[int] = []

    @property
    def identical(self) -> bool:
        return self._before_ids == self._after_ids

    def diff(self) -> DocumentDiff:
        before_sections, after_sections = _sections(self._before), _sections(self._after)
        if self.identical:
            return DocumentDiff(identical=True, unchanged_sections=len(after_sections))
        pairs, removed, added = self._matched_sections(before_sections, after_sections)
        changed = [
            (before_sections[i], after_sections[j], moved)
            for i, j, moved in pairs
            if moved or not self._same(before_sections[i], after_sections[j])
        ]
        # The overview first, fairly across the three lists; the detail of changed sections from what is left.
        lengths = (len(changed), len(added), len(removed))
        shown = [0, 0, 0]
        for position in range(max(lengths)):
            for which, length in enumerate(lengths):
                if position < length and self._budget.take():
                    shown[which] += 1
        shown_added, shown_removed = added[: shown[1]], removed[: shown[2]]
        sections_changed = tuple(self._changed(*entry) for entry in changed[: shown[0]])
        for i in removed:
            self._loose_before.extend(self._tables_in(self._before, before_sections[i]))
        for j in added:
            self._loose_after.extend(self._tables_in(self._after, after_sections[j]))
        self._pair_by_header(after_sections)
        return DocumentDiff(
            identical=False,
            sections_added=tuple(
                SectionDiff(heading_path=s.shown_path, before=None, after=s.blocks)
                for s in (after_sections[j] for j in shown_added)
            ),
            sections_removed=tuple(
                SectionDiff(heading_path=s.shown_path, before=s.blocks, after=None)
                for s in (before_sections[i] for i in shown_removed)
            ),
            sections_changed=sections_changed,
            tables_changed=tuple(self.tables),
            unchanged_sections=len(pairs) - len(changed),
            truncated=self.truncated or self._budget.exceeded,
        )

    # Sections

    def _matched_sections(
        self, before: list[_Section], after: list[_Section]
    ) -> tuple[list[tuple[int, int, bool]], list[int], list[int]]:
        """Sections paired by heading path (in order, then the rest out of order: moved), and the indexes of those
        only before (removed) and only after (added). Pairs come in the after side's order."""
        interner = _Interner()
        before_keys = [interner(section.path) for section in before]
        after_keys = [interner(section.path) for section in after]
        in_order: list[tuple[int, int]] = []
        removed: list[int] = []
        added: list[int] = []
        for tag, i1, i2, j1, j2 in _alignment(before_keys, after_keys):
            if tag == "equal":
                in_order.extend(zip(range(i1, i2), range(j1, j2), strict=True))
            else:
                removed.extend(range(i1, i2))
                added.extend(range(j1, j2))
        waiting: dict[int, deque[int]] = {}
        for i in removed:
            waiting.setdefault(before_keys[i], deque()).append(i)
        out_of_order: list[tuple[int, int]] = []
        for j in added:
            queue = waiting.get(after_keys[j])
            if queue:
                out_of_order.append((queue.popleft(), j))
        paired_before = {i for i, _ in out_of_order}
        paired_after = {j for _, j in out_of_order}
        every_pair = sorted(in_order + out_of_order)
        # Moved: the pairs outside the longest run that keeps its order on both sides.
        kept = set(_increasing(every_pair))
        pairs = sorted(((i, j, (i, j) not in kept) for i, j in every_pair), key=lambda pair: pair[1])
        return (
            pairs,
            [i for i in removed if i not in paired_before],
            [j for j in added if j not in paired_after],
        )

    def _same(self, before: _Section, after: _Section) -> bool:
        return self._before_ids[before.start : before.end] == self._after_ids[after.start : after.end]

    def _changed(self, before: _Section, after: _Section, moved: bool) -> SectionDiff:
        """The section's block changes, then its tables' cells, as far as the budget goes."""
        if self._budget.spent:
            differs = not self._same(before, after)
            self.truncated |= differs
            return SectionDiff(
                heading_path=after.shown_path, before=before.blocks, after=after.blocks, moved=moved, truncated=differs
            )
        pending: list[_Pending] = []
        tables: list[tuple[int, int]] = []
        opcodes = _alignment(self._before_ids[before.start : before.end], self._after_ids[after.start : after.end])
        for tag, i1, i2, j1, j2 in opcodes:
            if tag != "equal":
                span = (before.start + i1, before.start + i2, after.start + j1, after.start + j2)
                pending.extend(self._block_changes(*span, tables))
        shown: list[BlockChange] = []
        for change in pending:
            if len(shown) == MAX_SECTION_CHANGES or not self._budget.take():
                self.truncated = True
                break
            shown.append(self._block_change(*change))
        for i, j in tables:
            self._table_diff(i, j, after, "position")
        return SectionDiff(
            heading_path=after.shown_path,
            before=before.blocks,
            after=after.blocks,
            moved=moved,
            changes=tuple(shown),
            truncated=len(shown) < len(pending),
        )

    # Blocks

    def _block_changes(
        self, i1: int, i2: int, j1: int, j2: int, tables_paired: list[tuple[int, int]]
    ) -> list[_Pending]:
        """The changes of one opcode, in order: tables paired with tables (added to `tables_paired`), other blocks
        with other blocks, and the rest added or removed."""
        removed = list(range(i1, i2))
        added = list(range(j1, j2))
        changes: list[tuple[int, _Pending]] = []  # each with its offset into the opcode, for the order
        for tables in (True, False):
            before = [i for i in removed if (self._before[i].table is not None) is tables]
            after = [j for j in added if (self._after[j].table is not None) is tables]
            for i, j in zip_longest(before, after):
                if i is None:
                    changes.append((j - j1, (BlockChangeKind.ADDED, None, j)))
                elif j is None:
                    changes.append((i - i1, (BlockChangeKind.REMOVED, i, None)))
                elif self._before_ids[i] != self._after_ids[j]:
                    changes.append((j - j1, (BlockChangeKind.CHANGED, i, j)))
                    if tables:
                        tables_paired.append((i, j))
            if tables:
                self._loose_before.extend(before[len(after) :])
                self._loose_after.extend(after[len(before) :])
        return [change for _, change in sorted(changes, key=lambda entry: entry[0])]

    def _block_change(self, change: BlockChangeKind, before_index: int | None, after_index: int | None) -> BlockChange:
        before = self._before[before_index] if before_index is not None else None
        after = self._after[after_index] if after_index is not None else None
        before_text, after_text = _excerpts(
            _shown(before) if before is not None else "", _shown(after) if after is not None else ""
        )
        kind = after.kind if after is not None else before.kind if before is not None else BlockKind.PARAGRAPH
        return BlockChange(
            change=change,
            kind=kind,
            before_index=before_index,
            after_index=after_index,
            before_text=before_text if before is not None else None,
            after_text=after_text if after is not None else None,
        )

    # Tables

    @staticmethod
    def _tables_in(blocks: Sequence[Block], section: _Section) -> list[int]:
        return [index for index in range(section.start, section.end) if blocks[index].table is not None]

    def _pair_by_header(self, after_sections: list[_Section]) -> None:
        """Tables left over (added, removed, or in sections that were) paired by an equal header, in order."""
        waiting: dict[tuple[tuple[str, ...], ...], deque[int]] = {}
        for i in self._loose_before:
            table = self._before[i].table
            header = _header(table) if table is not None else None
            if header is not None:
                waiting.setdefault(header, deque()).append(i)
        starts = [section.start for section in after_sections]
        for j in sorted(self._loose_after):
            table = self._after[j].table
            header = _header(table) if table is not None else None
            queue = waiting.get(header) if header is not None else None
            if queue:
                i = queue.popleft()
                if self._before_ids[i] != self._after_ids[j]:
                    self._table_diff(i, j, after_sections[bisect_right(starts, j) - 1], "header")

    def _table_diff(self, i: int, j: int, section: _Section, matched_by: Literal["position", "header"]) -> None:
        if not self._budget.take():
            return
        before, after = self._before[i].table, self._after[j].table
        assert before is not None  # only tables are paired
        assert after is not None
        changes = list(islice(_row_changes(before.rows, after.rows), MAX_TABLE_CHANGES + 1))
        shown: list[_RowChange] = []
        for change in changes[:MAX_TABLE_CHANGES]:
            if not self._budget.take():
                break
            shown.append(change)
        self.truncated |= len(shown) < len(changes)
        self.tables.append(
            TableDiff(
                heading_path=section.shown_path,
                before_index=i,
                after_index=j,
                matched_by=matched_by,
                cells_changed=tuple(change for change in shown if isinstance(change, CellChange)),
                rows_added=tuple(
                    row for change in shown if isinstance(change, tuple) for tag, row in [change] if tag == "added"
                ),
                rows_removed=tuple(
                    row for change in shown if isinstance(change, tuple) for tag, row in [change] if tag == "removed"
                ),
                truncated=len(shown) < len(changes),
            )
        )


def _row_changes(before: tuple[tuple[str, ...], ...], after: tuple[tuple[str, ...], ...]) -> Iterator[_RowChange]:
    """Rows aligned by their cells, then the rows that differ by their first cell (a row's key, most often): a row
    paired with another gives its differing cells, column by column. Lazy: a table of a million changed cells
    costs only the ones shown."""
    interner = _Interner()
    before_ids = [interner(_row(row)) for row in before]
    after_ids = [interner(_row(row)) for row in after]
    before_keys = [interner(_normal(row[0]) if row else "") for row in before]
    after_keys = [interner(_normal(row[0]) if row else "") for row in after]
    for tag, i1, i2, j1, j2 in _alignment(before_ids, after_ids):
        if tag == "equal":
            continue
        for _, k1, k2, l1, l2 in _alignment(before_keys[i1:i2], after_keys[j1:j2]):
            for i, j in zip_longest(range(i1 + k1, i1 + k2), range(j1 + l1, j1 + l2)):
                if i is None:
                    yield ("added", j)
                elif j is None:
                    yield ("removed", i)
                elif before_ids[i] != after_ids[j]:
                    yield from _cell_changes(before[i], after[j], i, j)


def _cell_changes(before: tuple[str, ...], after: tuple[str, ...], before_row: int, row: int) -> Iterator[CellChange]:
    for column, (old, new) in enumerate(zip_longest(before, after, fillvalue="")):
        if _normal(old) != _normal(new):
            old_text, new_text = _excerpts(_normal(old), _normal(new))
            yield CellChange(row=row, before_row=before_row, column=column, before=old_text, after=new_text)


def compare_blocks(
    before: Sequence[Block], after: Sequence[Block], *, max_changes: int = MAX_DIFF_CHANGES
) -> DocumentDiff:
    """What changed from `before` to `after`: sections added, removed and changed (with their block changes),
    tables' cells and rows, within `max_changes` entries."""
    if max_changes < 0:
        raise ValueError("max_changes cannot be negative")
    return _Comparison(before, after, max_changes).diff()
