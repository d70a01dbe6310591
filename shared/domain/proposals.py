"""Structured edit proposals and the deterministic writer that applies them (docs/artifacts.md).

A proposal names the version it was made against and a list of operations on block ids: insert after a block,
replace, delete, move, set a table cell, rename a heading. The writer applies them in order to that version's
blocks; the same proposal on the same version always gives the same blocks. An operation that names a block
that is not there (or not of the right kind) refuses the whole proposal, naming the operation. Pure rules."""

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal
from uuid import UUID, uuid5

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from shared.domain.artifacts import ArtifactBlock, ArtifactContent
from shared.domain.document import Block, BlockKind, Table
from shared.domain.errors import InvalidRequest

MAX_OPERATIONS = 500


class _Operation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InsertBlocks(_Operation):
    """New blocks after `after` (at the start when None)."""

    op: Literal["insert"]
    after: str | None = None
    blocks: tuple[Block, ...] = ()
    markdown: str | None = None


class ReplaceBlock(_Operation):
    """The block becomes these blocks (the first keeps its id)."""

    op: Literal["replace"]
    block_id: str = Field(alias="blockId")
    blocks: tuple[Block, ...] = ()
    markdown: str | None = None


class DeleteBlock(_Operation):
    op: Literal["delete"]
    block_id: str = Field(alias="blockId")


class MoveBlock(_Operation):
    """The block, moved to just after `after` (to the start when None)."""

    op: Literal["move"]
    block_id: str = Field(alias="blockId")
    after: str | None = None


class SetCell(_Operation):
    """One cell of a table block, rows and columns counted from 0 (the header row is row 0)."""

    op: Literal["set_cell"]
    block_id: str = Field(alias="blockId")
    row: int = Field(ge=0)
    column: int = Field(ge=0)
    text: str = Field(max_length=100_000)


class RenameHeading(_Operation):
    op: Literal["rename_heading"]
    block_id: str = Field(alias="blockId")
    text: str = Field(min_length=1, max_length=1_000)


Operation = Annotated[
    InsertBlocks | ReplaceBlock | DeleteBlock | MoveBlock | SetCell | RenameHeading, Field(discriminator="op")
]


class Change(BaseModel):
    """What one operation did, as small as what changed: an insert, replace or delete carries its block (the
    block is in the request, or in the version, once); a move its positions; a cell or heading edit only the
    text before and after (never a copy of the whole table)."""

    model_config = ConfigDict(frozen=True)

    operation: int  # its position in the proposal, from 0
    op: str
    block_id: str
    before: ArtifactBlock | None = None
    after: ArtifactBlock | None = None
    position: int | None = None  # where the block ends up (None when deleted)
    moved_from: int | None = None
    row: int | None = None
    column: int | None = None
    text_before: str | None = None
    text_after: str | None = None


class Edited(BaseModel):
    model_config = ConfigDict(frozen=True)

    blocks: tuple[Block, ...]
    ids: tuple[str, ...]
    changes: tuple[Change, ...]


class _Draft:
    def __init__(self, content: ArtifactContent) -> None:
        self.blocks: list[Block] = [Block.model_validate(block.model_dump(exclude={"id"})) for block in content.blocks]
        self.ids: list[str] = [block.id for block in content.blocks]
        self._next = max((int(block_id[1:]) for block_id in self.ids), default=0) + 1
        # Tables being edited cell by cell: copied once, written back once (not a table copy per cell).
        self._tables: dict[str, list[list[str]]] = {}
        self._widths: dict[str, int] = {}

    def new_id(self) -> str:
        self._next += 1
        return f"b{self._next - 1}"

    def index(self, block_id: str, where: str) -> int:
        try:
            return self.ids.index(block_id)
        except ValueError:
            raise InvalidRequest(f"{where}: the version has no block {block_id!r} (any more)") from None

    def after(self, block_id: str | None, where: str) -> int:
        return 0 if block_id is None else self.index(block_id, where) + 1

    def artifact_block(self, index: int) -> ArtifactBlock:
        self.flush(self.ids[index])
        return ArtifactBlock.model_validate({**self.blocks[index].model_dump(), "id": self.ids[index]})

    def rows(self, index: int) -> list[list[str]]:
        """The table's rows, copied once for this proposal (rows stay as ragged as they were)."""
        block_id = self.ids[index]
        if block_id not in self._tables:
            table = self.blocks[index].table
            assert table is not None
            self._tables[block_id] = [list(row) for row in table.rows]
        return self._tables[block_id]

    def width(self, index: int) -> int:
        block_id = self.ids[index]
        if block_id not in self._widths:
            self._widths[block_id] = max((len(row) for row in self.rows(index)), default=0)
        return self._widths[block_id]

    def flush(self, block_id: str | None = None) -> None:
        for edited in [block_id] if block_id is not None else list(self._tables):
            rows = self._tables.pop(edited, None) if edited is not None else None
            self._widths.pop(edited or "", None)
            if rows is None:
                continue
            index = self.ids.index(edited)
            block = self.blocks[index]
            assert block.table is not None
            table = Table(rows=tuple(tuple(row) for row in rows), header_rows=block.table.header_rows)
            self.blocks[index] = block.model_copy(update={"table": table})


def apply_operations(content: ArtifactContent, operations: Sequence[Operation]) -> Edited:
    """`operations` applied in order to `content`'s blocks. Markdown in an operation must already have been
    turned into blocks (the caller parses it with the Markdown parser)."""
    if not 1 <= len(operations) <= MAX_OPERATIONS:
        raise InvalidRequest(f"a proposal has 1 to {MAX_OPERATIONS} operations")
    draft = _Draft(content)
    changes: list[Change] = []
    for number, operation in enumerate(operations):
        where = f"operations[{number}] ({operation.op})"
        changes.extend(_apply(draft, operation, number, where))
    draft.flush()
    return Edited(blocks=tuple(draft.blocks), ids=tuple(draft.ids), changes=tuple(changes))


def _insert(draft: _Draft, at: int, blocks: Sequence[Block], number: int) -> list[Change]:
    changes = []
    for offset, block in enumerate(blocks):
        draft.blocks.insert(at + offset, block)
        draft.ids.insert(at + offset, draft.new_id())
        changes.append(
            Change(
                operation=number,
                op="insert",
                block_id=draft.ids[at + offset],
                after=draft.artifact_block(at + offset),
                position=at + offset,
            )
        )
    return changes


def _apply(draft: _Draft, operation: Operation, number: int, where: str) -> list[Change]:
    if isinstance(operation, InsertBlocks):
        if not operation.blocks:
            raise InvalidRequest(f"{where}: give the blocks (or markdown) to insert")
        return _insert(draft, draft.after(operation.after, where), operation.blocks, number)
    if isinstance(operation, ReplaceBlock):
        if not operation.blocks:
            raise InvalidRequest(f"{where}: give the blocks (or markdown) to replace it with; to remove it, delete it")
        at = draft.index(operation.block_id, where)
        before = draft.artifact_block(at)
        draft.blocks[at] = operation.blocks[0]
        replaced = Change(
            operation=number,
            op="replace",
            block_id=operation.block_id,
            before=before,
            after=draft.artifact_block(at),
            position=at,
        )
        return [replaced, *_insert(draft, at + 1, operation.blocks[1:], number)]
    if isinstance(operation, DeleteBlock):
        at = draft.index(operation.block_id, where)
        before = draft.artifact_block(at)
        del draft.blocks[at], draft.ids[at]
        return [Change(operation=number, op="delete", block_id=operation.block_id, before=before)]
    if isinstance(operation, MoveBlock):
        if operation.after == operation.block_id:
            raise InvalidRequest(f"{where}: a block cannot move after itself")
        at = draft.index(operation.block_id, where)
        block, block_id = draft.blocks.pop(at), draft.ids.pop(at)
        target = draft.after(operation.after, where)
        draft.blocks.insert(target, block)
        draft.ids.insert(target, block_id)
        return [Change(operation=number, op="move", block_id=block_id, moved_from=at, position=target)]
    if isinstance(operation, SetCell):
        return [_set_cell(draft, operation, number, where)]
    at = draft.index(operation.block_id, where)
    block = draft.blocks[at]
    if block.kind is not BlockKind.HEADING:
        raise InvalidRequest(f"{where}: block {operation.block_id} is a {block.kind.value}, not a heading")
    text = " ".join(operation.text.split())
    draft.blocks[at] = block.model_copy(update={"text": text})
    return [
        Change(
            operation=number,
            op="rename_heading",
            block_id=operation.block_id,
            position=at,
            text_before=block.text,
            text_after=text,
        )
    ]


def _set_cell(draft: _Draft, operation: SetCell, number: int, where: str) -> Change:
    at = draft.index(operation.block_id, where)
    block = draft.blocks[at]
    if block.table is None:
        raise InvalidRequest(f"{where}: block {operation.block_id} is a {block.kind.value}, not a table")
    rows = draft.rows(at)
    if operation.row >= len(rows):
        raise InvalidRequest(f"{where}: the table has {len(rows)} rows (counted from 0), so no row {operation.row}")
    width = draft.width(at)
    if operation.column >= width:
        raise InvalidRequest(
            f"{where}: the table has {width} columns (counted from 0), so no column {operation.column}"
        )
    row = rows[operation.row]
    row.extend([""] * (operation.column + 1 - len(row)))  # only the edited row grows, and only to this cell
    before = row[operation.column]
    row[operation.column] = operation.text
    return Change(
        operation=number,
        op="set_cell",
        block_id=operation.block_id,
        position=at,
        row=operation.row,
        column=operation.column,
        text_before=before,
        text_after=operation.text,
    )


class AppliedProposal(BaseModel):
    """A proposal as stored with the version it made (in the same transaction)."""

    model_config = ConfigDict(frozen=True)

    proposal_id: UUID
    base_version: int
    operations: tuple[dict[str, JsonValue], ...]
    created_by: str


class ReplacementState(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


class NewReplacement(BaseModel):
    model_config = ConfigDict(frozen=True)

    tenant_id: str
    replacement_id: UUID
    file_id: UUID
    collection_id: str
    base_version_id: UUID
    filename: str
    media_type: str
    staged_key: str
    content_hash: str
    byte_size: int
    created_by: str
    expires_at: datetime


class ReplacementRecord(NewReplacement):
    state: ReplacementState
    new_version_id: UUID | None = None
    decided_by: str | None = None
    created_at: datetime
    decided_at: datetime | None = None

    @property
    def planned_version_id(self) -> UUID:
        """The version an approval makes: derived from the replacement, so a retried approval reuses it."""
        return uuid5(self.replacement_id, "version")
