"""The sweep the local stack runs as it starts (Reconciler with `ReconcileThresholds.after_restart`), and the one
that checks each stored version's bytes are there: on the fakes, with rows written a moment ago (well inside
every usual threshold), because after a restart nothing that was in flight is still running."""

from datetime import UTC, datetime, timedelta
from uuid import UUID

from shared.domain.files import ExtractionSummary, ProcessingState, VersionState
from shared.domain.uploads import document_key
from shared.services.reconciliation import ReconcileThresholds
from shared.services.upload_completion import Completion
from tests.fakes import Fakes, principal

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
RESTART = ReconcileThresholds.after_restart(pending_after=timedelta(hours=1))


def upload(fakes: Fakes, filename: str, *, land: bool = True) -> UUID:
    ticket = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename=filename,
        media_type="application/pdf",
        byte_size=len(PDF),
    )
    if land:
        fakes.content.post(ticket.upload, PDF)
    return ticket.version_id


def restarted_now(fakes: Fakes) -> datetime:
    """The moment the stack started again: after everything the fakes hold was written."""
    return datetime.now(UTC) + timedelta(seconds=1)


def test_after_a_restart_an_upload_whose_event_was_lost_is_completed_at_once() -> None:
    fakes = Fakes()
    lost = upload(fakes, "lost.pdf")
    waiting = upload(fakes, "waiting.pdf", land=False)  # its URL may still be in use: left alone, not rejected
    report = fakes.reconciler(RESTART, stale_after=timedelta(0), from_the_top=True).run(restarted_now(fakes))
    assert [(c["versionId"], c["outcome"]) for c in report.completed_uploads] == [(str(lost), Completion.STORED.value)]
    assert report.pending_without_bytes == []
    pending = fakes.metadata.find_version("acme", waiting)
    assert pending is not None and pending[1].state is VersionState.PENDING
    # The usual sweep would have waited an hour for the event.
    fresh = Fakes()
    upload(fresh, "lost.pdf")
    assert fresh.reconciler().run(restarted_now(fresh)).completed_uploads == []


def test_after_a_restart_a_version_the_dead_workers_were_processing_is_started_again_at_once() -> None:
    fakes = Fakes()
    version = upload(fakes, "cut.pdf")
    found = fakes.metadata.find_version("acme", version)
    assert found is not None
    assert fakes.completion().object_created(found[1].storage_key, None, len(PDF)) is Completion.STORED
    [first] = fakes.workflow.started
    assert fakes.metadata.move_processing(
        "acme", version, attempt=first.attempt, to=ProcessingState.EXTRACTING, expected=[ProcessingState.QUEUED]
    )
    # The usual sweep leaves a version extracting for an hour: its worker may still be at it.
    assert fakes.reconciler().run(restarted_now(fakes)).processing_requested == []
    report = fakes.reconciler(RESTART, stale_after=timedelta(0), from_the_top=True).run(restarted_now(fakes))
    assert [p["versionId"] for p in report.processing_requested] == [str(version)]
    assert [r.attempt for r in fakes.workflow.started] == [first.attempt, first.attempt + 1]


def test_a_sweep_from_the_top_walks_rows_a_scheduled_run_stopped_after() -> None:
    fakes = Fakes()
    versions = [upload(fakes, f"{n}.pdf") for n in range(3)]
    rows = fakes.metadata.versions_in_states("acme", [VersionState.PENDING], updated_before=restarted_now(fakes))
    # A scheduled run stopped after the last of them: resumed, the sweep would start past every one.
    fakes.progress.save_resume_point("acme", "pending", (rows[-1][1].updated_at, rows[-1][1].version_id))
    resumed = fakes.reconciler(RESTART, stale_after=timedelta(0)).run(restarted_now(fakes))
    assert resumed.completed_uploads == []
    report = fakes.reconciler(RESTART, stale_after=timedelta(0), from_the_top=True).run(restarted_now(fakes))
    assert sorted(c["versionId"] for c in report.completed_uploads) == sorted(str(v) for v in versions)


def extracted(fakes: Fakes, version: UUID) -> None:
    """The version's first attempt extracted it: its document stored, the row pointing at it."""
    found = fakes.metadata.find_version("acme", version)
    assert found is not None
    file_id = found[0].file_id
    assert fakes.metadata.move_processing(
        "acme", version, attempt=1, to=ProcessingState.EXTRACTING, expected=[ProcessingState.QUEUED]
    )
    key = document_key("acme", file_id, version, 1)
    fakes.content.put(key, b"{}", content_type="application/json")
    summary = ExtractionSummary(
        page_count=1, block_count=0, pages_without_text=(), warnings=(), truncated=False, document_key=key
    )
    assert fakes.metadata.record_extraction("acme", version, summary, attempt=1)


def test_a_stored_version_whose_bytes_are_gone_is_reported_and_left_as_it_is() -> None:
    fakes = Fakes()
    whole, original_gone, document_gone = (upload(fakes, f"{name}.pdf") for name in ("whole", "gone", "nodoc"))
    for version in (whole, original_gone, document_gone):
        found = fakes.metadata.find_version("acme", version)
        assert found is not None
        fakes.completion().object_created(found[1].storage_key, None, len(PDF))
    for version in (whole, document_gone):
        extracted(fakes, version)
    # Removed outside Quire: a lifecycle rule, a hand-deleted object.
    gone = fakes.metadata.find_version("acme", original_gone)
    nodoc = fakes.metadata.find_version("acme", document_gone)
    assert gone is not None and nodoc is not None and nodoc[1].document_key is not None
    fakes.content.delete_all_versions(gone[1].storage_key)
    fakes.content.delete_all_versions(nodoc[1].document_key)
    report = fakes.reconciler().run(restarted_now(fakes))
    assert sorted((r["versionId"], r["missing"]) for r in report.rows_without_bytes) == sorted(
        [(str(original_gone), "original"), (str(document_gone), "document")]
    )
    assert report.orphaned and report.counts()["rowsWithoutBytes"] == 2
    for version in (original_gone, document_gone):
        found = fakes.metadata.find_version("acme", version)
        assert found is not None and found[1].state is VersionState.STORED  # reported, never changed
