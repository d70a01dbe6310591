"""In-memory adapters for the second wave's stores (artifacts, exports, replacements, answers), checked against
the contract suites the PostgreSQL adapters pass too (tests/contracts/artifacts.py, exports.py, replacements.py,
answers.py). Each keeps what shared/ports/ promises and, where it must choose, does what the adapter's SQL does
(shared/adapters/postgres/): every row is keyed by tenant, and a call for one tenant never sees another's."""

import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID, uuid4

from shared.domain.answers import AnswerFeedback, StoredAnswer
from shared.domain.artifacts import ArtifactRecord, ArtifactVersionRecord, NewArtifactVersion, VersionConflict
from shared.domain.errors import InvalidRequest, NotFound
from shared.domain.exports import (
    MAX_GENERATIONS,
    ExportKind,
    ExportRecord,
    ExportState,
    NewExport,
    RenderedFile,
    RenderJob,
)
from shared.domain.knowledge import IndexedChunk
from shared.domain.proposals import AppliedProposal, NewReplacement, ReplacementRecord, ReplacementState
from shared.ports import AnswerStore, ArtifactStore, ExportStore, FileCatalog, RenderQueue, ReplacementStore
from tests.fakes import Clock

# The adapter's index version: 16 hex digits of a SHA-256 of each collection's generation.
_INDEX_VERSION_LENGTH = 16


class FakeArtifactStore(ArtifactStore):
    """Artifacts and their append-only versions; `latest_version` moves by compare-and-set, as the UPDATE does.
    `proposals` keeps what add_version stored beside a version (the port has no reader for it)."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or Clock()
        self._lock = threading.Lock()
        self.artifacts: dict[tuple[str, UUID], ArtifactRecord] = {}
        self.versions_of: dict[tuple[str, UUID], list[ArtifactVersionRecord]] = {}
        self.proposals: dict[tuple[str, UUID], tuple[UUID, AppliedProposal, int]] = {}

    def create(self, artifact: ArtifactRecord, first: NewArtifactVersion) -> ArtifactVersionRecord:
        key = (artifact.tenant_id, artifact.artifact_id)
        with self._lock:
            if key in self.artifacts:  # the primary key
                raise ValueError(f"artifact {artifact.artifact_id} already exists")
            now = self._clock()
            # As the INSERT: version 1, the store's own clock, whatever the record said.
            self.artifacts[key] = artifact.model_copy(
                update={"latest_version": 1, "created_at": now, "updated_at": now}
            )
            version = self._version(artifact.artifact_id, 1, first, now)
            self.versions_of[key] = [version]
            return version

    def get(self, tenant_id: str, artifact_id: UUID) -> ArtifactRecord | None:
        return self.artifacts.get((tenant_id, artifact_id))

    def add_version(
        self,
        tenant_id: str,
        artifact_id: UUID,
        *,
        expected_latest: int,
        new: NewArtifactVersion,
        proposal: AppliedProposal | None = None,
    ) -> ArtifactVersionRecord:
        key = (tenant_id, artifact_id)
        with self._lock:
            current = self.artifacts.get(key)
            if current is None:
                raise NotFound("not found")
            if current.latest_version != expected_latest:
                raise VersionConflict(current.latest_version, expected_latest)
            now = self._clock()
            number = expected_latest + 1
            self.artifacts[key] = current.model_copy(update={"latest_version": number, "updated_at": now})
            version = self._version(artifact_id, number, new, now)
            self.versions_of[key].append(version)
            if proposal is not None:
                self.proposals[tenant_id, proposal.proposal_id] = (artifact_id, proposal, number)
            return version

    def version(self, tenant_id: str, artifact_id: UUID, version: int) -> ArtifactVersionRecord | None:
        return next((v for v in self.versions_of.get((tenant_id, artifact_id), []) if v.version == version), None)

    def refers_to(self, tenant_id: str, artifact_id: UUID, content_key: str) -> bool:
        return any(v.content_key == content_key for v in self.versions_of.get((tenant_id, artifact_id), []))

    def versions(
        self, tenant_id: str, artifact_id: UUID, *, after: int | None, limit: int
    ) -> list[ArtifactVersionRecord]:
        return [v for v in self.versions_of.get((tenant_id, artifact_id), []) if v.version > (after or 0)][:limit]

    def list(
        self, tenant_id: str, collections: frozenset[str], *, collection_id: str | None, limit: int, after: UUID | None
    ) -> tuple[list[ArtifactRecord], bool]:
        wanted = collections if collection_id is None else collections & {collection_id}
        rows = sorted(
            (a for (tenant, _), a in self.artifacts.items() if tenant == tenant_id and a.collection_id in wanted),
            key=lambda a: (a.created_at, a.artifact_id),
            reverse=True,
        )
        if after is not None:
            # The keyset is the named artifact's place; one that is not the tenant's has none, and nothing follows.
            mark = self.artifacts.get((tenant_id, after))
            rows = [] if mark is None else [a for a in rows if (a.created_at, a.artifact_id) < (mark.created_at, after)]
        return rows[:limit], len(rows) > limit

    @staticmethod
    def _version(artifact_id: UUID, number: int, new: NewArtifactVersion, now: datetime) -> ArtifactVersionRecord:
        return ArtifactVersionRecord(artifact_id=artifact_id, version=number, created_at=now, **new.model_dump())


def _same_source(record: ExportRecord, new: NewExport) -> bool:
    """The adapter's unique keys: (artifact, version, format), (source version, format), (operation hash). A
    NULL never equals another, so a key with a missing part names no other export."""
    same_artifact = (record.artifact_id, record.version, record.format) == (new.artifact_id, new.version, new.format)
    if new.artifact_id is not None and new.version is not None and same_artifact:
        return True
    same_version = (record.source_version_id, record.format) == (new.source_version_id, new.format)
    if new.source_version_id is not None and same_version:
        return True
    return new.operation_hash is not None and record.operation_hash == new.operation_hash


def _matches_kind(record: ExportRecord, new: NewExport) -> bool:
    """The adapter's second SELECT: the existing export by the claim's own kind of key."""
    if new.kind is ExportKind.ARTIFACT:
        return (record.artifact_id, record.version, record.format) == (new.artifact_id, new.version, new.format)
    if new.kind is ExportKind.CONVERSION:
        return (record.source_version_id, record.format) == (new.source_version_id, new.format)
    return record.operation_hash == new.operation_hash


class FakeExportStore(ExportStore):
    """Export records; every transition is a compare-and-set on state (and generation), as the UPDATEs are. With
    `artifacts`, an export of an artifact the store does not hold is refused, as the foreign key refuses it."""

    def __init__(self, clock: Clock | None = None, *, artifacts: ArtifactStore | None = None) -> None:
        self._clock = clock or Clock()
        self._artifacts = artifacts
        self._lock = threading.Lock()
        self.records: dict[tuple[str, UUID], ExportRecord] = {}

    def claim(self, new: NewExport) -> tuple[ExportRecord, bool]:
        artifacts, artifact_id = self._artifacts, new.artifact_id
        if artifacts is not None and artifact_id is not None and artifacts.get(new.tenant_id, artifact_id) is None:
            raise ValueError(f"artifact {artifact_id} does not exist (the foreign key of an export)")
        with self._lock:
            mine = [r for (tenant, _), r in self.records.items() if tenant == new.tenant_id]
            if (new.tenant_id, new.export_id) not in self.records and not any(_same_source(r, new) for r in mine):
                now = self._clock()
                record = ExportRecord(**new.model_dump(), state=ExportState.PENDING, created_at=now, updated_at=now)
                self.records[new.tenant_id, new.export_id] = record
                return record, True
            existing = next((r for r in mine if _matches_kind(r, new)), None)
        if existing is None:
            raise RuntimeError("an export id collided with another export")
        return existing, False

    def get(self, tenant_id: str, export_id: UUID) -> ExportRecord | None:
        return self.records.get((tenant_id, export_id))

    def begin_attempt(self, tenant_id: str, export_id: UUID) -> ExportRecord | None:
        return self._change(
            tenant_id,
            export_id,
            lambda r: r.state is ExportState.PENDING,
            lambda r: {"render_attempts": r.render_attempts + 1},
        )

    def mark_rendered(
        self, tenant_id: str, export_id: UUID, *, generation: int, file_id: UUID, rendered: RenderedFile
    ) -> bool:
        changed = self._change(
            tenant_id,
            export_id,
            lambda r: r.state is ExportState.PENDING and r.generation == generation,
            lambda r: {
                "state": ExportState.RENDERED,
                "file_id": file_id,
                "unsupported_characters": tuple(rendered.unsupported_characters),
                "page_count": rendered.page_count,
                "byte_size": len(rendered.content),
                "rendered_at": self._clock(),
            },
        )
        return changed is not None

    def mark_failed(
        self, tenant_id: str, export_id: UUID, *, generation: int, reason: str, retryable: bool = False
    ) -> bool:
        changed = self._change(
            tenant_id,
            export_id,
            lambda r: r.state is ExportState.PENDING and r.generation == generation,
            lambda r: {"state": ExportState.FAILED, "failure_reason": reason[:2000], "failure_retryable": retryable},
        )
        return changed is not None

    def reopen(self, tenant_id: str, export_id: UUID, *, generation: int) -> ExportRecord | None:
        return self._change(
            tenant_id,
            export_id,
            lambda r: (
                r.generation == generation
                and r.generation + 1 < MAX_GENERATIONS
                and (r.state is ExportState.RENDERED or (r.state is ExportState.FAILED and r.failure_retryable))
            ),
            lambda r: {
                "state": ExportState.PENDING,
                "file_id": None,
                "failure_reason": None,
                "failure_retryable": False,
                "unsupported_characters": (),
                "page_count": None,
                "byte_size": None,
                "rendered_at": None,
                "render_attempts": 0,
                "generation": r.generation + 1,
            },
        )

    def stalled(self, tenant_id: str, *, updated_before: datetime, limit: int = 100) -> list[ExportRecord]:
        rows = [
            r
            for (tenant, _), r in self.records.items()
            if tenant == tenant_id and r.state is ExportState.PENDING and r.updated_at < updated_before
        ]
        return sorted(rows, key=lambda r: r.updated_at)[:limit]

    def _change(
        self,
        tenant_id: str,
        export_id: UUID,
        when: Callable[[ExportRecord], bool],
        update: Callable[[ExportRecord], dict[str, object]],
    ) -> ExportRecord | None:
        with self._lock:
            record = self.records.get((tenant_id, export_id))
            if record is None or not when(record):
                return None
            changed = record.model_copy(update={**update(record), "updated_at": self._clock()})
            self.records[tenant_id, export_id] = changed
            return changed


class FakeReplacementStore(ReplacementStore):
    """Replacements awaiting a decision; a decision is recorded only from `pending`, so of two exactly one wins.
    With `files`, a replacement of a file the catalog does not hold is refused, as the foreign key refuses it."""

    def __init__(self, clock: Clock | None = None, *, files: FileCatalog | None = None) -> None:
        self._clock = clock or Clock()
        self._files = files
        self._lock = threading.Lock()
        self.records: dict[tuple[str, UUID], ReplacementRecord] = {}

    def create(self, new: NewReplacement) -> ReplacementRecord:
        with self._lock:
            if (new.tenant_id, new.replacement_id) in self.records:
                raise ValueError(f"replacement {new.replacement_id} already exists")
            if self._files is not None and self._files.get_file(new.tenant_id, new.file_id, include_gone=True) is None:
                raise ValueError(f"file {new.file_id} does not exist (the foreign key of a replacement)")
            record = ReplacementRecord(**new.model_dump(), state=ReplacementState.PENDING, created_at=self._clock())
            self.records[new.tenant_id, new.replacement_id] = record
            return record

    def get(self, tenant_id: str, replacement_id: UUID) -> ReplacementRecord | None:
        return self.records.get((tenant_id, replacement_id))

    def decide(
        self, tenant_id: str, replacement_id: UUID, *, state: ReplacementState, decided_by: str | None
    ) -> ReplacementRecord | None:
        with self._lock:
            found = self.records.get((tenant_id, replacement_id))
            if found is None or found.state is not ReplacementState.PENDING:
                return None
            decided = found.model_copy(
                update={
                    "state": state,
                    # As the adapter: a decider only for a person's decision, a version only for an approval.
                    "decided_by": decided_by
                    if state in (ReplacementState.APPROVED, ReplacementState.REJECTED)
                    else None,
                    "new_version_id": found.planned_version_id if state is ReplacementState.APPROVED else None,
                    "decided_at": self._clock(),
                }
            )
            self.records[tenant_id, replacement_id] = decided
            return decided


@dataclass
class _Feedback:
    feedback_id: UUID
    tenant_id: str
    answer_id: str
    subject: str
    feedback: AnswerFeedback


class FakeAnswerStore(AnswerStore):
    """Answers appended and read back as saved. The index version is derived as the adapter derives it, from a
    generation per collection: `bump` raises one (as the chunk triggers do), and with `knowledge` given, a
    collection whose chunks differ from the last time a version was read is bumped when it is next read (two
    changes between reads that cancel out bump nothing: the fake cannot see them)."""

    def __init__(self, knowledge: "ChunksOf | None" = None) -> None:
        self._lock = threading.Lock()
        self._knowledge = knowledge
        self.answers: list[StoredAnswer] = []
        self.feedback: list[_Feedback] = []
        self.generations: dict[tuple[str, str], int] = {}
        self._seen: dict[tuple[str, str], str] = {}

    def bump(self, tenant_id: str, collection_id: str) -> None:
        with self._lock:
            self.generations[tenant_id, collection_id] = self.generations.get((tenant_id, collection_id), 0) + 1

    def index_version(self, tenant_id: str, collections: frozenset[str]) -> str:
        ordered = sorted(collections)
        if self._knowledge is not None:
            for collection in ordered:
                fingerprint = _fingerprint(self._knowledge(tenant_id, collection))
                if self._seen.setdefault((tenant_id, collection), fingerprint) != fingerprint:
                    self._seen[tenant_id, collection] = fingerprint
                    self.bump(tenant_id, collection)
        state = "\n".join(f"{c}={self.generations.get((tenant_id, c), 0)}" for c in ordered)
        return hashlib.sha256(state.encode()).hexdigest()[:_INDEX_VERSION_LENGTH]

    def save(self, stored: StoredAnswer) -> None:
        answer = stored.answer
        if _answer_uuid(answer.answer_id) is None or str(_answer_uuid(answer.answer_id)) != answer.answer_id:
            raise ValueError(f"an answer id is a UUID in canonical form, not {answer.answer_id!r}")
        if answer.cached:
            raise ValueError("a cached answer is already stored: save the answer computed, not the one served")
        if answer.created_at.tzinfo is None:
            raise ValueError("an answer's created_at must carry its time zone")
        numbers = [citation.number for citation in answer.citations]
        unknown = {n for claim in answer.claims for n in claim.citations} - set(numbers)
        if unknown or len(set(numbers)) != len(numbers):  # the adapter's foreign and primary keys
            raise ValueError(f"the claims cite numbers the answer does not have: {sorted(unknown)}")
        with self._lock:
            if any(s.tenant_id == stored.tenant_id and s.answer.answer_id == answer.answer_id for s in self.answers):
                raise ValueError(f"answer {answer.answer_id} already exists")
            self.answers.append(stored)

    def cached(self, tenant_id: str, cache_key: str, *, not_before: datetime) -> StoredAnswer | None:
        found = [
            s
            for s in self.answers
            if s.tenant_id == tenant_id and s.cache_key == cache_key and s.answer.created_at >= not_before
        ]
        return max(found, key=lambda s: (s.answer.created_at, UUID(s.answer.answer_id)), default=None)

    def get(self, tenant_id: str, subject: str, answer_id: str) -> StoredAnswer | None:
        key = _answer_uuid(answer_id)
        if key is None:
            return None
        return next(
            (
                s
                for s in self.answers
                if s.tenant_id == tenant_id and s.subject == subject and UUID(s.answer.answer_id) == key
            ),
            None,
        )

    def add_feedback(self, tenant_id: str, subject: str, answer_id: str, feedback: AnswerFeedback) -> str | None:
        own = self.get(tenant_id, subject, answer_id)
        if own is None:
            return None
        numbers = sorted(citation.number for citation in own.answer.citations)
        if feedback.citation is not None and feedback.citation not in numbers:
            raise InvalidRequest(
                f"citation {feedback.citation} is not one of this answer's citations"
                f" ({', '.join(map(str, numbers)) or 'it has none'})"
            )
        recorded = _Feedback(uuid4(), tenant_id, own.answer.answer_id, subject, feedback)
        with self._lock:
            self.feedback.append(recorded)
        return str(recorded.feedback_id)


# What FakeAnswerStore reads to see a collection's chunks change: (tenant, collection) → its chunks.
ChunksOf = Callable[[str, str], Iterable[IndexedChunk]]


def _fingerprint(chunks: Iterable[IndexedChunk]) -> str:
    digest = hashlib.sha256()
    for line in sorted(chunk.model_dump_json() for chunk in chunks):
        digest.update(line.encode())
    return digest.hexdigest()


def _answer_uuid(answer_id: str) -> UUID | None:
    try:
        return UUID(answer_id)
    except ValueError:
        return None


@dataclass
class RecordingRenderQueue(RenderQueue):
    """Records every job handed to the worker tier; `then` runs it (the local worker's part) after it is recorded,
    and `unreachable` makes submits fail as an outage would."""

    then: Callable[[RenderJob], object] | None = None
    unreachable: bool = False
    submitted: list[RenderJob] = field(default_factory=list)

    def submit(self, job: RenderJob) -> None:
        if self.unreachable:
            raise ConnectionError("the render worker is unreachable")
        self.submitted.append(job)
        if self.then is not None:
            self.then(job)

    def drain(self) -> Iterator[RenderJob]:
        """The jobs submitted so far, each once (a test runs them as the worker would)."""
        while self.submitted:
            yield self.submitted.pop(0)


def chunks_of(knowledge_chunks: dict[tuple[str, str], IndexedChunk]) -> ChunksOf:
    """FakeAnswerStore's view of a FakeKnowledgeStore's chunks (`FakeKnowledgeStore.chunks`)."""

    def read(tenant_id: str, collection_id: str) -> Sequence[IndexedChunk]:
        return [c for (t, _), c in knowledge_chunks.items() if t == tenant_id and c.collection_id == collection_id]

    return read
