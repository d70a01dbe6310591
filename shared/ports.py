"""Ports: every managed service Quire uses sits behind one of these Protocols.

Each port has an AWS adapter and an embedded local adapter (docs/architecture.md, "Ports and their
adapters"); services take ports
as arguments and never import an SDK. The docstrings are the contracts adapters must keep.
"""

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

from shared.domain.answers import AnswerFeedback, EvidenceBlock, GeneratedDraft, StoredAnswer
from shared.domain.artifacts import ArtifactRecord, ArtifactVersionRecord, NewArtifactVersion
from shared.domain.audit import ToolCall, ToolCallRecord
from shared.domain.auth import Principal
from shared.domain.capabilities import CapabilityStatus
from shared.domain.document import ExtractionLimits, ExtractionOutcome
from shared.domain.exports import (
    ExportFormat,
    ExportRecord,
    NewExport,
    RenderedFile,
    RenderJob,
    RenderLimits,
    RenderRequest,
)
from shared.domain.files import (
    ExtractionSummary,
    FailureReason,
    FileRecord,
    FileVersionRecord,
    MalwareScan,
    NewVersion,
    PresignedUpload,
    ProcessingState,
    SignedRead,
    StoredObject,
    VersionState,
)
from shared.domain.knowledge import CollectionCoverage, IndexedChunk, IndexingResult, IndexWrite, RankedChunk
from shared.domain.limits import Spend
from shared.domain.page_images import PageOutcome
from shared.domain.pdf_tools import PagePick, PdfInput
from shared.domain.proposals import AppliedProposal, NewReplacement, ReplacementRecord, ReplacementState
from shared.domain.recognition import ImageDescription, RecognitionJob, RecognitionResult, Transcript
from shared.domain.search import ChunkSnapshot, SearchFilters
from shared.domain.summaries import GeneratedSummary
from shared.domain.titles import DirectChunk, NamedTitle
from shared.domain.usage import RequestKind, Usage, UsageTotal
from shared.domain.workflow import ProcessVersion, StartOutcome

MAX_SIGNED_READ_LIFETIME = timedelta(minutes=15)


class FileContentStore(Protocol):
    """Bytes of originals and derived objects (S3; moto locally). Originals are never overwritten.

    Keys are the platform's business: they never reach a client or a model.
    """

    def put(self, key: str, body: bytes, *, content_type: str) -> StoredObject:
        """Store bytes as a new version of `key` and report the version the store assigned. The object's
        Content-Type is `domain.uploads.stored_content_type(content_type)`: never one a browser renders as a page."""
        ...

    def get(self, key: str, *, version_id: str | None = None, max_bytes: int) -> bytes:
        """Read at most `max_bytes`; a larger object raises ValueError naming the limit (never truncates), one
        that is not there (a deleted version, say) raises `domain.errors.StoredBytesMissing` (a FileNotFoundError)."""
        ...

    def get_versioned(self, key: str, *, max_bytes: int) -> tuple[bytes, str | None]:
        """As `get` of the newest version, with that version's id (None where the store keeps no versions)."""
        ...

    def read_range(self, key: str, *, version_id: str | None, start: int, length: int) -> bytes:
        """`length` bytes from `start` (fewer at the end of the object); a missing object as `get`."""
        ...

    def head(self, key: str, *, version_id: str | None = None) -> StoredObject | None:
        """What is stored at `key` (and version), or None when nothing is."""
        ...

    def signed_read(
        self,
        key: str,
        *,
        version_id: str | None,
        filename: str,
        lifetime: timedelta,
        media_type: str | None = None,
    ) -> SignedRead | None:
        """A presigned GET with an attachment disposition and a safe content type.

        The content type is `domain.uploads.signed_read_type(media_type)`: SAFE_DOWNLOAD_TYPE when None, else one
        of SIGNED_READ_TYPES (a page image Quire drew, which a viewer shows in an <img>); any other type raises
        ValueError before anything is signed. The disposition is an attachment whatever the type. The lifetime is
        clamped to MAX_SIGNED_READ_LIFETIME whatever is asked. An adapter that cannot sign returns None and the
        caller proxies the bytes; it never invents a URL.
        """
        ...

    def delete_version(self, key: str, version_id: str) -> None:
        """Remove one version; deleting what is already gone is not an error."""
        ...

    def delete_all_versions(self, key: str) -> int:
        """Remove every version (and delete marker) of `key`; returns how many were removed."""
        ...

    def withdraw(self, objects: Sequence[tuple[str, str | None]]) -> int:
        """End access to these (key, object version) pairs now, presigned GETs already issued included.

        Each is first tagged `quire:deleted=true` (on AWS a bucket policy denies GetObject on tagged objects, so
        a link dies even if the removal fails), then removed; an object with no version id loses every version.
        What is already gone is not an error. Returns how many pairs were removed. One call per object at
        least: callers bound how many they pass.
        """
        ...

    def signed_upload(self, key: str, *, content_type: str, max_bytes: int, lifetime: timedelta) -> PresignedUpload:
        """A browser POST whose policy pins exactly `key`, exactly `stored_content_type(content_type)` and
        1..`max_bytes` bytes.

        A store may not enforce its own policy (moto does not): whoever handles the stored object
        verifies what landed.
        """
        ...

    def object_versions(self, prefix: str) -> Iterator[StoredObject]:
        """Every object version holding bytes under `prefix` (delete markers excluded), page by page."""
        ...


class FileCatalog(Protocol):
    """Files and their versions as the upload order and deletion see them (one row per file and one per
    version in PostgreSQL, tenant-scoped and RLS-forced): record a `pending` version, find and list files,
    `pending → stored` or `rejected`, and deletion (every live version to `deleting` in one statement, then
    `deleted` once the bytes are gone).

    Every method takes the tenant explicitly, and the adapter both sets it on the transaction (for RLS) and
    filters by it: one tenant never sees another's rows. Transitions are compare-and-set: they return
    whether *this* call made the change, so duplicates do nothing.
    """

    def create_version(self, new: NewVersion, *, new_file: bool) -> None:
        """Record a `pending` version (and its file when `new_file`) before any byte is uploaded."""
        ...

    def declared_bytes_since(self, tenant_id: str, since: datetime) -> int:
        """The declared sizes of the tenant's versions created at or after `since`, whatever became of them
        (a ticket never used, a rejected or deleted upload counts: it was signed): the daily upload limit."""
        ...

    def get_file(self, tenant_id: str, file_id: UUID, *, include_gone: bool = False) -> FileRecord | None:
        """The file with all its versions; None when it does not exist or has no live version left."""
        ...

    def list_files(
        self,
        tenant_id: str,
        collections: frozenset[str],
        *,
        collection_id: str | None,
        limit: int,
        after: tuple[datetime, UUID] | None,
    ) -> tuple[list[FileRecord], bool]:
        """Files with a live version in `collections`, newest first, after the keyset `after`.

        Returns the page and whether more files follow it.
        """
        ...

    def find_version(self, tenant_id: str, version_id: UUID) -> tuple[FileRecord, FileVersionRecord] | None:
        """A version in any state, with its file."""
        ...

    def mark_stored(self, tenant_id: str, version_id: UUID, *, byte_size: int, storage_version_id: str | None) -> bool:
        """pending → stored."""
        ...

    def mark_rejected(
        self, tenant_id: str, version_id: UUID, *, reason: str, byte_size: int, storage_version_id: str | None
    ) -> bool:
        """pending → rejected, with the reason the caller will read."""
        ...

    def mark_deleted(self, tenant_id: str, version_id: UUID) -> bool:
        """deleting → deleted, once the bytes are gone."""
        ...

    def begin_delete_file(self, tenant_id: str, file_id: UUID) -> int:
        """Move every live version to `deleting` in one statement (its chunks leave search in the same transaction)."""
        ...

    def begin_delete_collection(self, tenant_id: str, collection_id: str) -> int:
        """The same for every file of a collection, a pending upload included."""
        ...

    def record_malware_scan(
        self, tenant_id: str, version_id: UUID, verdict: MalwareScan, *, storage_version_id: str | None
    ) -> FileVersionRecord | None:
        """A scanner's verdict on the version's object, recorded while the version is pending or stored (and,
        where `storage_version_id` is given and the row has one, only for that object). A verdict that rejects
        (MalwareScan.rejection) also moves it to `rejected` with that reason, unless processing has begun.
        Returns the version as it is now, or None when the verdict was not for a live version's object."""
        ...

    def deleting_versions_with_bytes(
        self, tenant_id: str, *, file_id: UUID | None = None, collection_id: str | None = None, limit: int
    ) -> tuple[list[FileVersionRecord], int]:
        """Versions of the file (or the collection) in `deleting` that were stored, so links to their bytes may
        be out: at most `limit`, newest first, and how many there are in all."""
        ...

    def move_file(self, tenant_id: str, file_id: UUID, *, from_collection: str, to_collection: str) -> bool:
        """Compare-and-set: while the file is live and still in `from_collection`, put it in `to_collection`, in
        one transaction with every chunk's subjects, the keyword statistics of both collections and the file's
        replacements, so no reader ever sees it in both or in neither. True when this call moved it."""
        ...


class ProcessingAttempts(Protocol):
    """The processing state of a stored version, one attempt at a time: queued as a new attempt, moved step by
    step by that attempt only (a superseded attempt changes nothing), ended `extracted` → … → `indexed`,
    `failed` (the document's problem) or `interrupted` (the infrastructure's). Compare-and-set throughout,
    tenant-scoped as FileCatalog is."""

    def queue_processing(self, tenant_id: str, version_id: UUID, *, stale_before: datetime) -> int | None:
        """not_started (or in progress but silent since `stale_before`) → queued as a new attempt; returns
        its number, or None when processing is already under way or done."""
        ...

    def queue_rescan(self, tenant_id: str, version_id: UUID) -> int | None:
        """indexed, failed or interrupted → queued as a new attempt (a rescan); None while processing is under way."""
        ...

    def queue_reindex(self, tenant_id: str, version_id: UUID) -> int | None:
        """indexed → queued as a new attempt (a re-index of its stored document); None otherwise, so a version
        already queued or under way is never queued twice."""
        ...

    def release_processing(
        self, tenant_id: str, version_id: UUID, *, attempt: int, back_to: ProcessingState = ProcessingState.NOT_STARTED
    ) -> None:
        """queued → not_started, when the workflow could not be asked at all."""
        ...

    def move_processing(
        self,
        tenant_id: str,
        version_id: UUID,
        *,
        attempt: int,
        to: ProcessingState,
        expected: Iterable[ProcessingState],
    ) -> bool:
        """Compare-and-set on the processing state of a stored version, for the current attempt only."""
        ...

    def heartbeat(self, tenant_id: str, version_id: UUID, *, attempt: int, state: ProcessingState) -> bool:
        """Whether this attempt still holds the version in `state`, saying so on the row (its `updated_at`):
        a long OCR job or embed Map does not look stalled to the sweep."""
        ...

    def record_extraction(
        self,
        tenant_id: str,
        version_id: UUID,
        summary: ExtractionSummary,
        *,
        attempt: int,
        awaiting_recognition: bool = False,
    ) -> bool:
        """extracting (or recognizing) → extracted, with the summary, what OCR and vision did, and the derived
        document's key (current attempt only); → recognizing instead while OCR is still to read pages."""
        ...

    def record_failure(
        self, tenant_id: str, version_id: UUID, *, reason: FailureReason, detail: str, attempt: int
    ) -> bool:
        """In progress → failed, with a reason from the closed set (current attempt only)."""
        ...

    def record_interruption(self, tenant_id: str, version_id: UUID, *, detail: str, attempt: int) -> bool:
        """In progress → interrupted: the infrastructure failed this attempt (current attempt only)."""
        ...


class ReconciliationQueries(Protocol):
    """What the sweeps walk: the tenants, then each tenant's versions waiting in a state, page by page."""

    def tenant_ids(self) -> list[str]:
        """Every tenant that ever uploaded: the sweeps work one tenant transaction at a time."""
        ...

    def versions_in_states(
        self,
        tenant_id: str,
        states: Iterable[VersionState],
        *,
        updated_before: datetime,
        after: tuple[datetime, UUID] | None = None,
        limit: int = 500,
    ) -> list[tuple[UUID, FileVersionRecord]]:
        """(file id, version) pairs waiting in one of `states` since before `updated_before`, oldest first.

        Keyset-paged on (updated_at, version_id) after `after`: callers walk every page.
        """
        ...

    def versions_awaiting_processing(
        self, tenant_id: str, *, cutoff: datetime, after: tuple[datetime, UUID] | None = None, limit: int = 500
    ) -> list[tuple[UUID, FileVersionRecord]]:
        """Stored versions whose processing was never asked for, or has not finished, since `cutoff`."""
        ...

    def versions_given_up(
        self, tenant_id: str, *, cutoff: datetime, after: tuple[datetime, UUID] | None = None, limit: int = 500
    ) -> list[tuple[UUID, FileVersionRecord]]:
        """Unprocessed versions past `cutoff` whose attempts are spent: the sweep will not ask again."""
        ...


class SweepProgress(Protocol):
    """Where each tenant's sweeps stopped, kept between runs (the schedule starts each run with no state), so a
    run resumes a tenant where its turn ran out and starts with the tenants visited least recently."""

    def tenants_in_turn(self) -> list[str]:
        """Every tenant, the one whose turn is longest ago (or never was) first."""
        ...

    def resume_point(self, tenant_id: str, sweep: str) -> tuple[datetime, UUID] | None:
        """The keyset (updated_at, version_id) `sweep` stopped after in this tenant, None to start at the top."""
        ...

    def save_resume_point(self, tenant_id: str, sweep: str, after: tuple[datetime, UUID] | None) -> None:
        """Record where `sweep` stopped (None: it reached the end, so the next turn starts at the top)."""
        ...

    def end_turn(self, tenant_id: str) -> None:
        """The tenant had its turn now: it goes to the back of `tenants_in_turn`."""
        ...


class HealthProbe(Protocol):
    """Readiness: whether the metadata database answers."""

    def ping(self) -> None:
        """Raise if the database cannot be reached as the application role."""
        ...


class FileMetadataStore(FileCatalog, ProcessingAttempts, ReconciliationQueries, HealthProbe, Protocol):
    """The four ports above over the same rows (the Container's `file_metadata`, one adapter for all of them).
    Services take the narrow ports they use; a service that needs two is given this store as both."""


class KnowledgeStore(Protocol):
    """Chunks of indexed file versions. Only the newest indexed version of a file has chunks."""

    def replace_chunks(
        self,
        tenant_id: str,
        version_id: UUID,
        chunks: Iterable[IndexedChunk],
        result: IndexingResult,
        *,
        attempt: int | None,
    ) -> IndexWrite:
        """In one transaction: check the version is still stored and held (by processing `attempt` in
        `indexing`, or, for a re-index with attempt None, still `indexed`), remove every chunk of the
        file, insert these (consumed as they are written: an iterator is never held whole), and record
        `result` on the version (processing becomes `indexed`). A file being deleted, or a version
        superseded by a newer indexed one, gets no chunks. The chunks carry the file's collection as it is at
        this write (read under the file's lock), not the one they were made with: a file moved while it was
        processed is indexed where it is now."""
        ...

    def versions_to_reindex(
        self, tenant_id: str, collections: frozenset[str] | None, embedding_model: str, limit: int
    ) -> list[tuple[UUID, UUID]]:
        """(file, version) of indexed versions with chunks embedded by another model or not at all; derived
        from what is stored, so an interrupted re-index resumes with no cursor."""
        ...

    def coverage(
        self, tenant_id: str, collections: frozenset[str], embedding_model: str
    ) -> list[CollectionCoverage]: ...

    def snapshots(self, tenant_id: str, collections: frozenset[str], chunk_ids: Sequence[str]) -> list[ChunkSnapshot]:
        """The stored chunks among `chunk_ids` in `collections` (a hit outside them is never hydrated)."""
        ...


class VectorIndex(Protocol):
    """Nearest neighbours over chunk embeddings (pgvector HNSW with iterative scan)."""

    def nearest(
        self,
        tenant_id: str,
        collections: frozenset[str],
        embedding: Sequence[float],
        *,
        embedding_model: str,
        limit: int,
        filters: SearchFilters,
    ) -> list[RankedChunk]:
        """Only chunks of `collections` (required; empty means none) and `filters`, embedded by
        `embedding_model`, are candidates, filtered inside the scan before ranking. Scores are
        (cosine + 1) / 2, best first; the caller applies the floor."""
        ...


class KeywordIndex(Protocol):
    """Lexical ranking over the same chunks: BM25 with statistics kept per tenant and collection."""

    def search(
        self,
        tenant_id: str,
        collections: frozenset[str],
        query: str,
        *,
        limit: int,
        filters: SearchFilters,
        k1: float,
        b: float,
    ) -> list[RankedChunk]:
        """Only chunks of `collections` (required) and `filters` are candidates; stopwords are stripped
        from `query`, identifiers (ERR-4021, Q3-2026) kept whole; any query term may match (OR)."""
        ...


class TitleIndex(Protocol):
    """Indexed documents by their complete titles (first heading, filename without extension), for the title
    lane: written and removed with a version's chunks by the KnowledgeStore."""

    def named(
        self, tenant_id: str, collections: frozenset[str], keys: Sequence[str], *, filters: SearchFilters
    ) -> list[NamedTitle]:
        """The documents of `collections` (required), under `filters`, with a title whose key is one of `keys`
        (shared/domain/titles.py), found by key equality: never a scan of the titles."""
        ...

    def direct_chunks(
        self,
        tenant_id: str,
        collections: frozenset[str],
        version_ids: Sequence[str],
        *,
        candidates: Iterable[str],
        embedding: Sequence[float] | None,
        embedding_model: str,
        per_document: int,
    ) -> list[DirectChunk]:
        """The `candidates` (chunk ids the lanes found) that belong to `version_ids`, `found`; then, for each
        version none of whose chunks is a candidate, its best `per_document` chunks (nearest to `embedding`
        when given and the version is embedded with `embedding_model`, else its first), in `version_ids`
        order."""
        ...


class Reranker(Protocol):
    """Reorders fused candidates (the built-in identifier booster; a cross-encoder where one runs)."""

    def rerank(self, query: str, candidates: Sequence[tuple[str, str]]) -> list[str]:
        """(chunk id, text) in fusion order → chunk ids best first. Returning nothing (or ids it was not
        given) means "no opinion": retrieval keeps fusion order rather than an empty result."""
        ...


class Workflow(Protocol):
    """Runs the ingestion pipeline for one stored version (Step Functions; an in-process runner locally)."""

    def start(self, request: ProcessVersion) -> StartOutcome:
        """Idempotent per version: a second start of the same version reports ALREADY_STARTED."""
        ...


class DocumentParser(Protocol):
    """Bytes of one of `media_types` → a located block list, within `limits`.

    A document problem (malformed, encrypted, too many pages, …) is a returned ExtractionFailure, never
    an exception; text past the limits is cut and the document says so. The wall-clock limit is
    enforced by the caller, from outside: a parser stuck in a loop cannot check its own clock.
    """

    media_types: frozenset[str]

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome: ...


class CapabilityPort(Protocol):
    def capability(self) -> CapabilityStatus:
        """Whether calls will produce real results here, and if not, why."""
        ...


class EmbeddingProvider(CapabilityPort, Protocol):
    """Text → vectors of a fixed dimension from one named model (Bedrock Titan v2; a local MiniLM).

    Chunks are sized in the model's own tokens (`count_tokens`, `max_tokens`), so a chunk is never
    silently truncated by the model it was cut for.
    """

    @property
    def model_id(self) -> str:
        """Names the model and everything that changes its vectors (e.g. `amazon.titan-embed-text-v2:0@384`)."""
        ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int:
        """The longest text the model reads whole (room for its own special tokens already taken off)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens `text` costs this model, special tokens excluded, so the counts of parts add up (an upper
        estimate where the model publishes no tokenizer)."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order.

        Raises CapabilityUnavailable when there is no model, EmbeddingFailed when the model did not
        answer (after its own retries); the caller keeps the chunks for keyword search and says so.
        """
        ...

    def usage(self, tokens: int) -> Usage:
        """How embedding texts of `tokens` tokens (by `count_tokens`) is recorded in the usage ledger."""
        ...


@dataclass(frozen=True)
class OcrSource:
    """The original a page range is read from: engines that read storage themselves (Textract) use the
    key and version, engines that need the bytes (RapidOCR) call `read`, so nobody reads what they do not use."""

    media_type: str
    # 1-based pages of a PDF or multi-page TIFF to read, ascending; None reads every page (an image).
    pages: tuple[int, ...] | None
    # Pages in the original when known: an engine reading all of them can use the original as it is.
    page_count: int | None
    storage_key: str
    storage_version_id: str | None
    read: Callable[[], bytes]
    # Names this read (version and attempt): a re-delivered start is the same read and gets the same job;
    # a real re-run (a new attempt, a rescan) gets a new one.
    run_id: str = ""


class OcrProvider(CapabilityPort, Protocol):
    """Pixels → lines with boxes and a required confidence, tables where the engine finds them
    (Textract; RapidOCR locally). Transcribes only: it never interprets what the page means."""

    def start(self, source: OcrSource) -> RecognitionResult | RecognitionJob:
        """Read `source`'s pages: the result when the engine answers at once, or a job to `collect` later
        (the workflow waits between polls: no function sleeps on a job).

        Raises RecognitionFailed when the engine refuses the document (unreadable, unsupported, too
        large), CapabilityUnavailable when there is no engine; anything else is the infrastructure's
        failure and worth a retry.
        """
        ...

    def collect(self, job: RecognitionJob) -> RecognitionResult | None:
        """The finished job's result (pages numbered as in the original), or None while it runs.
        Raises RecognitionFailed when the job failed on the document."""
        ...

    def discard(self, job: RecognitionJob) -> None:
        """Nobody will collect `job` (its attempt was superseded, its file deleted): free what it holds,
        such as a copy of pages staged for it. Never raises."""
        ...


class VisionProvider(CapabilityPort, Protocol):
    """Image → a labelled description (Bedrock Converse). Locally there is none: never fabricate one."""

    def describe(self, image: bytes, media_type: str) -> ImageDescription:
        """Raises CapabilityUnavailable when no image-capable model is configured, VisionFailed when the
        model refuses this image; anything else is worth a retry."""
        ...


class UsageLedger(Protocol):
    """Metered calls per tenant: one row per (file version, step, attempt), so a step delivered twice
    records once while a real re-run (a new attempt, a rescan) records what it really cost again; and the model
    calls made inside requests, which have no file version, one row per (call, collection)."""

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
        """True when this call added the row (False: already recorded)."""
        ...

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
        """A model call made inside a request (no file version: an answer, a tool's summary) by `subject`, its
        tokens shared out over the `collections` it was spent for (shared/domain/usage.py collection_shares).
        With `usage_id` (e.g. the answer's id) a second record of the same call adds nothing; without, one is
        drawn. Raises ValueError for no collection, or pages or images in `usage`."""
        ...

    def totals(
        self, tenant_id: str, collections: frozenset[str], *, since: datetime, until: datetime
    ) -> list[UsageTotal]:
        """Summed per (step, provider, operation, model) over versions of `collections` in [since, until), and
        the request usage booked to `collections` with its kind as the step: a share booked to a collection
        outside `collections` is never counted, and a request counts as one call however many shares it has."""
        ...

    def spent_since(self, tenant_id: str, since: datetime) -> Spend:
        """The tenant's OCR pages, images described and embedding tokens (the input tokens of the embed and
        re-embed steps), and generation tokens (input plus output of request usage), recorded at or after
        `since`, in every collection, priced or not: the daily limits' source of truth."""
        ...

    def ocr_runs_since(self, tenant_id: str, file_id: UUID, since: datetime) -> list[datetime]:
        """When each OCR run of the file's versions recorded at or after `since` was recorded, oldest first."""
        ...


class TranscriptionProvider(CapabilityPort, Protocol):
    """Audio/video → text (Amazon Transcribe). Locally there is none."""

    def transcribe(self, content: bytes, media_type: str) -> Transcript: ...


class MalwareScanning(CapabilityPort, Protocol):
    """Whether a malware scanner checks every upload before it is processed (GuardDuty Malware Protection for
    S3 on AWS, when the environment turns it on). Its verdicts arrive as events; this port says only whether
    processing must wait for one. Locally there is none, and files are processed unscanned (and say so)."""

    @property
    def gates_processing(self) -> bool: ...


class Generator(CapabilityPort, Protocol):
    """A structured answer draft from retrieved evidence (Bedrock Converse). Absent → evidence-only answers.

    The evidence is document text and untrusted: the adapter fences every block as data and its system rules
    forbid following instructions inside it. The draft it returns is not trusted either: the answer service
    validates every claim against the evidence it sent (shared/domain/grounding.py).
    """

    @property
    def model_id(self) -> str:
        """The model that drafts (part of the answer cache key)."""
        ...

    @property
    def prompt_version(self) -> str:
        """Changes whenever the instructions change (part of the answer cache key)."""
        ...

    def generate(self, question: str, evidence: Sequence[EvidenceBlock]) -> GeneratedDraft:
        """Raise CapabilityUnavailable for every way of not getting a draft (no model, throttled, timed out,
        a response that is not the requested structure), with a sentence for the caller."""
        ...


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


class TokenVerifier(Protocol):
    """Bearer token → verified claims, in the shape API Gateway's JWT authorizer hands the Lambda.

    On AWS the authorizer does this before the Lambda runs; locally the HTTP adapter calls this port.
    """

    def verify(self, token: str) -> Mapping[str, object]:
        """Return the claims, or raise Unauthenticated (bad signature, expired, wrong issuer/audience)."""
        ...


class AuthorizationPolicy(Protocol):
    """Entitlement: a caller sees a file only through a collection it is entitled to.

    Required by every service that reads tenant content; an unentitled caller must be indistinguishable
    from one asking for something that does not exist.
    """

    def readable_collections(self, principal: Principal) -> frozenset[str]: ...

    def administered_collections(self, principal: Principal) -> frozenset[str]:
        """The collections the principal may administer (a subset of the readable ones)."""
        ...

    def ensure_can_read(self, principal: Principal, collection_id: str) -> None:
        """Raise NotFound (not Forbidden) when the principal may not read the collection."""
        ...

    def ensure_can_write(self, principal: Principal, collection_id: str) -> None:
        """Raise NotFound when the principal may not see the collection at all, Forbidden (naming the role)
        when it may read but not write there. Every write entry point asks this, once."""
        ...

    def ensure_can_administer(self, principal: Principal, collection_id: str) -> None:
        """As ensure_can_write, for the admin role: deleting a collection, approving a replacement,
        re-indexing."""
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


class ArtifactRenderer(Protocol):
    """Blocks (with their citations) → the bytes of one format, deterministically: the same request always
    gives the same bytes. Content that cannot be rendered within `limits` raises RenderFailed with a sentence."""

    format: ExportFormat

    def render(self, request: RenderRequest, limits: RenderLimits) -> RenderedFile: ...


class PageRasterizer(Protocol):
    """One page of a PDF or an image drawn as a PNG of the page as it is displayed, sized by
    `domain.page_images.fit_page` and recording the document's page count in its text chunk
    (`PAGE_COUNT_KEYWORD`). Inputs are attacker-controlled: callers run it in a bounded child (its class is
    built again there with no arguments). What the bytes hold (no such page, a damaged or protected file, more
    pixels than allowed) is an answer, never an exception."""

    media_types: frozenset[str]

    def rasterize(self, content: bytes, media_type: str, page: int) -> PageOutcome: ...


class PdfOperations(Protocol):
    """Page-level work on PDFs (pypdf). Inputs are attacker-controlled: callers run these in a bounded child.
    A problem with an input (encrypted, malformed, no such page) raises PdfInputProblem naming it."""

    def compose(
        self, inputs: Sequence[PdfInput], picks: Sequence[PagePick], *, outline: bool, max_pages: int
    ) -> tuple[bytes, int]:
        """The picked pages in order as one PDF (and its page count); with `outline`, an outline entry per pick
        naming its input."""
        ...

    def watermark(self, source: PdfInput, text: str, *, opacity: float, max_pages: int) -> tuple[bytes, int]:
        """`text` across every page, upright as each page is displayed (rotated pages included)."""
        ...


class ToolCallAudit(Protocol):
    """The audit record of agent tool calls, tenant-scoped and RLS-forced: appended, never changed or removed
    (the application role may only INSERT and SELECT)."""

    def record(self, call: ToolCall) -> None:
        """Append the call (its call id is made here); raises when it could not be written."""
        ...

    def recent(
        self,
        tenant_id: str,
        *,
        visible_collections: frozenset[str],
        limit: int,
        before: tuple[datetime, UUID] | None,
    ) -> tuple[list[ToolCallRecord], bool]:
        """The tenant's calls newest first (by called_at, then call_id), from the one after `before`'s keyset:
        only those whose collection_ids all lie within `visible_collections` (a call with none, refused before
        any collection was known, is visible too: it reveals no collection's content). The page, and whether
        more follow."""
        ...


class DocumentSummarizer(CapabilityPort, Protocol):
    """One document's blocks → a summary a model wrote from them alone, every sentence citing the blocks that
    bear it out (Bedrock Converse with citations). Locally there is none: summaries are extractive outlines."""

    def summarize(self, blocks: Sequence[str], *, max_sentences: int) -> GeneratedSummary:
        """At most `max_sentences` sentences, each citing indexes into `blocks` with the spans it quoted: only
        what `validated_summary` (shared/domain/summaries.py) keeps. The summary says how many of `blocks` were
        sent (an adapter bounds what one call reads).

        Raises CapabilityUnavailable when it cannot: no model, throttled or timed out past its retries, the
        model refused or a guardrail withheld the answer, or no sentence of it survived validation. It never
        returns an invented or unchecked summary; the caller falls back to an extractive outline and says why.
        """
        ...
