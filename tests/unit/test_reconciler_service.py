"""Reconciler on the fakes: pending uploads past the threshold are completed or rejected, deletions are swept,
and interrupted versions are asked for again a bounded number of times (tests/integration/test_reconciliation.py
runs the same on the real stack)."""

from datetime import UTC, datetime, timedelta
from uuid import UUID

from shared.domain.files import MAX_STALLED_RETRIES, ProcessingState, VersionState
from shared.domain.workflow import ProcessVersion
from shared.services.reconciliation import NEVER_ARRIVED
from shared.services.upload_completion import Completion
from tests.fakes import Clock, FakeFileMetadataStore, Fakes, RecordingWorkflow, principal

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def aged(workflow: RecordingWorkflow | None = None) -> Fakes:
    """Fakes whose rows are written three hours ago: past every default threshold of the sweep."""
    return Fakes(
        metadata=FakeFileMetadataStore(Clock(behind=timedelta(hours=3))), workflow=workflow or RecordingWorkflow()
    )


def test_a_pending_upload_past_the_threshold_is_completed_or_rejected_once() -> None:
    fakes = aged()
    lost = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename="lost.pdf",
        media_type="application/pdf",
        byte_size=len(PDF),
    )
    fakes.content.post(lost.upload, PDF)  # the bytes landed; the event never came
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
    ticket = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename="r.pdf",
        media_type="application/pdf",
        byte_size=len(PDF),
    )
    landed = fakes.content.post(ticket.upload, PDF)
    assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.STORED
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
