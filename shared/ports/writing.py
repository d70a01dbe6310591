"""What Quire writes for people: answers, artifacts, exports (and the queue that renders them) and
replacements awaiting a decision.

The docstrings are the contracts adapters keep (docs/architecture.md, "Ports and their adapters").
"""

from datetime import datetime
from typing import Protocol
from uuid import UUID

from shared.domain.answers import AnswerFeedback, StoredAnswer
from shared.domain.artifacts import ArtifactRecord, ArtifactVersionRecord, NewArtifactVersion
from shared.domain.exports import ExportRecord, NewExport, RenderedFile, RenderJob
from shared.domain.proposals import AppliedProposal, NewReplacement, ReplacementRecord, ReplacementState


class AnswerStore(Protocol):
    """Questions, answers, claims, citations and feedback, per tenant, under forced row-level security."""

    def index_version(self, tenant_id: str, collections: frozenset[str]) -> str:
        """A short string that changes whenever anything searchable in `collections` changes (a version indexed,
        re-indexed or deleted, a file renamed or moved): part of the answer cache key, so a cached answer is
        never served after a relevant document changed."""
        ...

    def save(self, stored: StoredAnswer) -> None: ...

    def cached(self, tenant_id: str, cache_key: str, *, not_before: datetime) -> StoredAnswer | None:
        """The newest answer saved under `cache_key` at or after `not_before`, if any."""
        ...

    def get(self, tenant_id: str, subject: str, answer_id: str) -> StoredAnswer | None:
        """The answer `subject` asked (None for anyone else's, or an unknown id: the same not-found)."""
        ...

    def add_feedback(self, tenant_id: str, subject: str, answer_id: str, feedback: AnswerFeedback) -> str | None:
        """Record feedback on the caller's own answer; its id, or None when the answer is not theirs or unknown."""
        ...


class ArtifactStore(Protocol):
    """Artifacts and their versions in PostgreSQL, tenant-scoped and RLS-forced. Content is by reference:
    the caller writes the content object before it calls any of these."""

    def create(self, artifact: ArtifactRecord, first: NewArtifactVersion) -> ArtifactVersionRecord:
        """The artifact at version 1, and that version, in one transaction."""
        ...

    def get(self, tenant_id: str, artifact_id: UUID) -> ArtifactRecord | None: ...

    def add_version(
        self,
        tenant_id: str,
        artifact_id: UUID,
        *,
        expected_latest: int,
        new: NewArtifactVersion,
        proposal: AppliedProposal | None = None,
    ) -> ArtifactVersionRecord:
        """Version `expected_latest + 1`, only if the artifact is still at `expected_latest` (a
        compare-and-set); raises VersionConflict naming the current version otherwise, NotFound when the
        artifact is gone. The proposal that made it, if any, is stored in the same transaction."""
        ...

    def version(self, tenant_id: str, artifact_id: UUID, version: int) -> ArtifactVersionRecord | None: ...

    def refers_to(self, tenant_id: str, artifact_id: UUID, content_key: str) -> bool:
        """Whether any version of the artifact refers to `content_key` (reconciliation's question)."""
        ...

    def versions(
        self, tenant_id: str, artifact_id: UUID, *, after: int | None, limit: int
    ) -> list[ArtifactVersionRecord]:
        """Versions in order, from the one after `after`."""
        ...

    def list(
        self, tenant_id: str, collections: frozenset[str], *, collection_id: str | None, limit: int, after: UUID | None
    ) -> tuple[list[ArtifactRecord], bool]:
        """Artifacts of `collections`, newest first; the page and whether more follow."""
        ...


class ExportStore(Protocol):
    """Export records in PostgreSQL, tenant-scoped and RLS-forced. Transitions are compare-and-set."""

    def claim(self, new: NewExport) -> tuple[ExportRecord, bool]:
        """The export of `new`'s source and format: made now (True), or the one that already exists (False),
        also when another request made it at the same moment."""
        ...

    def get(self, tenant_id: str, export_id: UUID) -> ExportRecord | None: ...

    def begin_attempt(self, tenant_id: str, export_id: UUID) -> ExportRecord | None:
        """Count a render attempt of a pending export; None when it is no longer pending."""
        ...

    def mark_rendered(
        self, tenant_id: str, export_id: UUID, *, generation: int, file_id: UUID, rendered: RenderedFile
    ) -> bool:
        """pending → rendered, naming the file that holds the bytes (written before this is called); only for
        the generation rendered (a late worker of an earlier one changes nothing)."""
        ...

    def mark_failed(
        self, tenant_id: str, export_id: UUID, *, generation: int, reason: str, retryable: bool = False
    ) -> bool:
        """pending → failed (that generation only), with the sentence the person who asked will read
        (`retryable`: asking again may succeed)."""
        ...

    def reopen(self, tenant_id: str, export_id: UUID, *, generation: int) -> ExportRecord | None:
        """rendered or failed-retryable, at `generation` → pending as the next generation; None when it moved on
        meanwhile (another request reopened it) or has been rendered again too many times."""
        ...

    def stalled(self, tenant_id: str, *, updated_before: datetime, limit: int = 100) -> list[ExportRecord]:
        """Pending exports nobody has touched since `updated_before`, oldest first."""
        ...


class ReplacementStore(Protocol):
    """Replacements of uploaded files awaiting a decision, tenant-scoped and RLS-forced; decisions are
    compare-and-set from `pending`, so of two decisions exactly one is recorded."""

    def create(self, new: NewReplacement) -> ReplacementRecord: ...

    def get(self, tenant_id: str, replacement_id: UUID) -> ReplacementRecord | None: ...

    def decide(
        self, tenant_id: str, replacement_id: UUID, *, state: ReplacementState, decided_by: str | None
    ) -> ReplacementRecord | None:
        """pending → `state` (approved: with its planned version id); None when it was no longer pending."""
        ...


class RenderQueue(Protocol):
    """Hands a render to the worker tier (its own Lambda function on AWS; a background thread locally)."""

    def submit(self, job: RenderJob) -> None:
        """At least once: the worker takes a job whose export is no longer pending as done."""
        ...
