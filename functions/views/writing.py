"""Request and response bodies of edit proposals and file replacements (camelCase on the wire)."""

import json
from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import Field

from functions.views.artifacts import ArtifactBlockView, ArtifactDetailView, ContentBody
from functions.views.base import ApiModel
from shared.domain.artifacts import ArtifactBlock
from shared.domain.proposals import MAX_OPERATIONS, ReplacementRecord, ReplacementState
from shared.services.document_writing import ProposalOutcome


class ProposalRequest(ApiModel):
    """Operations on the blocks of `baseVersion`, applied in order: insert ({after, blocks | markdown}),
    replace ({blockId, blocks | markdown}), delete ({blockId}), move ({blockId, after}), set_cell ({blockId, row,
    column, text}), rename_heading ({blockId, text}). `dryRun` returns the changes without writing."""

    base_version: int = Field(ge=1)
    operations: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_OPERATIONS)
    dry_run: bool = False


class ChangeView(ApiModel):
    """What one operation did: an insert, replace or delete with its block; a move with its positions; a cell or
    heading edit with only the text before and after."""

    operation: int
    op: str
    block_id: str
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    position: int | None = None
    moved_from: int | None = None
    row: int | None = None
    column: int | None = None
    text_before: str | None = None
    text_after: str | None = None


# A changed block is echoed whole up to this size; a larger one (a big table) as its id, kind and size: read the
# version for it. The response stays far inside Lambda's 6 MB.
MAX_ECHOED_BLOCK_BYTES = 16 * 1024


def _echo(block: ArtifactBlock | None) -> dict[str, Any] | None:
    if block is None:
        return None
    # The heading path is the saved version's to say (it is recomputed there), not the edit's.
    shown: dict[str, Any] = ArtifactBlockView.of(block).model_dump(mode="json", by_alias=True)
    for name in ("headingPath", "heading_path"):
        shown.pop(name, None)
    size = len(json.dumps(shown))
    if size <= MAX_ECHOED_BLOCK_BYTES:
        return shown
    return {"id": block.id, "kind": block.kind.value, "bytes": size, "truncated": True}


class ProposalView(ApiModel):
    artifact_id: UUID
    proposal_id: UUID | None
    base_version: int
    dry_run: bool
    # The version the proposal made (None for a dry run), with its content's first window.
    version: int | None
    block_count: int
    changes: list[ChangeView]
    artifact: ArtifactDetailView | None

    @classmethod
    def of(cls, outcome: ProposalOutcome) -> "ProposalView":
        return cls(
            artifact_id=outcome.artifact_id,
            proposal_id=outcome.proposal_id,
            base_version=outcome.base_version,
            dry_run=outcome.dry_run,
            version=outcome.applied.version.version if outcome.applied else None,
            block_count=outcome.block_count,
            changes=[
                ChangeView(
                    **change.model_dump(exclude={"before", "after"}),
                    before=_echo(change.before),
                    after=_echo(change.after),
                )
                for change in outcome.changes
            ],
            artifact=ArtifactDetailView.detail(outcome.applied) if outcome.applied else None,
        )


class ReplacementRequest(ContentBody):
    version_id: UUID | None = None


class ReplacementView(ApiModel):
    """A replacement waiting for (or past) its decision. Only `approved` changed the file: its `newVersionId`
    is the file's next version, extracted and indexed like any upload."""

    replacement_id: UUID
    file_id: UUID
    base_version_id: UUID
    state: ReplacementState
    filename: str
    media_type: str
    byte_size: int
    content_hash: str
    new_version_id: UUID | None
    created_by: str
    decided_by: str | None
    created_at: datetime
    decided_at: datetime | None
    expires_at: datetime

    @classmethod
    def of(cls, record: ReplacementRecord) -> "ReplacementView":
        return cls.model_validate(record.model_dump(exclude={"tenant_id", "collection_id", "staged_key"}))
