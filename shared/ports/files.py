"""Files and their versions: the bytes, the metadata rows and their states, the sweeps over them, and the
workflow that processes a stored version.

The docstrings are the contracts adapters keep (docs/architecture.md, "Ports and their adapters").
"""

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

from shared.domain.files import (
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
from shared.domain.metadata import MetadataChange
from shared.domain.metadata_filter import MetadataFilter
from shared.domain.metadata_schema import MetadataSchema
from shared.domain.search import SearchFilters
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

    def signed_upload(
        self, key: str, *, content_type: str, max_bytes: int, lifetime: timedelta, sha256: str | None = None
    ) -> PresignedUpload:
        """A browser POST whose policy pins exactly `key`, exactly `stored_content_type(content_type)` and
        1..`max_bytes` bytes, and with `sha256` (hex) the bytes' checksum, which S3 verifies against them.

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
        """The file with all its versions, each with `duplicate_of` (an earlier stored version in the file's collection
        with the same content_sha256); None when it does not exist or has no live version left."""
        ...

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
        """Files with a live version in `collections`, newest first, after the keyset `after`.

        Returns the page and whether more files follow it.
        """
        ...

    def facets(
        self,
        tenant_id: str,
        collections: frozenset[str],
        keys: Sequence[str],
        *,
        where: MetadataFilter | None = None,
        filters: SearchFilters | None = None,
    ) -> dict[str, list[tuple[Any, int]]]:
        """Each key's most frequent values (at most 50) over the live files of `collections` that `where` and
        `filters` keep, with how many files hold each: a list's items are counted each, a file once per value."""
        ...

    def find_version(self, tenant_id: str, version_id: UUID) -> tuple[FileRecord, FileVersionRecord] | None:
        """A version in any state, with its file."""
        ...

    def same_bytes(self, tenant_id: str, collection_id: str, sha256: str) -> SameBytes | None:
        """The earliest stored version (by upload) in `collection_id` whose bytes' SHA-256, as the extract step read
        them, is `sha256`; None if there is none."""
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


class MetadataWriter(Protocol):
    """Changes to files' metadata (issue 33)."""

    def change_metadata(
        self, tenant_id: str, changes: Sequence[MetadataChange], *, authorize: Callable[[str], None]
    ) -> dict[UUID, int]:
        """Apply every change in one transaction, all or none; each file's new revision. `authorize(collection)`
        raises for a file the caller may not change (NotFound where it cannot read it). A missing file is NotFound,
        a stale expected revision MetadataRevisionConflict, a change breaking a bound or a key's type
        InvalidRequest naming the field."""
        ...

    def metadata_schema(self, tenant_id: str, collection_id: str) -> MetadataSchema | None: ...

    def put_metadata_schema(
        self, tenant_id: str, collection_id: str, schema: MetadataSchema, *, updated_by: str
    ) -> None:
        """Store the collection's schema and make its declared types the keys' types; Conflict (nothing stored)
        when a file of the collection breaks it."""
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

    def record_content_hash(self, tenant_id: str, version_id: UUID, sha256: str, *, attempt: int) -> bool:
        """The SHA-256 (hex) of the version's bytes as the extract step read them, on a stored version (current
        attempt only); the version's processing state is left as it is."""
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


class Workflow(Protocol):
    """Runs the ingestion pipeline for one stored version (Step Functions; an in-process runner locally)."""

    def start(self, request: ProcessVersion) -> StartOutcome:
        """Idempotent per version: a second start of the same version reports ALREADY_STARTED."""
        ...
