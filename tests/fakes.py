"""In-memory adapters for the ports the use-case services take: cheap to build, fast. The file metadata store
and the content store are checked against the same contract suites as the real adapters (tests/contracts/,
run by tests/unit/test_fake_contracts.py here and by tests/integration/test_adapter_contracts.py against
PostgreSQL and moto's S3); the knowledge store, the usage ledger, the workflow and the embedder have no
contract suite yet, and follow their adapters' SQL by reading.

They keep the ports' promises as the docstrings in shared/ports/ state them (compare-and-set transitions,
one attempt at a time, tenant scoping), not the adapters' incidental details: where a fake must choose, it
does what the real adapter does.
"""

import hashlib
import math
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote
from uuid import UUID, uuid4

from shared.adapters.language_detection import Py3LangidDetector
from shared.adapters.local.unavailable import (
    UnavailableMalwareScanning,
    UnavailableOcr,
    UnavailableSummarizer,
    UnavailableVision,
)
from shared.adapters.parsers.markdown import MarkdownParser
from shared.adapters.parsers.plain_text import PlainTextParser
from shared.domain.audit import ToolCall, ToolCallRecord
from shared.domain.auth import Principal, Role, with_role
from shared.domain.capabilities import CapabilityStatus
from shared.domain.chunk_situations import GeneratedSituation, SituationRequest
from shared.domain.document import BlockKind, ExtractionLimits
from shared.domain.duplicates import text_sha256
from shared.domain.errors import CapabilityUnavailable, EmbeddingFailed, NotFound, StoredBytesMissing
from shared.domain.files import (
    LIVE_STATES,
    MAX_STALLED_RETRIES,
    MAX_TIMEOUT_RETRIES,
    ExtractionSummary,
    FailureReason,
    FileRecord,
    FileVersionRecord,
    MalwareScan,
    NewVersion,
    PresignedUpload,
    ProcessingState,
    SameBytes,
    SignedRead,
    StoredObject,
    VersionState,
)
from shared.domain.knowledge import CollectionCoverage, IndexedChunk, IndexingResult, IndexWrite
from shared.domain.limits import Spend, TenantLimits
from shared.domain.metadata_filter import MetadataFilter
from shared.domain.search import ChunkSnapshot, SearchFilters
from shared.domain.similarity import MINILM_SCALE, SimilarityScale
from shared.domain.staleness import lexical_only, stale, to_reindex
from shared.domain.summaries import DraftCitation, DraftSentence, GeneratedSummary, validated_summary
from shared.domain.uploads import signed_read_type, stored_content_type
from shared.domain.usage import RequestKind, Usage, UsageTotal, collection_shares
from shared.domain.workflow import ProcessVersion, StartOutcome
from shared.ports import (
    MAX_SIGNED_READ_LIFETIME,
    DocumentSummarizer,
    EmbeddingProvider,
    FileContentStore,
    FileMetadataStore,
    KnowledgeStore,
    MalwareScanning,
    SweepProgress,
    ToolCallAudit,
    UsageLedger,
    Workflow,
)
from shared.services.authorization import ClaimsAuthorizationPolicy
from shared.services.chunk_situations import ChunkSituations
from shared.services.documents import DocumentReader
from shared.services.extracted_documents import ExtractedDocuments
from shared.services.extraction import Extractor
from shared.services.files import FileService, UploadLimits
from shared.services.indexing import Indexer
from shared.services.limits import SpendLimits
from shared.services.metering import Metering
from shared.services.pipeline import IngestionPipeline, StepRetry
from shared.services.recognition import Recognizers
from shared.services.reconciliation import ReconcileBudget, Reconciler, ReconcileThresholds
from shared.services.reindexing import Reindexer
from shared.services.upload_completion import UploadCompletion

# Processing states an attempt is still working in (the sweep may take a silent one over).
_UNDER_WAY = frozenset(
    {
        ProcessingState.QUEUED,
        ProcessingState.EXTRACTING,
        ProcessingState.RECOGNIZING,
        ProcessingState.EXTRACTED,
        ProcessingState.INDEXING,
        ProcessingState.INTERRUPTED,
    }
)


class Clock:
    """Strictly increasing UTC time (PostgreSQL's `now()` differs per transaction; so does this). A clock
    `behind` the wall clock writes rows that services, which read the wall clock, find that old."""

    def __init__(self, behind: timedelta = timedelta()) -> None:
        self._offset = -behind
        self._last = datetime.now(UTC) + self._offset

    def __call__(self) -> datetime:
        now = datetime.now(UTC) + self._offset
        self._last = max(now, self._last + timedelta(microseconds=1))
        return self._last

    def advance(self, by: timedelta) -> None:
        self._offset += by


@dataclass
class _File:
    tenant_id: str
    file_id: UUID
    collection_id: str
    filename: str
    created_at: datetime


@dataclass
class _Version:
    file_id: UUID
    record: FileVersionRecord


Key = tuple[str, UUID]


class FakeFileMetadataStore(FileMetadataStore):
    """Every FileMetadataStore port (FileCatalog, ProcessingAttempts, ReconciliationQueries, HealthProbe) over
    dicts keyed by tenant: a call for one tenant never reads or changes another's rows."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        self._tenants: set[str] = set()
        self._files: dict[Key, _File] = {}
        self._versions: dict[Key, _Version] = {}
        self._lock = threading.RLock()
        # Told (tenant, file ids) whenever files start being deleted: their chunks leave search at once.
        self._on_delete: list[Callable[[str, set[UUID]], None]] = []
        # Told (tenant, file id, new collection) when a file moves: its chunks move with it, under the same lock.
        self._on_move: list[Callable[[str, UUID, str], None]] = []
        self.reachable = True

    # --- HealthProbe -------------------------------------------------------------------------------------

    def ping(self) -> None:
        if not self.reachable:
            raise ConnectionError("the fake database is unreachable")

    # --- FileCatalog -------------------------------------------------------------------------------------

    def create_version(self, new: NewVersion, *, new_file: bool) -> None:
        with self._lock:
            now = self.clock()
            if new_file:
                if (new.tenant_id, new.file_id) in self._files:
                    raise ValueError(f"file {new.file_id} already exists")
                self._files[new.tenant_id, new.file_id] = _File(
                    new.tenant_id, new.file_id, new.collection_id, new.filename, now
                )
            elif not self._live(new.tenant_id, new.file_id):
                raise NotFound("not found")  # deleted since the caller looked: no new version brings it back
            elif self._files[new.tenant_id, new.file_id].collection_id != new.collection_id:
                raise NotFound("not found")  # moved since the caller's role was checked where it saw the file
            self._tenants.add(new.tenant_id)
            self._versions[new.tenant_id, new.version_id] = _Version(
                new.file_id,
                FileVersionRecord(
                    version_id=new.version_id,
                    state=VersionState.PENDING,
                    processing_state=(
                        ProcessingState.SKIPPED if new.export_id is not None else ProcessingState.NOT_STARTED
                    ),
                    filename=new.filename,
                    media_type=new.media_type,
                    declared_byte_size=new.declared_byte_size,
                    byte_size=None,
                    storage_key=new.storage_key,
                    storage_version_id=None,
                    rejection_reason=None,
                    failure_reason=None,
                    failure_detail=None,
                    created_at=now,
                    updated_at=now,
                    stored_at=None,
                    processing_requested_at=None,
                    export_id=new.export_id,
                    declared_language=new.declared_language,
                    declared_sha256=new.declared_sha256,
                ),
            )

    def declared_bytes_since(self, tenant_id: str, since: datetime) -> int:
        with self._lock:
            return sum(
                v.record.declared_byte_size
                for (tenant, _), v in self._versions.items()
                if tenant == tenant_id and v.record.created_at >= since
            )

    def get_file(self, tenant_id: str, file_id: UUID, *, include_gone: bool = False) -> FileRecord | None:
        with self._lock:
            record = self._record(tenant_id, file_id, same_bytes=True)
        if record is None or (not include_gone and not any(v.state in LIVE_STATES for v in record.versions)):
            return None
        return record

    def list_files(
        self,
        tenant_id: str,
        collections: frozenset[str],
        *,
        collection_id: str | None,
        limit: int,
        after: tuple[datetime, UUID] | None,
        where: MetadataFilter | None = None,
    ) -> tuple[list[FileRecord], bool]:
        if where is not None:
            raise NotImplementedError("the fake catalog keeps no metadata; metadata filters run on PostgreSQL")
        return self._listed(tenant_id, collections, collection_id=collection_id, limit=limit, after=after)

    def facets(
        self,
        tenant_id: str,
        collections: frozenset[str],
        keys: Sequence[str],
        *,
        where: MetadataFilter | None = None,
        filters: SearchFilters | None = None,
    ) -> dict[str, list[tuple[Any, int]]]:
        raise NotImplementedError("the fake catalog keeps no metadata; facets are counted on PostgreSQL")

    def _listed(
        self,
        tenant_id: str,
        collections: frozenset[str],
        *,
        collection_id: str | None,
        limit: int,
        after: tuple[datetime, UUID] | None,
    ) -> tuple[list[FileRecord], bool]:
        wanted = collections if collection_id is None else collections & {collection_id}
        with self._lock:
            files = sorted(
                (
                    f
                    for (tenant, _), f in self._files.items()
                    if tenant == tenant_id
                    and f.collection_id in wanted
                    and self._live(tenant_id, f.file_id)
                    and (after is None or (f.created_at, f.file_id) < after)
                ),
                key=lambda f: (f.created_at, f.file_id),
                reverse=True,
            )
            page = [self._record(tenant_id, f.file_id, same_bytes=True) for f in files[:limit]]
        return [record for record in page if record is not None], len(files) > limit

    def find_version(self, tenant_id: str, version_id: UUID) -> tuple[FileRecord, FileVersionRecord] | None:
        with self._lock:
            found = self._versions.get((tenant_id, version_id))
            record = self._record(tenant_id, found.file_id) if found else None
        if found is None or record is None:
            return None
        return record, found.record

    def mark_stored(self, tenant_id: str, version_id: UUID, *, byte_size: int, storage_version_id: str | None) -> bool:
        with self._lock:
            changed = self._change(
                tenant_id,
                version_id,
                lambda v: v.state is VersionState.PENDING,
                state=VersionState.STORED,
                byte_size=byte_size,
                storage_version_id=storage_version_id,
                stored_at=self.clock(),
            )
            if changed:
                # The file is known by the name of its newest stored version, whatever order events came in.
                file = self._files[tenant_id, self._versions[tenant_id, version_id].file_id]
                stored = [v for v in self._of_file(tenant_id, file.file_id) if v.state is VersionState.STORED]
                file.filename = stored[0].filename
            return changed

    def mark_rejected(
        self, tenant_id: str, version_id: UUID, *, reason: str, byte_size: int, storage_version_id: str | None
    ) -> bool:
        return self._change(
            tenant_id,
            version_id,
            lambda v: v.state is VersionState.PENDING,
            state=VersionState.REJECTED,
            rejection_reason=reason,
            byte_size=byte_size,
            storage_version_id=storage_version_id,
        )

    def record_malware_scan(
        self, tenant_id: str, version_id: UUID, verdict: MalwareScan, *, storage_version_id: str | None
    ) -> FileVersionRecord | None:
        rejection = verdict.rejection()

        def applies(v: FileVersionRecord) -> bool:
            return v.state in (VersionState.PENDING, VersionState.STORED) and (
                storage_version_id is None or v.storage_version_id is None or v.storage_version_id == storage_version_id
            )

        with self._lock:
            current = self._get(tenant_id, version_id)
            if current is None or not applies(current):
                return None
            rejects = rejection is not None and current.processing_state is ProcessingState.NOT_STARTED
            update: dict[str, Any] = {"malware_scan": verdict, "malware_scan_object": storage_version_id}
            if rejects:
                update |= {"state": VersionState.REJECTED, "rejection_reason": rejection}
            self._set(tenant_id, version_id, **update, updated_at=self.clock())
            return self._get(tenant_id, version_id)

    def mark_deleted(self, tenant_id: str, version_id: UUID) -> bool:
        return self._change(
            tenant_id, version_id, lambda v: v.state is VersionState.DELETING, state=VersionState.DELETED
        )

    def begin_delete_file(self, tenant_id: str, file_id: UUID) -> int:
        return self._begin_delete(tenant_id, {file_id})

    def begin_delete_collection(self, tenant_id: str, collection_id: str) -> int:
        with self._lock:
            files = {
                f.file_id for (t, _), f in self._files.items() if t == tenant_id and f.collection_id == collection_id
            }
            return self._begin_delete(tenant_id, files)

    def _begin_delete(self, tenant_id: str, file_ids: set[UUID]) -> int:
        with self._lock:
            moved = 0
            for (tenant, version_id), version in list(self._versions.items()):
                if tenant == tenant_id and version.file_id in file_ids and version.record.state in LIVE_STATES:
                    moved += self._change(tenant, version_id, lambda v: True, state=VersionState.DELETING)
            for remove in self._on_delete:
                remove(tenant_id, file_ids)
            return moved

    def deleting_versions_with_bytes(
        self, tenant_id: str, *, file_id: UUID | None = None, collection_id: str | None = None, limit: int
    ) -> tuple[list[FileVersionRecord], int]:
        if (file_id is None) == (collection_id is None):
            raise ValueError("name the file or the collection, not both")
        with self._lock:
            matching = [
                v.record
                for (t, _), v in self._versions.items()
                if t == tenant_id
                and v.record.state is VersionState.DELETING
                and v.record.stored_at is not None
                and (file_id is None or v.file_id == file_id)
                and (collection_id is None or self._files[(t, v.file_id)].collection_id == collection_id)
            ]
        matching.sort(key=lambda r: (-r.updated_at.timestamp(), r.version_id))
        return matching[:limit], len(matching)

    def move_file(self, tenant_id: str, file_id: UUID, *, from_collection: str, to_collection: str) -> bool:
        with self._lock:
            file = self._files.get((tenant_id, file_id))
            if file is None or not self._live(tenant_id, file_id) or file.collection_id != from_collection:
                return False
            file.collection_id = to_collection
            for move in self._on_move:
                move(tenant_id, file_id, to_collection)
            return True

    # --- ReconciliationQueries -----------------------------------------------------------------------------

    def tenant_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._tenants)

    def versions_in_states(
        self,
        tenant_id: str,
        states: Iterable[VersionState],
        *,
        updated_before: datetime,
        after: tuple[datetime, UUID] | None = None,
        limit: int = 500,
    ) -> list[tuple[UUID, FileVersionRecord]]:
        wanted = set(states)
        return self._page(tenant_id, lambda v: v.state in wanted and v.updated_at < updated_before, after, limit)

    def versions_awaiting_processing(
        self, tenant_id: str, *, cutoff: datetime, after: tuple[datetime, UUID] | None = None, limit: int = 500
    ) -> list[tuple[UUID, FileVersionRecord]]:
        def awaiting(v: FileVersionRecord) -> bool:
            return (
                v.state is VersionState.STORED
                and v.updated_at < cutoff
                and (v.processing_requested_at is None or v.processing_requested_at < cutoff)
                and (
                    v.processing_state is ProcessingState.NOT_STARTED
                    or (v.processing_state in _UNDER_WAY and v.processing_retries < MAX_STALLED_RETRIES)
                    or _timed_out_with_retries_left(v)
                )
            )

        return self._page(tenant_id, awaiting, after, limit)

    def versions_given_up(
        self, tenant_id: str, *, cutoff: datetime, after: tuple[datetime, UUID] | None = None, limit: int = 500
    ) -> list[tuple[UUID, FileVersionRecord]]:
        return self._page(
            tenant_id,
            lambda v: (
                v.state is VersionState.STORED
                and v.updated_at < cutoff
                and v.processing_state in _UNDER_WAY
                and v.processing_retries >= MAX_STALLED_RETRIES
            ),
            after,
            limit,
        )

    # --- ProcessingAttempts --------------------------------------------------------------------------------

    def queue_processing(self, tenant_id: str, version_id: UUID, *, stale_before: datetime) -> int | None:
        def may_queue(v: FileVersionRecord) -> bool:
            return v.state is VersionState.STORED and (
                v.processing_state is ProcessingState.NOT_STARTED
                or (
                    v.processing_state in _UNDER_WAY
                    and v.updated_at < stale_before
                    and v.processing_retries < MAX_STALLED_RETRIES
                )
                or _timed_out_with_retries_left(v)
            )

        with self._lock:
            version = self._get(tenant_id, version_id)
            if version is None or not may_queue(version):
                return None
            # A first start is no retry; nor is one whose workflow could not be asked (released to not_started).
            retry = version.processing_state is not ProcessingState.NOT_STARTED
            return self._queue(tenant_id, version, retries=version.processing_retries + retry)

    def queue_rescan(self, tenant_id: str, version_id: UUID) -> int | None:
        finished = {ProcessingState.INDEXED, ProcessingState.FAILED, ProcessingState.INTERRUPTED}
        with self._lock:
            version = self._get(tenant_id, version_id)
            if version is None or version.state is not VersionState.STORED or version.processing_state not in finished:
                return None
            return self._queue(tenant_id, version, retries=0)

    def queue_reindex(self, tenant_id: str, version_id: UUID) -> int | None:
        with self._lock:
            version = self._get(tenant_id, version_id)
            if version is None or version.state is not VersionState.STORED:
                return None
            if version.processing_state is not ProcessingState.INDEXED:
                return None
            return self._queue(tenant_id, version, retries=0)

    def _queue(self, tenant_id: str, version: FileVersionRecord, *, retries: int) -> int:
        attempt = version.processing_attempt + 1
        self._change(
            tenant_id,
            version.version_id,
            lambda v: True,
            processing_state=ProcessingState.QUEUED,
            processing_requested_at=self.clock(),
            processing_attempt=attempt,
            processing_retries=retries,
            failure_reason=None,
            failure_detail=None,
        )
        return attempt

    def release_processing(
        self, tenant_id: str, version_id: UUID, *, attempt: int, back_to: ProcessingState = ProcessingState.NOT_STARTED
    ) -> None:
        found = self._get(tenant_id, version_id)
        self._change(
            tenant_id,
            version_id,
            lambda v: v.processing_state is ProcessingState.QUEUED and v.processing_attempt == attempt,
            processing_state=back_to,
            processing_requested_at=None
            if back_to is ProcessingState.NOT_STARTED
            else (found.processing_requested_at if found else None),
        )

    def move_processing(
        self,
        tenant_id: str,
        version_id: UUID,
        *,
        attempt: int,
        to: ProcessingState,
        expected: Iterable[ProcessingState],
    ) -> bool:
        wanted = set(expected)
        return self._change(
            tenant_id,
            version_id,
            lambda v: _holds(v, attempt, wanted),
            processing_state=to,
        )

    def heartbeat(self, tenant_id: str, version_id: UUID, *, attempt: int, state: ProcessingState) -> bool:
        return self.move_processing(tenant_id, version_id, attempt=attempt, to=state, expected=[state])

    def record_content_hash(self, tenant_id: str, version_id: UUID, sha256: str, *, attempt: int) -> bool:
        with self._lock:
            current = self._get(tenant_id, version_id)
            if current is None or current.state is not VersionState.STORED or current.processing_attempt != attempt:
                return False
            self._set(tenant_id, version_id, content_sha256=sha256)  # as the adapter: updated_at stays
            return True

    def record_extraction(
        self,
        tenant_id: str,
        version_id: UUID,
        summary: ExtractionSummary,
        *,
        attempt: int,
        awaiting_recognition: bool = False,
    ) -> bool:
        recognition = summary.recognition
        return self._change(
            tenant_id,
            version_id,
            lambda v: _holds(v, attempt, {ProcessingState.EXTRACTING, ProcessingState.RECOGNIZING}),
            processing_state=ProcessingState.RECOGNIZING if awaiting_recognition else ProcessingState.EXTRACTED,
            page_count=summary.page_count,
            block_count=summary.block_count,
            pages_without_text=summary.pages_without_text,
            extraction_warnings=summary.warnings,
            extraction_truncated=summary.truncated,
            document_key=summary.document_key,
            document_version_id=summary.document_version_id,
            ocr_state=recognition.ocr_state,
            ocr_engine=recognition.ocr_engine,
            ocr_detail=_bounded(recognition.ocr_detail),
            recognized_pages=recognition.recognized_pages,
            ocr_confidence=recognition.ocr_confidence,
            vision_state=recognition.vision_state,
            vision_model=recognition.vision_model,
            vision_detail=_bounded(recognition.vision_detail),
            failure_reason=None,
            failure_detail=None,
        )

    def record_failure(
        self, tenant_id: str, version_id: UUID, *, reason: FailureReason, detail: str, attempt: int
    ) -> bool:
        in_progress = {
            ProcessingState.QUEUED,
            ProcessingState.EXTRACTING,
            ProcessingState.RECOGNIZING,
            ProcessingState.INDEXING,
        }
        return self._change(
            tenant_id,
            version_id,
            lambda v: _holds(v, attempt, in_progress),
            processing_state=ProcessingState.FAILED,
            failure_reason=reason,
            failure_detail=detail[:2000],
        )

    def record_interruption(self, tenant_id: str, version_id: UUID, *, detail: str, attempt: int) -> bool:
        return self._change(
            tenant_id,
            version_id,
            lambda v: _holds(v, attempt, _UNDER_WAY - {ProcessingState.INTERRUPTED}),
            processing_state=ProcessingState.INTERRUPTED,
            failure_reason=None,
            failure_detail=detail[:2000],
        )

    # --- what the fake KnowledgeStore writes on the same rows ------------------------------------------------

    def record_indexing(self, tenant_id: str, version_id: UUID, result: IndexingResult) -> None:
        """As the real index's swap records its result: processing becomes `indexed`."""
        self._change(
            tenant_id,
            version_id,
            lambda v: True,
            processing_state=ProcessingState.INDEXED,
            chunk_count=result.chunk_count,
            embedded_chunk_count=result.embedded_count,
            embedding_model=result.embedding_model,
            embedding_gap=result.embedding_gap,
            context_gap=result.context_gap,
            context_model=result.context_model,
            indexed_at=self.clock(),
            failure_reason=None,
            failure_detail=None,
        )

    def forget_chunk_counts(self, tenant_id: str, file_id: UUID, *, except_version: UUID) -> None:
        with self._lock:
            for version in self._of_file(tenant_id, file_id):
                if version.version_id != except_version and version.chunk_count > 0:
                    self._set(
                        tenant_id,
                        version.version_id,
                        chunk_count=0,
                        embedded_chunk_count=0,
                        embedding_model=None,
                        embedding_gap=None,
                        context_gap=None,
                        context_model=None,
                    )

    def on_delete(self, remove: Callable[[str, set[UUID]], None]) -> None:
        self._on_delete.append(remove)

    def on_move(self, move: Callable[[str, UUID, str], None]) -> None:
        self._on_move.append(move)

    def file_of(self, tenant_id: str, version_id: UUID) -> UUID | None:
        found = self._versions.get((tenant_id, version_id))
        return found.file_id if found else None

    def versions(self, tenant_id: str) -> list[tuple[UUID, FileVersionRecord]]:
        """Every version of the tenant (for a fake to query), oldest first."""
        with self._lock:
            return sorted(
                ((v.file_id, v.record) for (t, _), v in self._versions.items() if t == tenant_id),
                key=lambda pair: (pair[1].created_at, pair[1].version_id),
            )

    def collection_of(self, tenant_id: str, file_id: UUID) -> str | None:
        file = self._files.get((tenant_id, file_id))
        return file.collection_id if file else None

    # --- internals -------------------------------------------------------------------------------------------

    def _get(self, tenant_id: str, version_id: UUID) -> FileVersionRecord | None:
        found = self._versions.get((tenant_id, version_id))
        return found.record if found else None

    def _of_file(self, tenant_id: str, file_id: UUID) -> list[FileVersionRecord]:
        """The file's versions, newest first."""
        return sorted(
            (v.record for (t, _), v in self._versions.items() if t == tenant_id and v.file_id == file_id),
            key=lambda v: (v.created_at, v.version_id),
            reverse=True,
        )

    def _live(self, tenant_id: str, file_id: UUID) -> bool:
        return (tenant_id, file_id) in self._files and any(
            v.state in LIVE_STATES for v in self._of_file(tenant_id, file_id)
        )

    def _record(self, tenant_id: str, file_id: UUID, *, same_bytes: bool = False) -> FileRecord | None:
        file = self._files.get((tenant_id, file_id))
        if file is None:
            return None
        versions = self._of_file(tenant_id, file_id)
        if same_bytes:
            versions = [
                v.model_copy(
                    update={"duplicate_of": self._earliest(tenant_id, file.collection_id, v.content_sha256, v)}
                )
                if v.content_sha256
                else v
                for v in versions
            ]
        return FileRecord(
            tenant_id=tenant_id,
            file_id=file_id,
            collection_id=file.collection_id,
            filename=file.filename,
            created_at=file.created_at,
            versions=tuple(versions),
        )

    def same_bytes(self, tenant_id: str, collection_id: str, sha256: str) -> SameBytes | None:
        with self._lock:
            return self._earliest(tenant_id, collection_id, sha256, None)

    def _earliest(
        self, tenant_id: str, collection_id: str, sha256: str, before: FileVersionRecord | None
    ) -> SameBytes | None:
        """The earliest stored version in the collection with these bytes (uploaded before `before`, if given)."""
        found = sorted(
            (v.record.created_at, v.record.version_id, v.file_id)
            for (tenant, _), v in self._versions.items()
            if tenant == tenant_id
            and v.record.content_sha256 == sha256
            and v.record.state is VersionState.STORED
            and self._files[tenant, v.file_id].collection_id == collection_id
            and (before is None or (v.record.created_at, v.record.version_id) < (before.created_at, before.version_id))
        )
        if not found:
            return None
        _, version_id, file_id = found[0]
        return SameBytes(file_id=file_id, version_id=version_id, filename=self._files[tenant_id, file_id].filename)

    def _change(
        self, tenant_id: str, version_id: UUID, condition: Callable[[FileVersionRecord], bool], **update: Any
    ) -> bool:
        """Compare-and-set: change the row only when `condition` holds for it; True when this call did."""
        with self._lock:
            current = self._get(tenant_id, version_id)
            if current is None or not condition(current):
                return False
            self._set(tenant_id, version_id, **update, updated_at=self.clock())
            return True

    def _set(self, tenant_id: str, version_id: UUID, **update: Any) -> None:
        found = self._versions[tenant_id, version_id]
        found.record = FileVersionRecord.model_validate({**found.record.model_dump(), **update})

    def _page(
        self,
        tenant_id: str,
        condition: Callable[[FileVersionRecord], bool],
        after: tuple[datetime, UUID] | None,
        limit: int,
    ) -> list[tuple[UUID, FileVersionRecord]]:
        with self._lock:
            rows = [
                (v.file_id, v.record)
                for (t, _), v in self._versions.items()
                if t == tenant_id
                and condition(v.record)
                and (after is None or (v.record.updated_at, v.record.version_id) > after)
            ]
        rows.sort(key=lambda pair: (pair[1].updated_at, pair[1].version_id))
        return rows[:limit]


def _holds(version: FileVersionRecord, attempt: int, states: set[ProcessingState] | frozenset[ProcessingState]) -> bool:
    return (
        version.state is VersionState.STORED
        and version.processing_attempt == attempt
        and version.processing_state in states
    )


def _timed_out_with_retries_left(version: FileVersionRecord) -> bool:
    return (
        version.processing_state is ProcessingState.FAILED
        and version.failure_reason is FailureReason.TIMED_OUT
        and version.processing_retries < MAX_TIMEOUT_RETRIES
    )


def _bounded(detail: str | None) -> str | None:
    return None if detail is None else detail[:2000]


# --- content -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Object:
    version_id: str
    body: bytes
    content_type: str


SIGNED_HOST = "https://content.fake.invalid"


class FakeContentStore(FileContentStore):
    """A versioned bucket, as S3 with versioning on: every put is a new version (ids never reused), the newest
    version is what an unversioned read gets, and deleting it brings the one before back."""

    def __init__(self) -> None:
        self._objects: dict[str, list[_Object]] = {}  # oldest first
        self._next_version = 0
        self._lock = threading.RLock()
        # What `withdraw` tagged quire:deleted=true, as (key, version id): S3 keeps tags with the version.
        self.tagged_deleted: set[tuple[str, str | None]] = set()

    def put(self, key: str, body: bytes, *, content_type: str) -> StoredObject:
        with self._lock:
            self._next_version += 1
            version_id = f"v{self._next_version:06d}"
            stored_type = stored_content_type(content_type)
            self._objects.setdefault(key, []).append(_Object(version_id, bytes(body), stored_type))
        return StoredObject(key=key, version_id=version_id, byte_size=len(body), content_type=stored_type)

    def get(self, key: str, *, version_id: str | None = None, max_bytes: int) -> bytes:
        return self._read(key, version_id, max_bytes).body

    def get_versioned(self, key: str, *, max_bytes: int) -> tuple[bytes, str | None]:
        found = self._read(key, None, max_bytes)
        return found.body, found.version_id

    def _read(self, key: str, version_id: str | None, max_bytes: int) -> _Object:
        found = self._find(key, version_id)
        if found is None:
            raise StoredBytesMissing(key, version_id)
        if len(found.body) > max_bytes:
            raise ValueError(f"object is {len(found.body)} bytes; the limit is {max_bytes}")
        return found

    def read_range(self, key: str, *, version_id: str | None, start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        found = self._find(key, version_id)
        if found is None:
            raise StoredBytesMissing(key, version_id)
        return found.body[start : start + length]

    def head(self, key: str, *, version_id: str | None = None) -> StoredObject | None:
        found = self._find(key, version_id)
        if found is None:
            return None
        return StoredObject(
            key=key, version_id=found.version_id, byte_size=len(found.body), content_type=found.content_type
        )

    def signed_read(
        self,
        key: str,
        *,
        version_id: str | None,
        filename: str,
        lifetime: timedelta,
        media_type: str | None = None,
    ) -> SignedRead | None:
        seconds = max(1, int(min(lifetime, MAX_SIGNED_READ_LIFETIME).total_seconds()))
        version = f"&versionId={version_id}" if version_id else ""
        served = signed_read_type(media_type)
        shown = f"&type={quote(served, safe='')}" if media_type is not None else ""
        return SignedRead(
            url=f"{SIGNED_HOST}/{key}?expires={seconds}{version}{shown}",
            expires_at=datetime.now(UTC) + timedelta(seconds=seconds),
        )

    def delete_version(self, key: str, version_id: str) -> None:
        with self._lock:
            kept = [o for o in self._objects.get(key, []) if o.version_id != version_id]
            if kept:
                self._objects[key] = kept
            else:
                self._objects.pop(key, None)

    def delete_all_versions(self, key: str) -> int:
        with self._lock:
            return len(self._objects.pop(key, []))

    def withdraw(self, objects: Sequence[tuple[str, str | None]]) -> int:
        with self._lock:
            for key, version_id in objects:
                self.tagged_deleted.add((key, version_id))
                if version_id is None:
                    self.delete_all_versions(key)
                else:
                    self.delete_version(key, version_id)
        return len(objects)

    def signed_upload(
        self, key: str, *, content_type: str, max_bytes: int, lifetime: timedelta, sha256: str | None = None
    ) -> PresignedUpload:
        seconds = max(1, int(min(lifetime, MAX_SIGNED_READ_LIFETIME).total_seconds()))
        fields = {"key": key, "Content-Type": stored_content_type(content_type), "policy": f"1..{max_bytes} bytes"}
        if sha256 is not None:
            fields["sha256"] = sha256
        return PresignedUpload(
            url=f"{SIGNED_HOST}/upload", fields=fields, expires_at=datetime.now(UTC) + timedelta(seconds=seconds)
        )

    def object_versions(self, prefix: str) -> Iterator[StoredObject]:
        with self._lock:
            listed = [
                StoredObject(key=key, version_id=o.version_id, byte_size=len(o.body))
                for key in sorted(self._objects)
                if key.startswith(prefix)
                for o in reversed(self._objects[key])
            ]
        return iter(listed)

    # What a browser does with a signed upload (like moto, nothing in the policy is enforced).
    def post(self, upload: PresignedUpload, body: bytes) -> StoredObject:
        return self.put(upload.fields["key"], body, content_type=upload.fields["Content-Type"])

    def keys(self) -> list[str]:
        with self._lock:
            return sorted(self._objects)

    def _find(self, key: str, version_id: str | None) -> _Object | None:
        with self._lock:
            versions = self._objects.get(key, [])
            if version_id is None:
                return versions[-1] if versions else None
            return next((o for o in versions if o.version_id == version_id), None)


# --- reconciliation ---------------------------------------------------------------------------------------


class FakeSweepProgress(SweepProgress):
    """Where each tenant's sweeps stopped, and the order of their turns (oldest first, never-had first)."""

    def __init__(self, metadata: FakeFileMetadataStore) -> None:
        self._metadata = metadata
        self._points: dict[tuple[str, str], tuple[datetime, UUID]] = {}
        self._turns: dict[str, int] = {}
        self._turn_count = 0
        self._lock = threading.Lock()

    def tenants_in_turn(self) -> list[str]:
        with self._lock:
            return sorted(self._metadata.tenant_ids(), key=lambda t: (t in self._turns, self._turns.get(t, 0), t))

    def resume_point(self, tenant_id: str, sweep: str) -> tuple[datetime, UUID] | None:
        with self._lock:
            return self._points.get((tenant_id, sweep))

    def save_resume_point(self, tenant_id: str, sweep: str, after: tuple[datetime, UUID] | None) -> None:
        with self._lock:
            if after is None:
                self._points.pop((tenant_id, sweep), None)
            else:
                self._points[(tenant_id, sweep)] = after

    def end_turn(self, tenant_id: str) -> None:
        with self._lock:
            self._turn_count += 1
            self._turns[tenant_id] = self._turn_count


# --- usage, workflow -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _UsageRow:
    file_id: UUID
    collection_id: str
    usage: Usage
    recorded_at: datetime


@dataclass(frozen=True)
class _RequestUsageRow:
    kind: RequestKind
    subject: str
    usage: Usage  # the share's tokens
    recorded_at: datetime


class FakeUsageLedger(UsageLedger):
    """One row per (tenant, version, step, attempt), appended once; request usage one per (tenant, call,
    collection), appended once."""

    def __init__(self, clock: Callable[[], datetime] | None = None) -> None:
        self._clock = clock or (lambda: datetime.now(UTC))
        self.rows: dict[tuple[str, UUID, str, int], _UsageRow] = {}
        self.request_rows: dict[tuple[str, UUID, str], _RequestUsageRow] = {}

    def record_request(
        self,
        tenant_id: str,
        *,
        kind: RequestKind,
        collections: frozenset[str],
        subject: str,
        usage: Usage,
        usage_id: UUID | None = None,
    ) -> None:
        shares = collection_shares(collections, usage)
        call = usage_id or uuid4()
        now = self._clock()
        for share in shares:
            self.request_rows.setdefault(
                (tenant_id, call, share.collection_id),
                _RequestUsageRow(
                    kind,
                    subject,
                    usage.model_copy(update={"input_tokens": share.input_tokens, "output_tokens": share.output_tokens}),
                    now,
                ),
            )

    def record(
        self,
        tenant_id: str,
        file_id: UUID,
        version_id: UUID,
        collection_id: str,
        *,
        step: str,
        attempt: int,
        usage: Usage,
    ) -> bool:
        key = (tenant_id, version_id, step, attempt)
        if key in self.rows:
            return False
        self.rows[key] = _UsageRow(file_id, collection_id, usage, self._clock())
        return True

    def totals(
        self, tenant_id: str, collections: frozenset[str], *, since: datetime, until: datetime
    ) -> list[UsageTotal]:
        groups: dict[tuple[str, str, str, str | None, bool], list[_UsageRow]] = {}
        for (tenant, _, step, _), row in self.rows.items():
            if tenant == tenant_id and row.collection_id in collections and since <= row.recorded_at < until:
                usage = row.usage
                key = (step.split("#", 1)[0], usage.provider, usage.operation, usage.model, usage.priced)
                groups.setdefault(key, []).append(row)
        totals = [
            UsageTotal(
                step=step,
                provider=provider,
                operation=operation,
                model=model,
                priced=priced,
                calls=len(rows),
                pages=sum(r.usage.pages for r in rows),
                images=sum(r.usage.images for r in rows),
                input_tokens=sum(r.usage.input_tokens for r in rows),
                output_tokens=sum(r.usage.output_tokens for r in rows),
                first_recorded_at=min(r.recorded_at for r in rows),
                last_recorded_at=max(r.recorded_at for r in rows),
            )
            for (step, provider, operation, model, priced), rows in groups.items()
        ]
        shares: dict[tuple[str, str, str, str | None, bool], list[tuple[UUID, _RequestUsageRow]]] = {}
        for (tenant, call, collection), share in self.request_rows.items():
            if tenant == tenant_id and collection in collections and since <= share.recorded_at < until:
                usage = share.usage
                key = (share.kind.value, usage.provider, usage.operation, usage.model, usage.priced)
                shares.setdefault(key, []).append((call, share))
        totals += [
            UsageTotal(
                step=step,
                provider=provider,
                operation=operation,
                model=model,
                priced=priced,
                calls=len({call for call, _ in booked}),
                pages=0,
                images=0,
                input_tokens=sum(share.usage.input_tokens for _, share in booked),
                output_tokens=sum(share.usage.output_tokens for _, share in booked),
                first_recorded_at=min(share.recorded_at for _, share in booked),
                last_recorded_at=max(share.recorded_at for _, share in booked),
            )
            for (step, provider, operation, model, priced), booked in shares.items()
        ]
        return sorted(totals, key=lambda t: (not t.priced, t.step, t.provider, t.operation))

    def spent_since(self, tenant_id: str, since: datetime) -> Spend:
        rows = [(step, row) for (tenant, _, step, _), row in self.rows.items() if tenant == tenant_id]
        rows = [(step, row) for step, row in rows if row.recorded_at >= since]
        return Spend(
            ocr_pages=sum(row.usage.pages for _, row in rows),
            vision_images=sum(row.usage.images for _, row in rows),
            embedding_tokens=sum(
                row.usage.input_tokens for step, row in rows if step.startswith(("embed#", "reembed:"))
            ),
            generation_tokens=sum(
                share.usage.input_tokens + share.usage.output_tokens
                for (tenant, _, _), share in self.request_rows.items()
                if tenant == tenant_id and share.recorded_at >= since
            )
            + sum(
                row.usage.input_tokens + row.usage.output_tokens for step, row in rows if step.startswith("context#")
            ),
            rerank_queries=len(
                {
                    call
                    for (tenant, call, _), share in self.request_rows.items()
                    if tenant == tenant_id and share.kind is RequestKind.RERANK and share.recorded_at >= since
                }
            ),
        )

    def ocr_runs_since(self, tenant_id: str, file_id: UUID, since: datetime) -> list[datetime]:
        return sorted(
            row.recorded_at
            for (tenant, _, step, _), row in self.rows.items()
            if tenant == tenant_id and row.file_id == file_id and step == "ocr" and row.recorded_at >= since
        )


class FakeToolCallAudit(ToolCallAudit):
    """Tool calls appended per tenant; `unreachable` makes writes fail as an outage would."""

    def __init__(self) -> None:
        self.rows: list[ToolCallRecord] = []
        self.unreachable = False
        self._lock = threading.Lock()

    def record(self, call: ToolCall) -> None:
        if self.unreachable:
            raise ConnectionError("the audit store is unreachable")
        with self._lock:
            self.rows.append(ToolCallRecord(**call.model_dump(), call_id=uuid4()))

    def recent(
        self,
        tenant_id: str,
        *,
        visible_collections: frozenset[str],
        limit: int,
        before: tuple[datetime, UUID] | None,
    ) -> tuple[list[ToolCallRecord], bool]:
        with self._lock:
            rows = [
                row
                for row in self.rows
                if row.tenant_id == tenant_id
                and set(row.collection_ids) <= visible_collections
                and (before is None or (row.called_at, row.call_id) < before)
            ]
        rows.sort(key=lambda row: (row.called_at, row.call_id), reverse=True)
        return rows[:limit], len(rows) > limit


class RecordingWorkflow(Workflow):
    """Records every start; a second start of the same (version, attempt) is ALREADY_STARTED, as a Step
    Functions execution name makes it. `unreachable` makes starts fail as an outage would; `then` runs the
    request (the local in-process runner's part) after it is recorded."""

    def __init__(self, then: Callable[[ProcessVersion], object] | None = None) -> None:
        self.started: list[ProcessVersion] = []
        self.unreachable = False
        self._then = then

    def start(self, request: ProcessVersion) -> StartOutcome:
        if self.unreachable:
            raise ConnectionError("the workflow service is unreachable")
        if any((s.version_id, s.attempt) == (request.version_id, request.attempt) for s in self.started):
            return StartOutcome.ALREADY_STARTED
        self.started.append(request)
        if self._then is not None:
            self._then(request)
        return StartOutcome.STARTED


# --- knowledge, embeddings -----------------------------------------------------------------------------------


class FakeKnowledgeStore(KnowledgeStore):
    """Chunks over the fake metadata store's rows, with the real swap's checks: the version must still be
    stored and held (by the attempt in `indexing`, or `indexed` for a re-index), a superseded version gets no
    chunks, and the file's chunks are replaced whole. Deleting a file removes its chunks at once."""

    def one_moment(self, tenant_id: str) -> AbstractContextManager[None]:
        return nullcontext()  # one lock-free dict: every read is of one moment already

    def __init__(self, metadata: FakeFileMetadataStore) -> None:
        self._metadata = metadata
        self.chunks: dict[tuple[str, str], IndexedChunk] = {}
        metadata.on_delete(self._remove_files)
        metadata.on_move(self._move_file)

    def replace_chunks(
        self,
        tenant_id: str,
        version_id: UUID,
        chunks: Iterable[IndexedChunk],
        result: IndexingResult,
        *,
        attempt: int | None,
    ) -> IndexWrite:
        found = self._metadata.find_version(tenant_id, version_id)
        if found is None or not _may_index(found[1], attempt):
            return IndexWrite.NOT_CLAIMED
        file, version = found
        if any(
            v.state is VersionState.STORED and v.created_at > version.created_at and v.version_id != version_id
            for v in file.versions
        ):
            self._remove(tenant_id, lambda c: c.version_id == str(version_id))
            self._metadata.record_indexing(
                tenant_id, version_id, IndexingResult(chunk_count=0, embedded_count=0, embedding_model=None)
            )
            return IndexWrite.SUPERSEDED
        self._remove(tenant_id, lambda c: c.file_id == str(file.file_id))
        self._metadata.forget_chunk_counts(tenant_id, file.file_id, except_version=version_id)
        written = 0
        for chunk in chunks:
            # In the file's collection as it is now, as the real swap reads it under the file's lock.
            self.chunks[tenant_id, chunk.chunk_id] = chunk.model_copy(update={"collection_id": file.collection_id})
            written += 1
        if written != result.chunk_count:
            raise ValueError(f"{written} chunks were given for a result of {result.chunk_count}")
        self._metadata.record_indexing(tenant_id, version_id, result)
        return IndexWrite.STORED

    def versions_to_reindex(
        self,
        tenant_id: str,
        collections: frozenset[str] | None,
        embedding_model: str,
        limit: int,
        *,
        context_model: str | None = None,
    ) -> list[tuple[UUID, UUID]]:
        stale = [
            (file_id, version)
            for file_id, version in self._metadata.versions(tenant_id)
            if to_reindex(version, embedding_model=embedding_model, context_model=context_model)
            and (collections is None or self._metadata.collection_of(tenant_id, file_id) in collections)
        ]
        stale.sort(key=lambda pair: (pair[1].updated_at, pair[1].version_id))
        return [(file_id, version.version_id) for file_id, version in stale[:limit]]

    def coverage(
        self, tenant_id: str, collections: frozenset[str], embedding_model: str, *, context_model: str | None = None
    ) -> list[CollectionCoverage]:
        counts: dict[str, dict[str, int]] = {}
        current: dict[UUID, FileVersionRecord] = {}
        for file_id, version in self._metadata.versions(tenant_id):  # oldest first: the newest stored one wins
            if version.state is VersionState.STORED:
                current[file_id] = version
        for file_id, version in current.items():
            collection = self._metadata.collection_of(tenant_id, file_id)
            if collection is None or collection not in collections:
                continue
            row = counts.setdefault(
                collection,
                {"files": 0, "indexed": 0, "failed": 0, "in_progress": 0, "stale": 0, "lexical_only": 0},
            )
            indexed = version.processing_state is ProcessingState.INDEXED
            row["files"] += 1
            row["indexed"] += indexed
            row["failed"] += version.processing_state is ProcessingState.FAILED
            row["in_progress"] += version.processing_state not in {ProcessingState.INDEXED, ProcessingState.FAILED}
            row["stale"] += indexed and stale(version, embedding_model=embedding_model, context_model=context_model)
            row["lexical_only"] += indexed and lexical_only(version)
        return [CollectionCoverage(collection_id=c, **row) for c, row in sorted(counts.items())]

    def snapshots(self, tenant_id: str, collections: frozenset[str], chunk_ids: Sequence[str]) -> list[ChunkSnapshot]:
        wanted = set(chunk_ids)
        return [
            ChunkSnapshot(
                chunk_id=chunk.chunk_id,
                file_id=chunk.file_id,
                version_id=chunk.version_id,
                filename=chunk.filename,
                media_type=chunk.media_type,
                collection_id=chunk.collection_id,
                location=chunk.draft.location,
                heading_path=chunk.draft.heading_path,
                block_kind=BlockKind(chunk.draft.block_kind),
                body=chunk.draft.text,
                uploaded_at=chunk.uploaded_at,
            )
            for (tenant, chunk_id), chunk in self.chunks.items()
            if tenant == tenant_id and chunk_id in wanted and chunk.collection_id in collections
        ]

    def same_text(
        self,
        tenant_id: str,
        collections: frozenset[str],
        text_hashes: Iterable[str],
        *,
        filters: SearchFilters,
        per_text: int,
        excluding: Collection[str] = (),
    ) -> list[ChunkSnapshot]:
        if filters.where is not None:
            raise NotImplementedError("the fake store keeps no metadata; metadata filters run on PostgreSQL")
        wanted = set(text_hashes)
        found: dict[str, list[IndexedChunk]] = {}
        for (tenant, _), chunk in self.chunks.items():
            digest = text_sha256(chunk.draft.text)
            readable = tenant == tenant_id and chunk.collection_id in collections
            if readable and digest in wanted and chunk.chunk_id not in excluding and _kept(chunk, filters):
                found.setdefault(digest, []).append(chunk)
        chosen = [
            chunk.chunk_id
            for chunks in found.values()
            for chunk in sorted(chunks, key=lambda c: (c.uploaded_at, c.chunk_id))[:per_text]
        ]
        return self.snapshots(tenant_id, collections, chosen)

    def of_version(self, tenant_id: str, version_id: UUID) -> list[IndexedChunk]:
        return sorted(
            (c for (t, _), c in self.chunks.items() if t == tenant_id and c.version_id == str(version_id)),
            key=lambda c: c.draft.ordinal,
        )

    def _remove(self, tenant_id: str, which: Callable[[IndexedChunk], bool]) -> None:
        for key in [k for k, c in self.chunks.items() if k[0] == tenant_id and which(c)]:
            del self.chunks[key]

    def _move_file(self, tenant_id: str, file_id: UUID, collection_id: str) -> None:
        for key, chunk in list(self.chunks.items()):
            if key[0] == tenant_id and chunk.file_id == str(file_id):
                self.chunks[key] = chunk.model_copy(update={"collection_id": collection_id})

    def _remove_files(self, tenant_id: str, file_ids: set[UUID]) -> None:
        names = {str(file_id) for file_id in file_ids}
        self._remove(tenant_id, lambda c: c.file_id in names)


def _kept(chunk: IndexedChunk, filters: SearchFilters) -> bool:
    """Whether the body's `filters` (not the metadata filter) keep a chunk, as the lanes' SQL applies them."""
    return (
        (filters.media_types is None or chunk.media_type in filters.media_types)
        and (filters.filename is None or filters.filename.casefold() in chunk.filename.casefold())
        and (filters.uploaded_after is None or chunk.uploaded_at >= filters.uploaded_after)
        and (filters.uploaded_before is None or chunk.uploaded_at < filters.uploaded_before)
    )


def _may_index(version: FileVersionRecord, attempt: int | None) -> bool:
    if version.state is not VersionState.STORED:
        return False
    if attempt is None:  # a re-index replaces what an earlier indexing stored, and nothing else
        return version.processing_state is ProcessingState.INDEXED and version.chunk_count > 0
    return version.processing_state is ProcessingState.INDEXING and version.processing_attempt == attempt


@dataclass
class FakeEmbedder(EmbeddingProvider):
    """Deterministic unit vectors from each text's hash (the same text, the same vector); `failure` makes every
    call fail as a throttled model does, after reporting ready."""

    name: str = "fake-embedder"
    size: int = 8
    failure: str | None = None
    calls: list[int] = field(default_factory=list)

    @property
    def model_id(self) -> str:
        return f"{self.name}@{self.size}"

    @property
    def dimension(self) -> int:
        return self.size

    @property
    def max_tokens(self) -> int:
        return 256

    @property
    def languages(self) -> None:
        return None

    @property
    def similarity_scale(self) -> SimilarityScale:
        return MINILM_SCALE

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready(self.name)

    def count_tokens(self, text: str) -> int:
        return max(1, len(text.split()))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.failure is not None:
            raise EmbeddingFailed(self.failure)
        self.calls.append(len(texts))
        return [_unit_vector(text, self.size) for text in texts]

    def usage(self, tokens: int) -> Usage:
        return Usage(provider="fake", operation="fake:embed", model=self.model_id, priced=False, input_tokens=tokens)

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        return self.embed(questions)


def _unit_vector(text: str, size: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    raw = [digest[i % len(digest)] - 127.5 for i in range(size)]
    norm = math.sqrt(sum(value * value for value in raw)) or 1.0
    return [value / norm for value in raw]


# --- the use-case services over the fakes (as cosmic's bootstrap_test_app) -----------------------------------


@dataclass
class Fakes:
    """One set of fakes, and the five use-case services built over them as the Container builds them."""

    metadata: FakeFileMetadataStore = field(default_factory=FakeFileMetadataStore)
    content: FakeContentStore = field(default_factory=FakeContentStore)
    ledger: FakeUsageLedger = field(default_factory=FakeUsageLedger)
    workflow: RecordingWorkflow = field(default_factory=RecordingWorkflow)
    embedder: FakeEmbedder = field(default_factory=FakeEmbedder)
    max_bytes: int = 1024 * 1024

    def files(self) -> FileService:
        return FileService(
            self.metadata, self.content, ClaimsAuthorizationPolicy(), UploadLimits(max_bytes=self.max_bytes)
        )

    def completion(
        self, *, stale_after: timedelta = timedelta(hours=1), scanning: MalwareScanning | None = None
    ) -> UploadCompletion:
        return UploadCompletion(
            self.metadata,
            self.metadata,
            self.content,
            self.workflow,
            scanning or UnavailableMalwareScanning("no malware scanner in these tests"),
            stale_after=stale_after,
        )

    def indexer(self, embedder: EmbeddingProvider | None = None) -> Indexer:
        return Indexer(self.knowledge, embedder or self.embedder, Py3LangidDetector(), max_chunk_tokens=64)

    def pipeline(
        self,
        *,
        extractor: Extractor | None = None,
        indexer: Indexer | None = None,
        spend: SpendLimits | None = None,
        retry: StepRetry | None = None,
        sleep: Callable[[float], None] = lambda seconds: None,
        situations: ChunkSituations | None = None,
    ) -> IngestionPipeline:
        return IngestionPipeline(
            self.metadata,
            self.metadata,
            self.content,
            extractor or text_extractor(self.max_bytes),
            indexer or self.indexer(),
            recognizers=Recognizers(ocr=UnavailableOcr("no OCR in unit tests"), vision=UnavailableVision("none")),
            ledger=self.ledger,
            sleep=sleep,
            spend=spend,
            retry=retry,
            situations=situations,
        )

    def reader(
        self, *, summarizer: DocumentSummarizer | None = None, limits: TenantLimits | None = None
    ) -> DocumentReader:
        return DocumentReader(
            self.files(),
            ExtractedDocuments(self.metadata, self.metadata, self.content),
            attempts=self.metadata,
            workflow=self.workflow,
            ocr=UnavailableOcr("no OCR in unit tests"),
            summarizer=summarizer or UnavailableSummarizer("no summarizer in unit tests"),
            policy=ClaimsAuthorizationPolicy(),
            spend=SpendLimits(self.ledger, self.metadata, limits or TenantLimits()),
            metering=Metering(self.ledger),
        )

    def __post_init__(self) -> None:
        self.knowledge = FakeKnowledgeStore(self.metadata)
        self.progress = FakeSweepProgress(self.metadata)

    def reconciler(
        self,
        thresholds: ReconcileThresholds | None = None,
        *,
        budget: ReconcileBudget | None = None,
        clock: Callable[[], float] | None = None,
        stale_after: timedelta = timedelta(hours=1),
        from_the_top: bool = False,
    ) -> Reconciler:
        return Reconciler(
            self.metadata,
            self.metadata,
            self.content,
            self.completion(stale_after=stale_after),
            thresholds or ReconcileThresholds(),
            progress=self.progress,
            budget=budget or ReconcileBudget(),
            clock=clock or time.monotonic,
            from_the_top=from_the_top,
        )

    def reindexer(self, embedder: EmbeddingProvider | None = None) -> Reindexer:
        documents = ExtractedDocuments(self.metadata, self.metadata, self.content)
        return Reindexer(
            self.metadata,
            self.metadata,
            self.knowledge,
            documents,
            workflow=self.workflow,
            embedder=embedder or self.embedder,
            policy=ClaimsAuthorizationPolicy(),
        )


def text_extractor(max_bytes: int) -> Extractor:
    """The real Extractor (a sandboxed child per document) over the text parsers only."""
    return Extractor(
        [PlainTextParser(), MarkdownParser()],
        ExtractionLimits(max_bytes=max_bytes, max_pages=50, timeout_seconds=30),
        memory_limit_bytes=None,
    )


def principal(tenant: str = "acme", *collections: str, role: Role = Role.ADMIN) -> Principal:
    """A caller holding `role` (by default every role: most tests are about something else) in `collections`."""
    return with_role(tenant, f"{tenant}-user", collections or ("docs",), role)


class FakeSummarizer:
    """Fake DocumentSummarizer, a scripted model: one sentence per non-empty block (up to the limit) quoting the
    block's first words, plus one citing a block that was never sent, all through the real validation. With
    `refusal` set it refuses as the Bedrock adapter does (throttled, no valid citation). Each summary reports
    `input_tokens` and `output_tokens`, as Converse's usage does."""

    def __init__(self, refusal: str | None = None, *, input_tokens: int = 0, output_tokens: int = 0) -> None:
        self._refusal = refusal
        self._tokens = (input_tokens, output_tokens)
        self.calls: list[list[str]] = []

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready("fake-summarizer")

    def summarize(self, blocks: Sequence[str], *, max_sentences: int) -> GeneratedSummary:

        self.calls.append(list(blocks))
        if self._refusal is not None:
            raise CapabilityUnavailable("summarizer", self._refusal)
        drafts = [
            DraftSentence(
                text=f"It says: {' '.join(text.split()[:6])}.",
                citations=(DraftCitation(block_indexes=(index,), quotes=(" ".join(text.split()[:6]),)),),
            )
            for index, text in enumerate(blocks)
            if text.strip()
        ][: max_sentences - 1]
        drafts.append(
            DraftSentence(
                text="An invented finding.", citations=(DraftCitation(block_indexes=(10**6,), quotes=("x",)),)
            )
        )
        checked = validated_summary(drafts, blocks, max_sentences=max_sentences)
        return GeneratedSummary(
            sentences=checked.sentences,
            model="fake-summarizer",
            dropped=checked.dropped,
            blocks_sent=len(blocks),
            input_tokens=self._tokens[0],
            output_tokens=self._tokens[1],
        )


class FakeSituator:
    """Fake ChunkSituator, a scripted model: "The part of <the document's title line> about <the chunk's first
    words>." for each chunk, with `input_tokens` and `output_tokens` per call as Converse's usage says. With
    `refusal` set it refuses every call as the Bedrock adapter does; `refuse_containing` refuses only the chunks
    whose text holds it (a model failing on some)."""

    def __init__(
        self,
        refusal: str | None = None,
        *,
        refuse_containing: str | None = None,
        input_tokens: int = 900,
        output_tokens: int = 30,
        model_id: str = "fake.situator-v1",
    ) -> None:
        self._refusal = refusal
        self._refuse_containing = refuse_containing
        self._tokens = (input_tokens, output_tokens)
        self._model_id = model_id
        self._lock = threading.Lock()
        self.calls: list[SituationRequest] = []

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def prompt_version(self) -> str:
        return "fake-1"

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready("fake-situator")

    def situate(self, request: SituationRequest) -> GeneratedSituation:
        with self._lock:
            self.calls.append(request)
        if self._refusal is not None:
            raise CapabilityUnavailable("chunk_context", self._refusal)
        if self._refuse_containing is not None and self._refuse_containing in request.chunk:
            raise CapabilityUnavailable("chunk_context", f"the model refused a chunk holding {self._refuse_containing}")
        title = request.document.splitlines()[0].removeprefix("Title: ") if request.document else "the document"
        words = " ".join(request.chunk.split()[:4])
        return GeneratedSituation(
            text=f"The part of {title} about {words}.",
            model=self._model_id,
            input_tokens=self._tokens[0],
            output_tokens=self._tokens[1],
        )


class FakeSituationCache:
    """Fake SituationCache: sentences per (tenant, file, model, key); `unreadable` makes reads fail as an outage."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, UUID, str, str], str] = {}
        self.unreadable = False

    def find(self, tenant_id: str, file_id: UUID, model: str, keys: Sequence[str]) -> dict[str, str]:
        if self.unreadable:
            raise ConnectionError("the database is unreachable")
        return {
            key: self.rows[(tenant_id, file_id, model, key)]
            for key in keys
            if (tenant_id, file_id, model, key) in self.rows
        }

    def keep(self, tenant_id: str, file_id: UUID, model: str, situations: Mapping[str, str]) -> None:
        for key, text in situations.items():
            self.rows.setdefault((tenant_id, file_id, model, key), text)
