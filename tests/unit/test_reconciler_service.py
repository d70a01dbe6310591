"""Reconciler on the fakes: pending uploads past the threshold are completed or rejected, deletions are swept,
and interrupted versions are asked for again a bounded number of times (tests/integration/test_reconciliation.py
runs the same on the real stack)."""

from datetime import UTC, datetime, timedelta
from unittest.mock import patch
from uuid import UUID, uuid4

from shared.domain.files import MAX_STALLED_RETRIES, NewVersion, ProcessingState, StoredObject, VersionState
from shared.domain.page_images import DRAWING_REVISION, is_superseded_drawing, page_image_key
from shared.domain.uploads import document_key, storage_key
from shared.domain.workflow import ProcessVersion
from shared.services.files import UploadTicket
from shared.services.reconciliation import NEVER_ARRIVED, ReconcileBudget
from shared.services.upload_completion import Completion
from tests.fakes import Clock, FakeContentStore, FakeFileMetadataStore, Fakes, RecordingWorkflow, principal

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def aged(workflow: RecordingWorkflow | None = None) -> Fakes:
    """Fakes whose rows are written three hours ago: past every default threshold of the sweep."""
    return Fakes(
        metadata=FakeFileMetadataStore(Clock(behind=timedelta(hours=3))), workflow=workflow or RecordingWorkflow()
    )


def test_a_pending_upload_past_the_threshold_is_completed_or_rejected_once() -> None:
    fakes = aged()
    lost = lost_upload(fakes)
    never = fakes.files().start_upload(
        principal("acme", "docs"), collection_id="docs", filename="never.pdf", media_type="application/pdf", byte_size=9
    )
    fakes.metadata.clock.advance(timedelta(hours=3))  # the sweep's own writes are made now
    report = fakes.reconciler().run(datetime.now(UTC))
    assert [(c["versionId"], c["outcome"]) for c in report.completed_uploads] == [
        (str(lost.version_id), Completion.STORED.value)
    ]
    assert [p["versionId"] for p in report.pending_without_bytes] == [str(never.version_id)]
    stored = fakes.metadata.find_version("acme", lost.version_id)
    rejected = fakes.metadata.find_version("acme", never.version_id)
    assert stored is not None and stored[1].state is VersionState.STORED
    assert rejected is not None and rejected[1].state is VersionState.REJECTED
    assert rejected[1].rejection_reason == NEVER_ARRIVED
    assert [r.version_id for r in fakes.workflow.started] == [str(lost.version_id)]
    # Reported once, not forever.
    again = fakes.reconciler().run(datetime.now(UTC))
    assert again.pending_without_bytes == [] and again.completed_uploads == []


def test_a_recent_pending_upload_is_left_alone() -> None:
    fakes = Fakes()
    ticket = fakes.files().start_upload(
        principal("acme", "docs"), collection_id="docs", filename="r.pdf", media_type="application/pdf", byte_size=9
    )
    report = fakes.reconciler().run(datetime.now(UTC))
    assert report.pending_without_bytes == [] and report.completed_uploads == []
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].state is VersionState.PENDING


def test_a_deleted_files_bytes_are_swept_and_its_versions_become_deleted() -> None:
    fakes = Fakes()
    ticket = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename="r.pdf",
        media_type="application/pdf",
        byte_size=len(PDF),
    )
    landed = fakes.content.post(ticket.upload, PDF)
    fakes.content.post(ticket.upload, PDF)  # a second object under the same key goes too
    fakes.files().delete_file(principal("acme", "docs"), ticket.file_id)
    report = fakes.reconciler().run(datetime.now(UTC) + timedelta(seconds=1))
    assert report.deleted_versions == 1
    assert fakes.content.head(landed.key) is None
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].state is VersionState.DELETED


def test_an_interrupted_version_is_asked_for_again_a_bounded_number_of_times() -> None:
    fakes = aged()

    def interrupted(request: ProcessVersion) -> None:
        # Every attempt is interrupted by the infrastructure before it gets anywhere.
        vid = UUID(request.version_id)
        assert fakes.metadata.move_processing(
            "acme", vid, attempt=request.attempt, to=ProcessingState.EXTRACTING, expected=[ProcessingState.QUEUED]
        )
        assert fakes.metadata.record_interruption(
            "acme", vid, detail="the extract step failed: X", attempt=request.attempt
        )

    fakes.workflow = RecordingWorkflow(then=interrupted)
    ticket, _ = stored_pdf(fakes)
    requested = []
    for _ in range(MAX_STALLED_RETRIES + 2):
        report = fakes.reconciler().run(datetime.now(UTC))
        requested.append(len(report.processing_requested))
        stuck = report.stuck_versions
    assert [r.attempt for r in fakes.workflow.started] == list(range(1, MAX_STALLED_RETRIES + 2))
    assert requested == [1] * MAX_STALLED_RETRIES + [0, 0]
    assert [s["versionId"] for s in stuck] == [str(ticket.version_id)]
    assert stuck[0]["processingState"] == ProcessingState.INTERRUPTED.value
    assert stuck[0]["attempts"] == MAX_STALLED_RETRIES + 1


class SteppingClock:
    """Monotonic seconds that move on by one each time they are read: a sweep's pace, without waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


class LambdaTimeout(Exception):
    """What the Lambda runtime does to a reconcile run past its limit: the run is gone mid-sweep."""


class TimedContentStore(FakeContentStore):
    """The fake store, on a clock that a Lambda's time limit is checked against at every call."""

    def __init__(self, clock: SteppingClock, limit: float) -> None:
        super().__init__()
        self._clock, self._limit = clock, limit

    def head(self, key: str, *, version_id: str | None = None) -> StoredObject | None:
        if self._clock() > self._limit:
            raise LambdaTimeout(f"the run passed its {self._limit:g} s")
        return super().head(key, version_id=version_id)


def lost_upload(fakes: Fakes) -> UploadTicket:
    """An upload whose bytes landed and whose Object Created event never came."""
    lost = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename="lost.pdf",
        media_type="application/pdf",
        byte_size=len(PDF),
    )
    fakes.content.post(lost.upload, PDF)
    return lost


def stale_tickets(fakes: Fakes, tenant: str, count: int) -> list[UUID]:
    """Upload tickets asked for and never used (their URLs long expired)."""
    return [
        fakes.files()
        .start_upload(
            principal(tenant, "docs"), collection_id="docs", filename="x.pdf", media_type="application/pdf", byte_size=9
        )
        .version_id
        for _ in range(count)
    ]


def deleted_file(fakes: Fakes, tenant: str) -> tuple[UUID, str]:
    """A stored file whose deletion was recorded but whose bytes the request did not remove (past its bound)."""
    ticket = fakes.files().start_upload(
        principal(tenant, "docs"),
        collection_id="docs",
        filename="b.pdf",
        media_type="application/pdf",
        byte_size=len(PDF),
    )
    landed = fakes.content.post(ticket.upload, PDF)
    assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.STORED
    assert fakes.metadata.begin_delete_file(tenant, ticket.file_id) == 1
    return ticket.version_id, landed.key


def state_of(fakes: Fakes, tenant: str, version_id: UUID) -> VersionState:
    found = fakes.metadata.find_version(tenant, version_id)
    assert found is not None
    return found[1].state


def test_a_tenant_with_a_backlog_cannot_keep_another_tenants_deletion_from_being_swept() -> None:
    clock = SteppingClock()
    fakes = Fakes(metadata=FakeFileMetadataStore(Clock(behind=timedelta(hours=3))))
    # Every head of the backlog costs time; a run that walks all of it is killed before it reaches tenant bbb.
    fakes.content = TimedContentStore(clock, limit=100)
    backlog = stale_tickets(fakes, "aaa", 200)
    deleted, key = deleted_file(fakes, "bbb")
    fakes.metadata.clock.advance(timedelta(hours=3))
    budget = ReconcileBudget(tenants=timedelta(seconds=60), per_tenant=timedelta(seconds=20))
    report = fakes.reconciler(budget=budget, clock=clock).run(datetime.now(UTC))
    assert state_of(fakes, "bbb", deleted) is VersionState.DELETED and fakes.content.head(key) is None
    assert report.tenants_unfinished == ["aaa"]
    rejected = [v for v in backlog if state_of(fakes, "aaa", v) is VersionState.REJECTED]
    assert 0 < len(rejected) < len(backlog)


def test_the_next_run_resumes_a_tenant_where_its_turn_stopped_not_at_the_top() -> None:
    clock = SteppingClock()
    fakes = aged()
    # Rows the sweep passes over and leaves as they are (renders in progress), older than a lost upload.
    for _ in range(30):
        file_id, version_id = uuid4(), uuid4()
        fakes.metadata.create_version(
            NewVersion(
                tenant_id="acme",
                file_id=file_id,
                version_id=version_id,
                collection_id="docs",
                filename="export.pdf",
                media_type="application/pdf",
                declared_byte_size=9,
                storage_key=storage_key("acme", file_id, version_id),
                created_by="renderer",
                export_id=uuid4(),
            ),
            new_file=True,
        )
    lost = lost_upload(fakes)
    fakes.metadata.clock.advance(timedelta(hours=3))
    budget = ReconcileBudget(tenants=timedelta(seconds=60), per_tenant=timedelta(seconds=5))
    runs = 0
    while state_of(fakes, "acme", lost.version_id) is VersionState.PENDING and runs < 60:
        fakes.reconciler(budget=budget, clock=clock).run(datetime.now(UTC))
        runs += 1
    # Each turn walks a few rows; started at the top every time, it would never get past the renders.
    assert state_of(fakes, "acme", lost.version_id) is VersionState.STORED
    assert runs > 1


def test_a_row_that_fails_is_passed_over_and_the_tenants_after_it_are_still_swept() -> None:
    fakes = aged()
    (poison,) = stale_tickets(fakes, "aaa", 1)
    deleted, key = deleted_file(fakes, "bbb")
    poisoned = storage_key("aaa", fakes.metadata.find_version("aaa", poison)[0].file_id, poison)  # type: ignore[index]

    class Failing(FakeContentStore):
        def head(self, key: str, *, version_id: str | None = None) -> StoredObject | None:
            if key == poisoned:
                raise ConnectionResetError("the store hung up")
            return super().head(key, version_id=version_id)

    failing = Failing()
    failing.put(key, PDF, content_type="application/pdf")
    fakes.content = failing
    fakes.metadata.clock.advance(timedelta(hours=3))
    report = fakes.reconciler().run(datetime.now(UTC))
    assert state_of(fakes, "bbb", deleted) is VersionState.DELETED and failing.head(key) is None
    assert [(f["tenantId"], f["versionId"]) for f in report.failed_rows] == [("aaa", str(poison))]


def test_tenants_no_turn_was_left_for_go_first_in_the_next_run() -> None:
    clock = SteppingClock()
    fakes = aged()
    for tenant in ("t1", "t2", "t3"):
        stale_tickets(fakes, tenant, 20)
    fakes.metadata.clock.advance(timedelta(hours=3))
    budget = ReconcileBudget(tenants=timedelta(seconds=8), per_tenant=timedelta(seconds=4))
    first = fakes.reconciler(budget=budget, clock=clock).run(datetime.now(UTC))
    assert first.tenants_waiting and set(first.tenants_waiting) < {"t1", "t2", "t3"}
    assert fakes.progress.tenants_in_turn()[: len(first.tenants_waiting)] == first.tenants_waiting


def stored_pdf(fakes: Fakes) -> tuple[UploadTicket, StoredObject]:
    """A PDF uploaded to acme's docs and stored: its ticket and the object that landed."""
    ticket = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename="r.pdf",
        media_type="application/pdf",
        byte_size=len(PDF),
    )
    landed = fakes.content.post(ticket.upload, PDF)
    assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.STORED
    return ticket, landed


def test_a_delete_removes_the_stored_bytes_in_the_request_tagged_first() -> None:
    fakes = Fakes()
    ticket, landed = stored_pdf(fakes)
    deletion = fakes.files().delete_file(principal("acme", "docs"), ticket.file_id)
    assert (deletion.versions_deleting, deletion.bytes_left_to_sweep) == (1, 0)
    assert fakes.content.head(landed.key) is None
    assert (landed.key, landed.version_id) in fakes.content.tagged_deleted
    # The row stays `deleting` until the sweep has removed what was derived too.
    assert state_of(fakes, "acme", ticket.version_id) is VersionState.DELETING


def test_a_collection_delete_removes_bytes_up_to_its_bound_and_says_how_many_are_left() -> None:
    fakes = Fakes()
    for _ in range(3):
        ticket = fakes.files().start_upload(
            principal("acme", "docs"),
            collection_id="docs",
            filename="r.pdf",
            media_type="application/pdf",
            byte_size=len(PDF),
        )
        landed = fakes.content.post(ticket.upload, PDF)
        assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.STORED
    with patch("shared.services.files.MAX_WITHDRAWN_IN_REQUEST", 2):
        deletion = fakes.files().delete_collection_files(principal("acme", "docs"), "docs")
    assert (deletion.versions_deleting, deletion.bytes_left_to_sweep) == (3, 1)
    assert len(list(fakes.content.object_versions("tenants/acme/"))) == 1
    fakes.reconciler().run(datetime.now(UTC) + timedelta(seconds=1))
    assert list(fakes.content.object_versions("tenants/acme/")) == []


def test_a_tenants_deletion_backlog_cannot_keep_its_own_lost_upload_from_being_recovered() -> None:
    # Given a tenant deleting hundreds of files (its deletions come first in its turn) and one lost upload
    clock = SteppingClock()
    fakes = aged()
    backlog = stale_tickets(fakes, "acme", 300)
    for version_id in backlog:
        found = fakes.metadata.find_version("acme", version_id)
        assert found is not None
        fakes.metadata.begin_delete_file("acme", found[0].file_id)
    lost = lost_upload(fakes)
    fakes.metadata.clock.advance(timedelta(hours=3))
    # When one run's turn is far too short for the deletions
    budget = ReconcileBudget(tenants=timedelta(seconds=60), per_tenant=timedelta(seconds=40))
    report = fakes.reconciler(budget=budget, clock=clock).run(datetime.now(UTC)).as_dict()
    # Then the deletions are unfinished, and the lost upload was recovered in the same turn all the same
    assert "acme" in report["tenantsUnfinished"]
    assert 0 < report["deletedVersions"] < len(backlog)
    assert state_of(fakes, "acme", lost.version_id) is VersionState.STORED


def test_a_page_image_is_accounted_for_while_its_version_lives_and_goes_with_it() -> None:
    # Given a stored PDF with a drawing of its page 1 kept beside it
    fakes = Fakes()
    ticket, landed = stored_pdf(fakes)
    drawing = page_image_key(landed.key, 1)
    fakes.content.put(drawing, b"\x89PNG\r\n\x1a\n", content_type="image/png")
    stray = page_image_key(storage_key("acme", uuid4(), uuid4()), 1)
    fakes.content.put(stray, b"\x89PNG\r\n\x1a\n", content_type="image/png")
    # Then reconciliation reports the drawing of no version, never the live version's
    report = fakes.reconciler().run(datetime.now(UTC) + timedelta(seconds=1))
    unexplained = {entry["key"] for entry in report.bytes_without_row}
    assert stray in unexplained and drawing not in unexplained
    assert fakes.content.head(drawing) is not None and fakes.content.head(stray) is not None
    # When the file is deleted, the deletion sweep takes the drawing with the original
    fakes.files().delete_file(principal("acme", "docs"), ticket.file_id)
    fakes.reconciler().run(datetime.now(UTC) + timedelta(seconds=2))
    assert state_of(fakes, "acme", ticket.version_id) is VersionState.DELETED
    assert fakes.content.head(drawing) is None
    # And a drawing a request still running wrote after the sweep is removed by the scan, not reported
    fakes.content.put(drawing, b"\x89PNG\r\n\x1a\n", content_type="image/png")
    late = fakes.reconciler().run(datetime.now(UTC) + timedelta(seconds=3))
    assert fakes.content.head(drawing) is None
    assert late.leftovers_removed >= 1 and drawing not in {entry["key"] for entry in late.bytes_without_row}


def test_a_drawing_of_an_earlier_drawing_revision_is_removed_and_the_current_one_kept() -> None:
    # Given a live PDF with a drawing of page 1 from before the drawing changed (no revision in its name), and one
    # of the current revision
    fakes = Fakes()
    _, landed = stored_pdf(fakes)
    current = page_image_key(landed.key, 1)
    earlier = current.replace(f"-r{DRAWING_REVISION}.png", ".png")
    assert earlier != current and is_superseded_drawing(earlier) and not is_superseded_drawing(current)
    for key in (current, earlier):
        fakes.content.put(key, b"\x89PNG\r\n\x1a\n", content_type="image/png")
    # When reconciliation runs
    report = fakes.reconciler().run(datetime.now(UTC) + timedelta(seconds=1))
    # Then the earlier drawing, never served again, is removed; the current one stays
    assert fakes.content.head(earlier) is None and fakes.content.head(current) is not None
    assert report.leftovers_removed >= 1


def test_the_document_of_an_attempt_a_later_one_superseded_is_removed_the_current_attempt_s_kept() -> None:
    # Given a live version on its attempt 1, and documents no row points at: one an earlier attempt wrote before a
    # crash took it between the write and its row, and one its current attempt wrote and has yet to record
    fakes = Fakes()
    ticket, _ = stored_pdf(fakes)
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None and found[1].processing_attempt == 1 and found[1].document_key is None
    earlier = document_key("acme", ticket.file_id, ticket.version_id, 0)
    current = document_key("acme", ticket.file_id, ticket.version_id, 1)
    another_version = document_key("acme", ticket.file_id, uuid4(), 0)
    for key in (earlier, current, another_version):
        fakes.content.put(key, b"{}", content_type="application/json")
    # When reconciliation runs
    report = fakes.reconciler().run(datetime.now(UTC) + timedelta(seconds=1))
    # Then the earlier attempt's document, which nothing can point at again, is removed; the current attempt's
    # stays (its row may yet point at it), and a document of a version no row knows is reported, not removed
    assert fakes.content.head(earlier) is None and report.leftovers_removed >= 1
    assert fakes.content.head(current) is not None and fakes.content.head(another_version) is not None
    assert another_version in {entry["key"] for entry in report.bytes_without_row}
