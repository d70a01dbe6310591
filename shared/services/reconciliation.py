"""Reconciliation: finish what a crash interrupted, report what cannot be explained, delete nothing on suspicion.

Runs on a schedule (EventBridge Scheduler → functions/reconcile) and on demand (`quire reconcile`).
It walks tenants one at a time, inside their own tenant transactions, so row-level security is never
bypassed. Each tenant gets a turn of bounded time (its share of the run's budget, at most `per_tenant`),
the tenants whose last turn is longest ago first, and each sweep resumes where that tenant's last turn
stopped (SweepProgress keeps it: the schedule starts every run with no state). So one tenant's backlog
(thousands of stale tickets, a bulk deletion) delays only its own work, never another tenant's deletions.
What it does:

* versions moved to `deleting` get their bytes removed (every object version, what was derived from it,
  and its OCR staging copies), then become `deleted` (a deletion was asked for: that is not suspicion);
* a `pending` version past the threshold whose bytes did land (the event was lost) is completed exactly
  as the event would have completed it; one whose bytes never came (its upload URL long expired) is
  reported and becomes `rejected` with that reason, so it is reported once, not forever;
* a stored version whose processing never started, stalled past the threshold, or was interrupted by the
  infrastructure, is asked for again; one whose attempts are spent is reported as stuck (an operator's problem);
* a stored version whose original or derived document is missing from storage is reported (its reads answer
  410, its processing fails `bytes-missing`), never changed;
* objects under the tenants' prefix that no version row accounts for are reported, not removed; those of
  a version already `deleted` (written late, by an attempt still running when it was swept) are removed.
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import chain
from typing import Any, Protocol
from uuid import UUID

from shared.domain.attempt_work import WorkKeyParts, parse_work_key
from shared.domain.events import RETENTION_DAYS
from shared.domain.files import FileVersionRecord, ProcessingState, StoredObject, VersionState
from shared.domain.page_images import is_superseded_drawing, parse_page_image_key
from shared.domain.uploads import (
    DERIVED_PREFIX,
    OCR_STAGING_PREFIX,
    derived_prefix,
    document_attempt,
    ocr_staging_prefix,
    original_behind,
    parse_document_key,
    parse_storage_key,
    storage_key,
)
from shared.observability import logger
from shared.ports import FileCatalog, FileContentStore, ReconciliationQueries, SweepProgress
from shared.services.upload_completion import UploadCompletion

TENANTS_PREFIX = "tenants/"
NEVER_ARRIVED = "no bytes arrived before the upload URL expired; upload the file again"
_PAGE = 500


@dataclass(frozen=True)
class ReconcileThresholds:
    """How old a row must be before the sweeps act on it. A pending version is rejected once `pending_after` has
    passed with no bytes; one whose bytes did land is completed once `landed_after` has (by default the same:
    its event is normally on the way). A restart of the local stack, which knows nothing it ran survived, runs
    with `landed_after` and `stuck_after` at zero from the moment it started (`after_restart`)."""

    pending_after: timedelta = timedelta(hours=1)
    stuck_after: timedelta = timedelta(hours=1)
    max_objects: int = 100_000
    landed_after: timedelta | None = None
    # Pending exports untouched since then go to the worker again (None: the export service's own threshold).
    renders_untouched_after: timedelta | None = None

    @classmethod
    def after_restart(cls, pending_after: timedelta, max_objects: int = 100_000) -> "ReconcileThresholds":
        return cls(
            pending_after=pending_after,
            stuck_after=timedelta(0),
            max_objects=max_objects,
            landed_after=timedelta(0),
            renders_untouched_after=timedelta(0),
        )


@dataclass(frozen=True)
class ReconcileBudget:
    """How long one run works: the tenants share `tenants`, each turn at most `per_tenant` (a turn always
    handles at least one row, so a tenant progresses however small its share); then the object scan, `scan`."""

    tenants: timedelta = timedelta(minutes=10)
    per_tenant: timedelta = timedelta(minutes=1)
    scan: timedelta = timedelta(minutes=2)


Row = tuple[UUID, FileVersionRecord]
Keyset = tuple[datetime, UUID]


@dataclass
class ReconcileReport:
    deleted_versions: int = 0
    completed_uploads: list[dict[str, Any]] = field(default_factory=list)
    pending_without_bytes: list[dict[str, Any]] = field(default_factory=list)
    processing_requested: list[dict[str, Any]] = field(default_factory=list)
    # Unprocessed past the threshold with every attempt spent: nothing will retry them.
    stuck_versions: list[dict[str, Any]] = field(default_factory=list)
    bytes_without_row: list[dict[str, Any]] = field(default_factory=list)
    # Stored versions whose original (or derived document) is not in storage: reported, never changed.
    rows_without_bytes: list[dict[str, Any]] = field(default_factory=list)
    # Objects of indexing attempts that are over (their last step never ran): removed.
    stale_work_removed: int = 0
    # Exports left pending past the threshold (a lost or crashed render), handed to the worker again.
    renders_resubmitted: int = 0
    objects_scanned: int = 0
    objects_truncated: bool = False
    # Objects of versions already deleted (written after their sweep): removed.
    leftovers_removed: int = 0
    # Tenants whose turn ended before their work did (resumed next run), and those no turn was left for (first
    # next run); rows whose handling raised (logged, skipped until the sweep comes round again).
    tenants_unfinished: list[str] = field(default_factory=list)
    tenants_waiting: list[str] = field(default_factory=list)
    failed_rows: list[dict[str, Any]] = field(default_factory=list)
    # Records past their retention (events, finished webhook deliveries), deleted.
    records_purged: int = 0
    # Upload sessions past their day, and S3 multipart uploads no session can complete, ended.
    sessions_expired: int = 0
    uploads_aborted: int = 0

    @property
    def orphaned(self) -> bool:
        return bool(self.pending_without_bytes or self.bytes_without_row or self.rows_without_bytes)

    def counts(self) -> dict[str, int]:
        """The report's size, for a log line that stays small however much was found."""
        return {
            "deletedVersions": self.deleted_versions,
            "completedUploads": len(self.completed_uploads),
            "pendingWithoutBytes": len(self.pending_without_bytes),
            "processingRequested": len(self.processing_requested),
            "stuckVersions": len(self.stuck_versions),
            "bytesWithoutRow": len(self.bytes_without_row),
            "rowsWithoutBytes": len(self.rows_without_bytes),
            "staleWorkRemoved": self.stale_work_removed,
            "rendersResubmitted": self.renders_resubmitted,
            "objectsScanned": self.objects_scanned,
            "sessionsExpired": self.sessions_expired,
            "uploadsAborted": self.uploads_aborted,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "deletedVersions": self.deleted_versions,
            "completedUploads": self.completed_uploads,
            "pendingWithoutBytes": self.pending_without_bytes,
            "processingRequested": self.processing_requested,
            "stuckVersions": self.stuck_versions,
            "bytesWithoutRow": self.bytes_without_row,
            "rowsWithoutBytes": self.rows_without_bytes,
            "staleWorkRemoved": self.stale_work_removed,
            "rendersResubmitted": self.renders_resubmitted,
            "objectsScanned": self.objects_scanned,
            "objectsTruncated": self.objects_truncated,
            "leftoversRemoved": self.leftovers_removed,
            "tenantsUnfinished": self.tenants_unfinished,
            "tenantsWaiting": self.tenants_waiting,
            "failedRows": self.failed_rows,
            "recordsPurged": self.records_purged,
            "sessionsExpired": self.sessions_expired,
            "uploadsAborted": self.uploads_aborted,
            "orphaned": self.orphaned,
        }


class DerivedOwner(Protocol):
    def accounts_for(self, key: str) -> bool | None:
        """Whether a row of this owner explains the derived object `key` (None: not a key of this owner's)."""
        ...


class StalledRenders(Protocol):
    def resubmit_stalled(
        self, tenant_id: str, now: datetime | None = None, *, untouched_since: datetime | None = None
    ) -> int:
        """Hand pending exports nobody touched for a while (or since `untouched_since`) to the worker again."""
        ...


class SessionSweep(Protocol):
    """Upload sessions (shared/services/upload_sessions.py), as reconciliation sees them."""

    def uploading(self, tenant_id: str, version_id: UUID, now: datetime) -> bool:
        """True while the version's bytes may still come by parts (its session is open and not past its day)."""
        ...

    def sweep(self, tenant_id: str, now: datetime) -> tuple[int, int]:
        """Sessions past their day ended (their versions rejected) and multipart uploads no session can complete
        aborted, in S3 as the bucket's lifecycle rule does: (sessions expired, uploads aborted)."""
        ...


class Purgeable(Protocol):
    """Records kept for a while, then purged per tenant: the event outbox, the webhooks' deliveries."""

    def purge_before(self, tenant_id: str, before: datetime) -> int: ...


class Reconciler:
    def __init__(
        self,
        catalog: FileCatalog,
        queries: ReconciliationQueries,
        content: FileContentStore,
        completion: UploadCompletion,
        thresholds: ReconcileThresholds,
        *,
        progress: SweepProgress,
        budget: ReconcileBudget = ReconcileBudget(),
        renders: StalledRenders | None = None,
        derived_owners: Sequence[DerivedOwner] = (),
        purges: Sequence[Purgeable] = (),
        sessions: SessionSweep | None = None,
        retention: timedelta = timedelta(days=RETENTION_DAYS),
        clock: Callable[[], float] = time.monotonic,
        from_the_top: bool = False,
    ) -> None:
        """`purges`: what each tenant's turn purges of what is older than `retention` (events are listed that far
        back, GET /v1/events; finished deliveries kept for replay as long)."""
        self._catalog = catalog
        self._queries = queries
        self._content = content
        self._completion = completion
        self._thresholds = thresholds
        self._progress = progress
        self._budget = budget
        self._renders = renders
        self._derived_owners = tuple(derived_owners)
        self._purges = tuple(purges)
        self._sessions = sessions
        self._retention = retention
        self._clock = clock
        # A sweep after a restart walks every row, not from where the last scheduled run stopped.
        self._from_the_top = from_the_top

    def run(self, now: datetime) -> ReconcileReport:
        report = ReconcileReport()
        tenants = self._progress.tenants_in_turn()
        walk_ends = self._clock() + self._budget.tenants.total_seconds()
        for index, tenant_id in enumerate(tenants):
            left = walk_ends - self._clock()
            if left <= 0:
                # Not visited: their last turn stays the oldest, so they go first next run.
                report.tenants_waiting.extend(tenants[index:])
                break
            # An equal share of what is left, so the tenants after a slow one still get theirs.
            share = min(self._budget.per_tenant.total_seconds(), left / (len(tenants) - index))
            if not self._turn(tenant_id, now, report, deadline=self._clock() + share):
                report.tenants_unfinished.append(tenant_id)
        self._find_unexplained_objects(report, deadline=self._clock() + self._budget.scan.total_seconds())
        logger.info(
            "reconciled",
            extra={
                "counts": report.counts(),
                "tenantsUnfinished": len(report.tenants_unfinished),
                "tenantsWaiting": len(report.tenants_waiting),
                "failedRows": len(report.failed_rows),
            },
        )
        return report

    def _turn(self, tenant_id: str, now: datetime, report: ReconcileReport, *, deadline: float) -> bool:
        """One tenant's turn: its sweeps in order (deletions first), each from where it stopped, each with an equal
        share of what is left of the turn (a sweep that ends early leaves its share to the next), so a backlog in
        one (a bulk deletion) cannot keep the tenant's lost uploads and stalled processing from being recovered;
        then what the others left goes back to those that ran out. True when every sweep reached its end."""
        pending_cutoff = now - self._thresholds.pending_after
        landed_after = self._thresholds.landed_after
        landed_cutoff = pending_cutoff if landed_after is None else max(pending_cutoff, now - landed_after)
        stuck_cutoff = now - self._thresholds.stuck_after
        queries = self._queries
        sweeps: list[tuple[str, Callable[[Keyset | None], list[Row]], Callable[[str, Row, ReconcileReport], None]]] = [
            (
                "deleting",
                lambda after: queries.versions_in_states(
                    tenant_id, [VersionState.DELETING], updated_before=now, after=after, limit=_PAGE
                ),
                self._sweep_deletion,
            ),
            (
                "pending",
                lambda after: queries.versions_in_states(
                    tenant_id, [VersionState.PENDING], updated_before=landed_cutoff, after=after, limit=_PAGE
                ),
                lambda tenant, row, report: self._recover_pending(
                    tenant, row, report, reject_before=pending_cutoff, now=now
                ),
            ),
            (
                "awaiting_processing",
                lambda after: queries.versions_awaiting_processing(
                    tenant_id, cutoff=stuck_cutoff, after=after, limit=_PAGE
                ),
                self._request_processing,
            ),
            (
                "given_up",
                lambda after: queries.versions_given_up(tenant_id, cutoff=stuck_cutoff, after=after, limit=_PAGE),
                self._report_given_up,
            ),
            (
                "bytes_present",
                lambda after: queries.versions_in_states(
                    tenant_id, [VersionState.STORED], updated_before=now, after=after, limit=_PAGE
                ),
                self._check_bytes,
            ),
        ]
        try:
            if self._sessions is not None:
                # First: a session past its day ends with its own reason, not as an upload that never came.
                expired, aborted = self._sessions.sweep(tenant_id, now)
                report.sessions_expired += expired
                report.uploads_aborted += aborted
            ran_out = []
            for index, (sweep, fetch, handle) in enumerate(sweeps):
                started = self._clock()
                until = started + max(deadline - started, 0.0) / (len(sweeps) - index)
                if not self._walk(tenant_id, sweep, fetch, handle, report, deadline=until):
                    ran_out.append((sweep, fetch, handle))
            for sweep, fetch, handle in list(ran_out):
                if self._clock() >= deadline:
                    break
                if self._walk(tenant_id, sweep, fetch, handle, report, deadline=deadline):
                    ran_out.remove((sweep, fetch, handle))
            if self._renders is not None:
                untouched = self._thresholds.renders_untouched_after
                report.renders_resubmitted += self._renders.resubmit_stalled(
                    tenant_id, now, untouched_since=None if untouched is None else now - untouched
                )
            for purge in self._purges:
                report.records_purged += purge.purge_before(tenant_id, now - self._retention)
            return not ran_out
        finally:
            self._progress.end_turn(tenant_id)

    def _walk(
        self,
        tenant_id: str,
        sweep: str,
        fetch: Callable[[Keyset | None], list[Row]],
        handle: Callable[[str, Row, ReconcileReport], None],
        report: ReconcileReport,
        *,
        deadline: float,
    ) -> bool:
        """Every row a keyset-paged query yields, page after page, from where this sweep last stopped, until the
        deadline (old rows cannot hide newer ones, and rows left as they were cannot hold the sweep at the top).
        True when it reached the end (the next turn starts at the top again, for the rows before the cursor)."""
        after = None if self._from_the_top else self._progress.resume_point(tenant_id, sweep)
        while True:
            page = fetch(after)
            for row in page:
                try:
                    handle(tenant_id, row, report)
                except Exception as error:
                    # One row must not stop the tenants after it: logged, passed over until the sweep comes round.
                    logger.exception("a row of the sweep failed", extra={"tenantId": tenant_id, "sweep": sweep})
                    report.failed_rows.append(
                        {
                            "tenantId": tenant_id,
                            "sweep": sweep,
                            "versionId": str(row[1].version_id),
                            "error": repr(error)[:300],
                        }
                    )
                    self._progress.save_resume_point(tenant_id, sweep, _keyset(row))
                    return False
                after = _keyset(row)
                last_of_all = row is page[-1] and len(page) < _PAGE
                if not last_of_all and self._clock() >= deadline:
                    self._progress.save_resume_point(tenant_id, sweep, after)
                    return False
            if len(page) < _PAGE:
                self._progress.save_resume_point(tenant_id, sweep, None)
                return True

    def _sweep_deletion(self, tenant_id: str, row: Row, report: ReconcileReport) -> None:
        version = row[1]
        # Bytes first (the original, what was derived from it, the copies OCR read), then the row: a crash
        # between the two leaves a `deleting` row, swept again.
        self._content.delete_all_versions(version.storage_key)
        # Every document any attempt derived from it, not only the one the row points at.
        held = {
            stored.key
            for prefix in (derived_prefix(version.storage_key), ocr_staging_prefix(version.storage_key))
            for stored in self._content.object_versions(prefix)
        }
        for key in sorted(held | ({version.document_key} if version.document_key else set())):
            self._content.delete_all_versions(key)
        if self._catalog.mark_deleted(tenant_id, version.version_id):
            report.deleted_versions += 1

    def _recover_pending(
        self, tenant_id: str, row: Row, report: ReconcileReport, *, reject_before: datetime, now: datetime
    ) -> None:
        file_id, version = row
        if version.export_id is not None:
            return  # a render in progress: the export sweep finishes it (its renderer writes the bytes)
        where = {"tenantId": tenant_id, "fileId": str(file_id), "versionId": str(version.version_id)}
        landed = self._content.head(version.storage_key)
        if landed is None:
            if version.updated_at >= reject_before:
                return  # its upload URL may still be in use
            if self._sessions is not None and self._sessions.uploading(tenant_id, version.version_id, now):
                return  # uploaded by parts: its session lasts a day
            # Its upload URL expired long ago, so no byte can still come: the version is rejected with
            # that reason (shown to its owner), and nothing is deleted.
            if self._catalog.mark_rejected(
                tenant_id, version.version_id, reason=NEVER_ARRIVED, byte_size=0, storage_version_id=None
            ):
                report.pending_without_bytes.append({**where, "since": version.created_at.isoformat()})
            return
        outcome = self._completion.object_created(version.storage_key, landed.version_id, landed.byte_size)
        report.completed_uploads.append({**where, "outcome": outcome.value})

    def _request_processing(self, tenant_id: str, row: Row, report: ReconcileReport) -> None:
        file_id, version = row
        outcome = self._completion.request_processing(tenant_id, file_id, version)
        report.processing_requested.append(
            {"tenantId": tenant_id, "fileId": str(file_id), "versionId": str(version.version_id), "outcome": outcome}
        )

    def _report_given_up(self, tenant_id: str, row: Row, report: ReconcileReport) -> None:
        file_id, version = row
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

    def _check_bytes(self, tenant_id: str, row: Row, report: ReconcileReport) -> None:
        """A stored version's original, and the document derived from it, must be in storage: one that is not
        (a lifecycle rule, a hand-deleted object) is reported, never changed; its reads answer 410."""
        file_id, version = row
        where = {"tenantId": tenant_id, "fileId": str(file_id), "versionId": str(version.version_id)}
        if self._content.head(version.storage_key, version_id=version.storage_version_id) is None:
            report.rows_without_bytes.append({**where, "missing": "original"})
        elif version.document_key is not None and self._content.head(version.document_key) is None:
            report.rows_without_bytes.append({**where, "missing": "document"})

    def _find_unexplained_objects(self, report: ReconcileReport, *, deadline: float) -> None:
        for stored in chain(
            self._content.object_versions(TENANTS_PREFIX),
            self._content.object_versions(DERIVED_PREFIX),
            self._content.object_versions(OCR_STAGING_PREFIX),
        ):
            if report.objects_scanned >= self._thresholds.max_objects or self._clock() >= deadline:
                report.objects_truncated = True
                return
            report.objects_scanned += 1
            work = parse_work_key(stored.key)
            if work is not None:
                self._sweep_work(stored, work, report)
            elif stored.key.startswith(OCR_STAGING_PREFIX):
                # A copy of a job still running is its job's; an old-layout copy the lifecycle rule expires.
                if self._of_deleted_version(stored.key):
                    self._remove(stored)
                    report.leftovers_removed += 1
            elif stored.key.startswith(DERIVED_PREFIX):
                # A cached page drawing from before the drawing changed is never served again, nor the document of
                # an attempt a later one superseded (a crash between its write and its row): they go.
                superseded = is_superseded_drawing(stored.key) or self._superseded_document(stored.key)
                if superseded or not self._derived_accounted_for(stored.key):
                    self._settle_unexplained(stored, report, removable=superseded)
            elif not self._accounted_for(stored.key, stored.version_id):
                self._settle_unexplained(stored, report)

    def _settle_unexplained(self, stored: StoredObject, report: ReconcileReport, *, removable: bool = False) -> None:
        """An object no row explains: removed when it is of a deleted version (or known to be removable),
        reported otherwise."""
        if removable or self._of_deleted_version(stored.key):
            self._remove(stored)
            report.leftovers_removed += 1
        else:
            report.bytes_without_row.append(
                {"key": stored.key, "objectVersionId": stored.version_id, "size": stored.byte_size}
            )

    def _of_deleted_version(self, key: str) -> bool:
        """Whether `key` holds (or was made from) an original whose version is deleted: a deletion was asked
        for and swept, so whatever of it is still here was written late and goes, with certainty."""
        if any(owner.accounts_for(key) is not None for owner in self._derived_owners):
            return False  # another owner's key: it decides
        parts = parse_storage_key(key) or original_behind(key)
        if parts is None:
            return False
        found = self._catalog.find_version(parts.tenant_id, parts.version_id)
        return (
            found is not None
            and found[1].state is VersionState.DELETED
            and found[1].storage_key == storage_key(parts.tenant_id, parts.file_id, parts.version_id)
        )

    def _remove(self, stored: StoredObject) -> None:
        if stored.version_id is None:
            self._content.delete_all_versions(stored.key)
        else:
            self._content.delete_version(stored.key, stored.version_id)

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
        self._remove(stored)
        report.stale_work_removed += 1

    def _derived_accounted_for(self, key: str) -> bool:
        """A derived document is accounted for by the version that points at it (and only while it lives);
        a page image, by the version it was drawn from while it lives; an attempt's indexing work, by the
        version while that attempt is indexing it."""
        for owner in self._derived_owners:
            accounted = owner.accounts_for(key)
            if accounted is not None:
                return accounted
        drawn_from = parse_page_image_key(key)
        if drawn_from is not None:
            found = self._catalog.find_version(drawn_from.tenant_id, drawn_from.version_id)
            return (
                found is not None
                and found[1].state is not VersionState.DELETED
                and found[1].storage_key == storage_key(drawn_from.tenant_id, drawn_from.file_id, drawn_from.version_id)
            )
        parts = parse_document_key(key)
        if parts is None:
            return False
        found = self._catalog.find_version(parts.tenant_id, parts.version_id)
        return found is not None and found[1].document_key == key and found[1].state is not VersionState.DELETED

    def _superseded_document(self, key: str) -> bool:
        """A derived document no row points at, written by an attempt older than its live version's current one:
        an attempt records its document only while it is the version's attempt, so nothing can point at it again."""
        parts, attempt = parse_document_key(key), document_attempt(key)
        if parts is None or attempt is None:
            return False
        found = self._catalog.find_version(parts.tenant_id, parts.version_id)
        if found is None:
            return False
        version = found[1]
        return (
            version.state is VersionState.STORED
            and version.storage_key == storage_key(parts.tenant_id, parts.file_id, parts.version_id)
            and version.document_key != key
            and version.processing_attempt > attempt
        )

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
            return False  # bytes that should be gone: the scan removes them
        # A decided version accounts for exactly one object version: the one it recorded.
        return version.storage_version_id == object_version_id


def _keyset(row: Row) -> Keyset:
    return (row[1].updated_at, row[1].version_id)
