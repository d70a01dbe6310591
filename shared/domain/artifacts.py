"""Artifacts: substantial output as a named, versioned thing (docs/artifacts.md).

An artifact's content is the located block model extraction produces, each block with an id that stays
with it across versions (so an edit proposal can name the block it changes), plus the citations its text
refers to as `[n]`. Content is stored by reference (a content-addressed derived object); the version row
holds the reference, its hash and the provenance the server recorded. Pure rules, no I/O.
"""

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from shared.domain.document import Block, BlockKind, Table
from shared.domain.errors import Conflict, InvalidRequest, PayloadTooLarge
from shared.domain.search import Citation

MAX_ARTIFACT_NAME_CHARS = 200
BLOCK_ID = re.compile(r"^b[1-9][0-9]{0,6}$")
# A citation marker in text: "[3]". Markdown's own link syntax ("[3](url)", "[3][ref]") is not a marker.
CITATION_MARKER = re.compile(r"\[(\d{1,4})\](?![(\[])")


class ArtifactLimits(BaseModel):
    """What one artifact version may hold: refused beyond, naming the limit (never cut)."""

    model_config = ConfigDict(frozen=True)

    max_blocks: int = 50_000
    max_text_bytes: int = 8 * 1024 * 1024  # text and table cells, as UTF-8
    max_table_rows: int = 20_000
    max_table_columns: int = 256
    max_citations: int = 1_000
    max_sources: int = 200
    max_markdown_bytes: int = 8 * 1024 * 1024
    # The stored JSON (locations and ids included): the bound on what is read back.
    max_content_bytes: int = 64 * 1024 * 1024
    # Reading a caller's Markdown happens on the request path, in a child bounded by these.
    parse_timeout_seconds: float = 10.0
    parse_memory_bytes: int = 512 * 1024 * 1024


class ArtifactBlock(Block):
    """A block of an artifact: its id is the artifact's, kept as the block moves between versions."""

    id: str

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not BLOCK_ID.fullmatch(value):
            raise ValueError(f"block id {value!r} is not of the form b1, b2, ...")
        return value


class ArtifactCitation(BaseModel):
    """Note `number` of the content: the stored chunk it cites, as a snapshot (it stays evidence after
    the cited file is deleted)."""

    model_config = ConfigDict(frozen=True)

    number: int = Field(ge=1)
    chunk_id: str
    citation: Citation


class ArtifactContent(BaseModel):
    model_config = ConfigDict(frozen=True)

    blocks: tuple[ArtifactBlock, ...]
    citations: tuple[ArtifactCitation, ...] = ()

    def canonical_json(self) -> bytes:
        """The bytes stored and hashed: the same content always gives the same bytes."""
        data = self.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
        return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def content_hash(canonical: bytes) -> str:
    return hashlib.sha256(canonical).hexdigest()


def artifact_content_key(tenant_id: str, artifact_id: UUID, digest: str) -> str:
    """Content-addressed: the same content is one object however many versions (a restore) share it."""
    return f"derived/tenants/{tenant_id}/artifacts/{artifact_id}/content/{digest}.json"


_CONTENT_KEY = re.compile(
    r"^derived/tenants/(?P<tenant>[A-Za-z0-9][A-Za-z0-9_.-]{0,63})/artifacts/(?P<artifact>[0-9a-f-]{36})"
    r"/content/[0-9a-f]{64}\.json$"
)


def parse_artifact_content_key(key: str) -> tuple[str, UUID] | None:
    """The tenant and artifact a content key claims, or None for any other key."""
    match = _CONTENT_KEY.fullmatch(key)
    if match is None:
        return None
    try:
        return match["tenant"], UUID(match["artifact"])
    except ValueError:
        return None


class SourceRef(BaseModel):
    """An exact file version the content was derived from, the chunks of it that are cited, and the file's
    metadata (issue 33) when the version or export was made: a snapshot, like a citation's, that stays evidence
    after the metadata changes (`metadata_revision` None: recorded before metadata existed)."""

    model_config = ConfigDict(frozen=True)

    file_id: UUID
    version_id: UUID
    chunk_ids: tuple[str, ...] = ()
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    metadata_revision: int | None = None


class Provenance(BaseModel):
    """Recorded by the server on every version: the producing route or tool, its normalised inputs (so two
    versions' inputs compare), and the exact sources."""

    model_config = ConfigDict(frozen=True)

    producer: str = Field(min_length=1, max_length=200)
    inputs: dict[str, JsonValue]
    sources: tuple[SourceRef, ...] = ()
    restored_from: int | None = None
    proposal_id: UUID | None = None


def merged_sources(sources: Iterable[SourceRef]) -> tuple[SourceRef, ...]:
    """One entry per file version, its chunk ids united, in a stable order. Metadata is the file's, not a
    version's: every version of a file carries the newest snapshot read of it (two reads in one request, the
    citations' and the sources', may straddle a patch)."""
    chunks: dict[tuple[UUID, UUID], set[str]] = {}
    newest: dict[UUID, SourceRef] = {}
    for source in sources:
        chunks.setdefault((source.file_id, source.version_id), set()).update(source.chunk_ids)
        held = newest.get(source.file_id)
        if held is None or _revision(source) > _revision(held):
            newest[source.file_id] = source
    return tuple(
        SourceRef(
            file_id=file_id,
            version_id=version_id,
            chunk_ids=tuple(sorted(ids)),
            metadata=newest[file_id].metadata,
            metadata_revision=newest[file_id].metadata_revision,
        )
        for (file_id, version_id), ids in sorted(chunks.items(), key=lambda item: (str(item[0][0]), str(item[0][1])))
    )


def _revision(source: SourceRef) -> int:
    return -1 if source.metadata_revision is None else source.metadata_revision


class ArtifactRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    tenant_id: str
    artifact_id: UUID
    collection_id: str
    name: str
    latest_version: int
    created_by: str
    created_at: datetime
    updated_at: datetime


class ArtifactVersionRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    artifact_id: UUID
    version: int
    content_key: str
    content_hash: str
    content_bytes: int
    block_count: int
    provenance: Provenance
    created_by: str
    created_at: datetime


class NewArtifactVersion(BaseModel):
    """What a writer hands the store; the version number is the store's to assign (expected + 1)."""

    model_config = ConfigDict(frozen=True)

    content_key: str
    content_hash: str
    content_bytes: int
    block_count: int
    provenance: Provenance
    created_by: str


class VersionConflict(Conflict):
    """Another writer made a version since the caller read `expected`: nothing was written."""

    code = "version_conflict"

    def __init__(self, latest_version: int, expected: int) -> None:
        super().__init__(
            f"the artifact is at version {latest_version}, not {expected}: read version {latest_version}"
            " and make your change against it"
        )
        self.latest_version = latest_version


def check_name(raw: str) -> str:
    name = " ".join(raw.split())
    if not name:
        raise InvalidRequest("name is empty")
    if len(name) > MAX_ARTIFACT_NAME_CHARS:
        raise InvalidRequest(f"name is {len(name)} characters; the limit is {MAX_ARTIFACT_NAME_CHARS}")
    return name


def _text_bytes(block: Block) -> int:
    cells = sum(len(cell.encode()) for row in block.table.rows for cell in row) if block.table else 0
    return len(block.text.encode()) + cells


def _clean(block: Block) -> Block:
    """What an artifact keeps of a block: its kind and content. A caller's location, image reference or
    heading path means nothing here (a storage key is never taken from a caller); paths are recomputed."""
    keep: dict[str, Any] = {"kind": block.kind, "text": block.text}
    if block.kind is BlockKind.HEADING:
        keep["level"] = min(max(block.level or 1, 1), 6)
    if block.kind is BlockKind.LIST_ITEM:
        keep["depth"] = min(max(block.depth or 0, 0), 8)
        keep["ordered"] = bool(block.ordered)
    if block.kind is BlockKind.TABLE:
        table = block.table or Table(rows=())
        keep["table"] = Table(rows=table.rows, header_rows=min(max(table.header_rows, 0), len(table.rows)))
    return Block.model_validate(keep)


def build_content(
    blocks: Sequence[Block],
    citations: Sequence[ArtifactCitation],
    limits: ArtifactLimits,
    *,
    ids: Sequence[str] | None = None,
) -> ArtifactContent:
    """Blocks (and their citations) as artifact content, within `limits`, with heading paths recomputed.

    `ids` keeps blocks' existing ids (an edit); new blocks are numbered after the highest id in use."""
    if len(blocks) > limits.max_blocks:
        raise PayloadTooLarge(f"the content has {len(blocks)} blocks; the limit is {limits.max_blocks}")
    if len(citations) > limits.max_citations:
        raise PayloadTooLarge(f"the content has {len(citations)} citations; the limit is {limits.max_citations}")
    spent = 0
    for position, block in enumerate(blocks):
        if "\x00" in block.text:
            raise InvalidRequest(f"block {position + 1} contains a NUL character (U+0000), which is not text")
        if block.kind is BlockKind.TABLE:
            _check_table(block.table, position, limits)
        spent += _text_bytes(block)
        if spent > limits.max_text_bytes:
            raise PayloadTooLarge(
                f"the content's text passes {limits.max_text_bytes} bytes (the limit) at block {position + 1}"
            )
    given = list(ids or [])
    next_number = max((int(block_id[1:]) for block_id in given if block_id), default=0) + 1
    headings: list[tuple[int, str]] = []
    built: list[ArtifactBlock] = []
    for position, raw in enumerate(blocks):
        block = _clean(raw)
        block_id = given[position] if position < len(given) and given[position] else ""
        if not block_id:
            block_id, next_number = f"b{next_number}", next_number + 1
        if block.kind is BlockKind.HEADING and block.level is not None:
            headings = [(level, text) for level, text in headings if level < block.level]
            path = tuple(text for _, text in headings)
            headings.append((block.level, " ".join(block.text.split())))
        else:
            path = tuple(text for _, text in headings)
        built.append(ArtifactBlock.model_validate({**block.model_dump(), "heading_path": path, "id": block_id}))
    if len({block.id for block in built}) != len(built):
        raise InvalidRequest("two blocks have the same id")
    content = ArtifactContent(blocks=tuple(built), citations=tuple(citations))
    check_markers(content)
    return content


def _check_table(table: Table | None, position: int, limits: ArtifactLimits) -> None:
    if table is None or not table.rows:
        raise InvalidRequest(f"block {position + 1} is a table with no rows")
    if len(table.rows) > limits.max_table_rows:
        raise PayloadTooLarge(
            f"the table in block {position + 1} has {len(table.rows)} rows; the limit is {limits.max_table_rows}"
        )
    widest = max(len(row) for row in table.rows)
    if widest > limits.max_table_columns:
        raise PayloadTooLarge(
            f"the table in block {position + 1} has {widest} columns; the limit is {limits.max_table_columns}"
        )


def markers(block: Block) -> set[int]:
    """The citation numbers a block's text (or cells) refers to."""
    texts = [block.text] + ([cell for row in block.table.rows for cell in row] if block.table else [])
    return {int(found) for text in texts for found in CITATION_MARKER.findall(text)}


def check_markers(content: ArtifactContent) -> None:
    """Every `[n]` in the text of content that carries citations names one of them (without citations,
    "[2]" is only text)."""
    numbers = {citation.number for citation in content.citations}
    if not numbers:
        return
    for block in content.blocks:
        missing = sorted(number for number in markers(block) if number not in numbers and number >= 1)
        if missing:
            raise InvalidRequest(
                f"block {block.id} cites [{missing[0]}], but the content has {len(numbers)} citation(s):"
                " give each [n] a citation (citations: [{chunkId}], numbered from 1 in order)"
            )
