"""Reconciliation: finish what a crash interrupted, report what cannot be explained, delete nothing on suspicion.

Runs on a schedule (EventBridge Scheduler → functions/reconcile) and on demand (`quire reconcile`).
It walks tenants one at a time, inside their own tenant transactions, so row-level security is never
bypassed. What it does:

* versions moved to `deleting` get their bytes removed (every object version), then become `deleted`
  (a deletion was asked for: that is not suspicion);
* a `pending` version past the threshold whose bytes did land (the event was lost) is completed exactly
  as the event would have completed it; one whose bytes never came (its upload URL long expired) is
  reported and becomes `rejected` with that reason, so it is reported once, not forever;
* a stored version whose processing never started, stalled past the threshold, or was interrupted by the
  infrastructure, is asked for again; one whose attempts are spent is reported as stuck (an operator's problem);
* objects under the tenants' prefix that no version row accounts for are reported, not removed.
"""

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import chain
from typing import Any, Protocol
from uuid import UUID

from shared.domain.attempt_work import WorkKeyParts, parse_work_key
from shared.domain.files import FileVersionRecord, ProcessingState, StoredObject, VersionState
from shared.domain.uploads import DERIVED_PREFIX, derived_prefix, parse_document_key, parse_storage_key, storage_key
from shared.observability import logger
from shared.ports import FileCatalog, FileContentStore, ReconciliationQueries
from shared.services.upload_completion import UploadCompletion

TENANTS_PREFIX = "tenants/"
NEVER_ARRIVED = "no bytes arrived before the upload URL expired; upload the file again"
_PAGE = 500


@dataclass(frozen=True)
class ReconcileThresholds:
    pending_after: timedelta = timedelta(hours=1)
    stuck_after: timedelta = timedelta(hours=1)
    max_objects: int = 100_000


@dataclass
class ReconcileReport:
    deleted_versions: int = 0
    completed_uploads: list[dict[str, Any]] = field(default_factory=list)
    pending_without_bytes: list[dict[str, Any]] = field(default_factory=list)
    processing_requested: list[dict[str, Any]] = field(default_factory=list)
    # Unprocessed past the threshold with every attempt spent: nothing will retry them.
    stuck_versions: list[dict[str, Any]] = field(default_factory=list)
    bytes_without_row: list[dict[str, Any]] = field(default_factory=list)
    # Objects of indexing attempts that are over (their last step never ran): removed.
    stale_work_removed: int = 0
    # Exports left pending past the threshold (a lost or crashed render), handed to the worker again.
    renders_resubmitted: int = 0
    objects_scanned: int = 0
    objects_truncated: bool = False

    @property
    def orphaned(self) -> bool:
        return bool(self.pending_without_bytes or self.bytes_without_row)

    def counts(self) -> dict[str, int]:
        """The report's size, for a log line that stays small however much was found."""
        return {
            "deletedVersions": self.deleted_versions,
            "completedUploads": len(self.completed_uploads),
            "pendingWithoutBytes": len(self.pending_without_bytes),
            "processingRequested": len(self.processing_requested),
            "stuckVersions": len(self.stuck_versions),
            "bytesWithoutRow": len(self.bytes_without_row),
            "staleWorkRemoved": self.stale_work_removed,
            "rendersResubmitted": self.renders_resubmitted,
            "objectsScanned": self.objects_scanned,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "deletedVersions": self.deleted_versions,
            "completedUploads": self.completed_uploads,
            "pendingWithoutBytes": self.pending_without_bytes,
            "processingRequested": self.processing_requested,
            "stuckVersions": self.stuck_versions,
            "bytesWithoutRow": self.bytes_without_row,
            "staleWorkRemoved": self.stale_work_removed,
            "rendersResubmitted": self.renders_resubmitted,
            "objectsScanned": self.objects_scanned,
            "objectsTruncated": self.objects_truncated,
            "orphaned": self.orphaned,
        }


class DerivedOwner(Protocol):
    def accounts_for(self, key: str) -> bool | None:
        """Whether a row of this owner explains the derived object `key` (None: not a key of this owner's)."""
        ...


class StalledRenders(Protocol):
    def resubmit_stalled(self, tenant_id: str, now: datetime | None = None) -> int:
        """Hand pending exports nobody touched for a while to the worker again; how many."""
        ...


class Reconciler:
    def __init__(
        self,
        catalog: FileCatalog,
        queries: ReconciliationQueries,
        content: FileContentStore,
        completion: UploadCompletion,
        thresholds: ReconcileThresholds,
        *,
        renders: StalledRenders | None = None,
        derived_owners: Sequence[DerivedOwner] = (),
    ) -> None:
        self._catalog = catalog
        self._queries = queries
        self._content = content
        self._completion = completion
        self._thresholds = thresholds
        self._renders = renders
        self._derived_owners = tuple(derived_owners)

    def run(self, now: datetime) -> ReconcileReport:
        report = ReconcileReport()
        for tenant_id in self._queries.tenant_ids():
            self._sweep_deletions(tenant_id, now, report)
            self._recover_pending(tenant_id, now, report)
            self._request_stuck_processing(tenant_id, now, report)
            if self._renders is not None:
                report.renders_resubmitted += self._renders.resubmit_stalled(tenant_id, now)
        self._find_unexplained_objects(report)
        logger.info("reconciled", extra={"counts": report.counts()})
        return report

    def _pages(
        self, fetch: Callable[[tuple[datetime, UUID] | None], list[tuple[UUID, FileVersionRecord]]]
    ) -> Iterator[tuple[UUID, FileVersionRecord]]:
        """Every row a keyset-paged query yields, page after page: old rows cannot hide newer ones."""
        after: tuple[datetime, UUID] | None = None
        while True:
            page = fetch(after)
            yield from page
            if len(page) < _PAGE:
                return
            after = (page[-1][1].updated_at, page[-1][1].version_id)

    def _sweep_deletions(self, tenant_id: str, now: datetime, report: ReconcileReport) -> None:
        deleting = list(
            self._pages(
                lambda after: self._queries.versions_in_states(
                    tenant_id, [VersionState.DELETING], updated_before=now, after=after, limit=_PAGE
                )
            )
        )
        for _, version in deleting:
            # Bytes first (the original and what was derived from it), then the row: a crash between the
            # two leaves a `deleting` row, swept again.
            self._content.delete_all_versions(version.storage_key)
            # Every document any attempt derived from it, not only the one the row points at.
            derived = {stored.key for stored in self._content.object_versions(derived_prefix(version.storage_key))}
            for key in sorted(derived | ({version.document_key} if version.document_key else set())):
                self._content.delete_all_versions(key)
            if self._catalog.mark_deleted(tenant_id, version.version_id):
                report.deleted_versions += 1

    def _recover_pending(self, tenant_id: str, now: datetime, report: ReconcileReport) -> None:
        cutoff = now - self._thresholds.pending_after
        pending = list(
            self._pages(
                lambda after: self._queries.versions_in_states(
                    tenant_id, [VersionState.PENDING], updated_before=cutoff, after=after, limit=_PAGE
                )
            )
        )
        for file_id, version in pending:
            if version.export_id is not None:
                continue  # a render in progress: the export sweep finishes it (its renderer writes the bytes)
            where = {"tenantId": tenant_id, "fileId": str(file_id), "versionId": str(version.version_id)}
            landed = self._content.head(version.storage_key)
            if landed is None:
                # Its upload URL expired long ago, so no byte can still come: the version is rejected with
                # that reason (shown to its owner), and nothing is deleted.
                if self._catalog.mark_rejected(
                    tenant_id, version.version_id, reason=NEVER_ARRIVED, byte_size=0, storage_version_id=None
                ):
                    report.pending_without_bytes.append({**where, "since": version.created_at.isoformat()})
                continue
            outcome = self._completion.object_created(version.storage_key, landed.version_id, landed.byte_size)
            report.completed_uploads.append({**where, "outcome": outcome.value})

    def _request_stuck_processing(self, tenant_id: str, now: datetime, report: ReconcileReport) -> None:
        cutoff = now - self._thresholds.stuck_after
        waiting = list(
            self._pages(
                lambda after: self._queries.versions_awaiting_processing(
                    tenant_id, cutoff=cutoff, after=after, limit=_PAGE
                )
            )
        )
        for file_id, version in waiting:
            outcome = self._completion.request_processing(tenant_id, file_id, version)
            report.processing_requested.append(
                {
                    "tenantId": tenant_id,
                    "fileId": str(file_id),
                    "versionId": str(version.version_id),
                    "outcome": outcome,
                }
            )
        given_up = self._pages(
            lambda after: self._queries.versions_given_up(tenant_id, cutoff=cutoff, after=after, limit=_PAGE)
        )
        for file_id, version in given_up:
            report.stuck_versions.append(
                {
                    "tenantId": tenant_id,
                    "fileId": str(file_id),
                    "versionId": str(version.version_id),
                    "processingState": version.processing_state.value,
                    "attempts": version.processing_attempt,
                    "detail": version.failure_detail,
                }
            )

    def _find_unexplained_objects(self, report: ReconcileReport) -> None:
        for stored in chain(
            self._content.object_versions(TENANTS_PREFIX), self._content.object_versions(DERIVED_PREFIX)
        ):
            if report.objects_scanned >= self._thresholds.max_objects:
                report.objects_truncated = True
                return
            report.objects_scanned += 1
            work = parse_work_key(stored.key)
            if work is not None:
                self._sweep_work(stored, work, report)
            elif stored.key.startswith(DERIVED_PREFIX):
                if not self._derived_accounted_for(stored.key):
                    report.bytes_without_row.append(
                        {"key": stored.key, "objectVersionId": stored.version_id, "size": stored.byte_size}
                    )
            elif not self._accounted_for(stored.key, stored.version_id):
                report.bytes_without_row.append(
                    {"key": stored.key, "objectVersionId": stored.version_id, "size": stored.byte_size}
                )

    def _sweep_work(self, stored: StoredObject, work: WorkKeyParts, report: ReconcileReport) -> None:
        """An attempt's indexing work lives while that attempt indexes its version. Once the attempt is over
        (indexed, failed, interrupted, superseded, or the version deleted) nothing can read it again: it is
        removed, which is certainty, not suspicion. Work no version row knows of is reported, not removed."""
        found = self._catalog.find_version(work.original.tenant_id, work.original.version_id)
        if found is None:
            report.bytes_without_row.append(
                {"key": stored.key, "objectVersionId": stored.version_id, "size": stored.byte_size}
            )
            return
        version = found[1]
        if (
            version.state is VersionState.STORED
            and version.processing_attempt == work.attempt
            and version.processing_state is ProcessingState.INDEXING
        ):
            return
        if stored.version_id is None:
            self._content.delete_all_versions(stored.key)
        else:
            self._content.delete_version(stored.key, stored.version_id)
        report.stale_work_removed += 1

    def _derived_accounted_for(self, key: str) -> bool:
        """A derived document is accounted for by the version that points at it (and only while it lives);
        an attempt's indexing work, by the version while that attempt is indexing it."""
        for owner in self._derived_owners:
            accounted = owner.accounts_for(key)
            if accounted is not None:
                return accounted
        parts = parse_document_key(key)
        if parts is None:
            return False
        found = self._catalog.find_version(parts.tenant_id, parts.version_id)
        return found is not None and found[1].document_key == key and found[1].state is not VersionState.DELETED

    def _accounted_for(self, key: str, object_version_id: str | None) -> bool:
        parts = parse_storage_key(key)
        if parts is None:
            return False
        found = self._catalog.find_version(parts.tenant_id, parts.version_id)
        if found is None or storage_key(parts.tenant_id, parts.file_id, parts.version_id) != found[1].storage_key:
            return False
        version = found[1]
        if version.state in (VersionState.PENDING, VersionState.DELETING):
            return True  # its event is on the way, or the deletion sweep is about to remove it
        if version.state is VersionState.DELETED:
            return False  # bytes that should be gone
        # A decided version accounts for exactly one object version: the one it recorded.
        return version.storage_version_id == object_version_id
