"""A crash between any two writes of the upload and deletion orders, then reconciliation."""

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.adapters.postgres.sweep_progress import PostgresSweepProgress
from shared.bootstrap import Container, overridden
from shared.domain.attempt_work import work_prefix
from shared.domain.files import MAX_STALLED_RETRIES, NewVersion, ProcessingState
from shared.domain.uploads import derived_prefix, document_key, ocr_staging_prefix, storage_key
from shared.services.reconciliation import NEVER_ARRIVED, ReconcileBudget, Reconciler, ReconcileThresholds
from tests.integration.api_steps import EventLost
from tests.integration.files_stack import PDF, Stack

LATER = timedelta(hours=3)  # past every reconciliation threshold


def reconcile(stack: Stack) -> dict[str, Any]:
    return stack.container.reconciler.run(datetime.now(UTC) + LATER).as_dict()


def versions(entries: list[dict[str, Any]]) -> set[str]:
    return {entry["versionId"] for entry in entries}


@pytest.fixture
def lost_events(stack: Stack) -> Iterator[None]:
    with overridden(EventLost(stack.container)):
        yield


def test_crash_after_the_pending_row_before_any_byte_is_reported_once_never_deleted(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.start_upload(token, "never.pdf", "application/pdf", len(PDF))
    report = reconcile(stack)
    assert ticket["versionId"] in versions(report["pendingWithoutBytes"])
    assert report["orphaned"] is True
    # Not removed: the version says what happened, to its owner, and is not reported again.
    current = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]
    assert (current["state"], current["rejectionReason"]) == ("rejected", NEVER_ARRIVED)
    assert ticket["versionId"] not in versions(reconcile(stack)["pendingWithoutBytes"])


def test_crash_after_the_bytes_before_the_stored_mark_is_completed(stack: Stack, lost_events: None) -> None:
    token = stack.token()
    ticket = stack.upload(token, "landed.pdf", "application/pdf", PDF)
    assert stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]["state"] == "pending"
    report = reconcile(stack)
    assert {"versionId": ticket["versionId"], "outcome": "stored"}.items() <= next(
        entry for entry in report["completedUploads"] if entry["versionId"] == ticket["versionId"]
    ).items()
    assert stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]["state"] == "stored"


def test_crash_after_the_stored_mark_before_asking_for_processing_asks_again(stack: Stack, lost_events: None) -> None:
    token = stack.token()
    ticket = stack.upload(token, "ask.pdf", "application/pdf", PDF)
    landed = stack.container.content.head(ticket["upload"]["fields"]["key"])
    assert landed is not None
    # The compare-and-set happened, then the process died before it asked for processing.
    assert stack.container.file_metadata.mark_stored(
        "acme", uuid.UUID(ticket["versionId"]), byte_size=landed.byte_size, storage_version_id=landed.version_id
    )
    requested = {e["versionId"]: e for e in reconcile(stack)["processingRequested"]}
    assert requested[ticket["versionId"]]["outcome"] == "started"
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    current = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]
    assert current["processingState"] in ("indexed", "failed")


def test_crash_after_deleting_before_the_bytes_went_finishes_the_deletion(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "rm.pdf", "application/pdf", PDF)
    key = ticket["upload"]["fields"]["key"]
    # The deletion is recorded, then the crash: the request never got to remove the bytes.
    assert stack.container.file_metadata.begin_delete_file("acme", uuid.UUID(ticket["fileId"])) == 1
    assert stack.container.content.head(key) is not None
    reconcile(stack)
    assert stack.container.content.head(key) is None
    found = stack.container.file_metadata.find_version("acme", uuid.UUID(ticket["versionId"]))
    assert found is not None and found[1].state.value == "deleted"


def test_crash_after_the_bytes_went_before_the_deleted_mark_finishes_the_deletion(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "rm2.pdf", "application/pdf", PDF)
    stack.container.file_metadata.begin_delete_file("acme", uuid.UUID(ticket["fileId"]))
    stack.container.content.delete_all_versions(ticket["upload"]["fields"]["key"])  # then the crash
    reconcile(stack)
    found = stack.container.file_metadata.find_version("acme", uuid.UUID(ticket["versionId"]))
    assert found is not None and found[1].state.value == "deleted"


def test_bytes_no_row_accounts_for_are_reported_never_deleted(stack: Stack) -> None:
    stray = f"tenants/acme/files/{uuid.uuid4()}/versions/{uuid.uuid4()}"
    foreign = "tenants/acme/not-a-quire-key"
    for key in (stray, foreign):
        stack.container.content.put(key, b"who put this here", content_type="text/plain")
    report = reconcile(stack)
    assert {stray, foreign} <= {entry["key"] for entry in report["bytesWithoutRow"]}
    assert stack.container.content.head(stray) is not None
    assert stack.container.content.head(foreign) is not None


def test_a_removed_file_leaves_nothing_orphaned(stack: Stack) -> None:
    token = stack.token(collections=("clean",))
    ticket = stack.upload(token, "clean.pdf", "application/pdf", PDF, collection="clean")
    assert stack.call("DELETE", f"/v1/files/{ticket['fileId']}", token)[0] == 202
    report = reconcile(stack)
    mentioned = versions(report["pendingWithoutBytes"]) | versions(report["processingRequested"])
    assert ticket["versionId"] not in mentioned
    assert ticket["upload"]["fields"]["key"] not in {e["key"] for e in report["bytesWithoutRow"]}
    assert stack.container.content.head(ticket["upload"]["fields"]["key"]) is None


def test_abandoned_uploads_cannot_starve_the_recovery_of_a_lost_event(stack: Stack, lost_events: None) -> None:
    tenant = f"flood-{uuid.uuid4().hex[:8]}"
    # 600 tickets asked for and never used (more than one page of the sweep), all older than the real one.
    for _ in range(600):
        file_id, version_id = uuid.uuid4(), uuid.uuid4()
        stack.container.file_metadata.create_version(
            NewVersion(
                tenant_id=tenant,
                file_id=file_id,
                version_id=version_id,
                collection_id="docs",
                filename="x.pdf",
                media_type="application/pdf",
                declared_byte_size=10,
                storage_key=storage_key(tenant, file_id, version_id),
                created_by="flooder",
            ),
            new_file=True,
        )
    token = stack.token(tenant=tenant)
    ticket = stack.upload(token, "real.pdf", "application/pdf", PDF)
    # The run's budget is shared by every tenant of this session's database (hundreds, most never swept, each a
    # turn before or after this one): a budget that never runs out gives this tenant its whole turn, whatever the
    # rest of the suite left behind. What is measured is the turn: 600 abandoned rows must not crowd out the one.
    wired = stack.container
    unhurried = Reconciler(
        wired.file_metadata,
        wired.file_metadata,
        wired.content,
        wired.upload_completion,
        ReconcileThresholds(
            pending_after=timedelta(seconds=wired.settings.reconcile_pending_after_seconds),
            stuck_after=timedelta(seconds=wired.settings.reconcile_stuck_after_seconds),
        ),
        progress=PostgresSweepProgress(wired.database),
        budget=ReconcileBudget(tenants=timedelta(days=30)),  # each tenant its whole turn (per_tenant)
        renders=wired.exports,
        derived_owners=(wired.artifacts, wired.document_writer),
    )
    report = unhurried.run(datetime.now(UTC) + LATER).as_dict()
    assert tenant not in report["tenantsUnfinished"]
    assert ticket["versionId"] in {e["versionId"] for e in report["completedUploads"]}
    assert stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]["state"] == "stored"
    assert len([e for e in report["pendingWithoutBytes"] if e["tenantId"] == tenant]) == 600


def test_a_version_whose_attempts_are_spent_is_reported_stuck_and_not_started_again(
    stack: Stack, lost_events: None
) -> None:
    token = stack.token()
    ticket = stack.upload(token, "stuck.pdf", "application/pdf", PDF)
    version_id = uuid.UUID(ticket["versionId"])
    metadata = stack.container.file_metadata
    landed = stack.container.content.head(ticket["upload"]["fields"]["key"])
    assert landed is not None
    assert metadata.mark_stored("acme", version_id, byte_size=landed.byte_size, storage_version_id=landed.version_id)
    # Every attempt the sweep allows was interrupted by the infrastructure.
    for attempt in range(1, MAX_STALLED_RETRIES + 2):  # the first run, then every retry
        stale = datetime.now(UTC) + timedelta(hours=attempt)
        assert metadata.queue_processing("acme", version_id, stale_before=stale) == attempt
        assert metadata.record_interruption("acme", version_id, detail="the extract step failed: x", attempt=attempt)
    report = reconcile(stack)
    assert ticket["versionId"] not in versions(report["processingRequested"])
    (stuck,) = [entry for entry in report["stuckVersions"] if entry["versionId"] == ticket["versionId"]]
    assert stuck["processingState"] == "interrupted" and stuck["attempts"] == MAX_STALLED_RETRIES + 1
    assert stuck["detail"] == "the extract step failed: x"
    assert stack.container.reconciler.run(datetime.now(UTC) + LATER).counts()["stuckVersions"] >= 1


def test_the_work_of_an_attempt_that_is_over_is_removed(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "work.pdf", "application/pdf", PDF)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    found = stack.container.file_metadata.find_version("acme", uuid.UUID(ticket["versionId"]))
    assert found is not None and found[1].processing_state.value in ("indexed", "failed")
    # What a publish step that never ran would have left behind: the attempt is over, so it is removed.
    left = work_prefix("acme", uuid.UUID(ticket["fileId"]), found[1].version_id, found[1].processing_attempt)
    stack.container.content.put(f"{left}chunks.json", b"{}", content_type="application/json")
    # And the work of an attempt indexing right now is left alone.
    metadata = stack.container.file_metadata
    running = metadata.queue_rescan("acme", found[1].version_id)
    assert running is not None
    assert metadata.move_processing(
        "acme", found[1].version_id, attempt=running, to=ProcessingState.INDEXING, expected=[ProcessingState.QUEUED]
    )
    live = work_prefix("acme", uuid.UUID(ticket["fileId"]), found[1].version_id, running)
    stack.container.content.put(f"{live}chunks-00000.json", b"{}", content_type="application/json")
    report = stack.container.reconciler.run(datetime.now(UTC)).as_dict()
    assert report["staleWorkRemoved"] >= 1
    assert f"{left}chunks.json" not in {entry["key"] for entry in report["bytesWithoutRow"]}
    assert stack.container.content.head(f"{left}chunks.json") is None
    assert stack.container.content.head(f"{live}chunks-00000.json") is not None
    assert f"{live}chunks-00000.json" not in {entry["key"] for entry in report["bytesWithoutRow"]}
    stack.container.content.delete_all_versions(f"{live}chunks-00000.json")


def stale_tickets(stack: Stack, tenant: str, count: int) -> list[uuid.UUID]:
    """Upload tickets asked for and never used, as a flood of POST /v1/uploads leaves them."""
    made = []
    for _ in range(count):
        file_id, version_id = uuid.uuid4(), uuid.uuid4()
        stack.container.file_metadata.create_version(
            NewVersion(
                tenant_id=tenant,
                file_id=file_id,
                version_id=version_id,
                collection_id="docs",
                filename="x.pdf",
                media_type="application/pdf",
                declared_byte_size=10,
                storage_key=storage_key(tenant, file_id, version_id),
                created_by="flooder",
            ),
            new_file=True,
        )
        made.append(version_id)
    return made


def test_a_tenant_holding_2000_stale_tickets_cannot_keep_another_tenants_deletion_from_being_swept(
    stack: Stack,
) -> None:
    # Every tenant the session's other tests made has its turn now, so the two below, which never had one, go
    # first in the runs under test (the flood before the victim, by id) whatever else the database holds.
    stack.container.reconciler.run(datetime.now(UTC))
    suffix = uuid.uuid4().hex[:8]
    flood, victim = f"aaa-{suffix}", f"zzz-{suffix}"  # the flood's turn comes first
    backlog = stale_tickets(stack, flood, 2000)
    token = stack.token(tenant=victim)
    ticket = stack.upload(token, "gone.pdf", "application/pdf", PDF)
    key = ticket["upload"]["fields"]["key"]
    # Deleted, its bytes left to the sweep (as past the request's bound).
    assert stack.container.file_metadata.begin_delete_file(victim, uuid.UUID(ticket["fileId"])) == 1
    # Budgets far too small for 2,000 rows (each a HEAD on S3 and an UPDATE), as 900 s are for a big enough flood.
    settings = stack.container.settings.model_copy(
        update={"reconcile_tenants_budget_seconds": 4.0, "reconcile_tenant_turn_seconds": 0.4}
    )
    small = Container(settings)
    try:
        first = small.reconciler.run(datetime.now(UTC) + LATER).as_dict()
        found = stack.container.file_metadata.find_version(victim, uuid.UUID(ticket["versionId"]))
        assert found is not None and found[1].state.value == "deleted"
        assert stack.container.content.head(key) is None
        assert flood in first["tenantsUnfinished"] and victim not in first["tenantsUnfinished"]
        swept_first = {e["versionId"] for e in first["pendingWithoutBytes"] if e["tenantId"] == flood}
        assert 0 < len(swept_first) < len(backlog)
        # Where the flood's turn stopped is in the database, for the next run (a new process, no state).
        resume = PostgresSweepProgress(small.database).resume_point(flood, "pending")
        assert resume is not None
        second = small.reconciler.run(datetime.now(UTC) + LATER).as_dict()
        swept_second = {e["versionId"] for e in second["pendingWithoutBytes"] if e["tenantId"] == flood}
        assert swept_second and not swept_second & swept_first
        # It resumed after the last row of the first turn: every row it handled was created after those.
        order = {str(version_id): index for index, version_id in enumerate(backlog)}
        assert min(order[v] for v in swept_second) > max(order[v] for v in swept_first)
    finally:
        small.database.close()


def two_page_pdf() -> bytes:
    import io

    import pypdfium2 as pdfium

    document = pdfium.PdfDocument.new()
    for width in (200, 300):
        document.new_page(width, 400)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def stage_ocr_copy(stack: Stack, key: str, object_version: str | None, content: bytes, run_id: str) -> str:
    """What the recognize step does on AWS for a PDF with one page to OCR: Textract's adapter copies that page
    into the bucket for the job (Textract served by the same moto server as S3)."""
    import boto3

    from shared.adapters.aws.textract_ocr import TextractOcr
    from shared.domain.recognition import RecognitionJob
    from shared.ports import OcrSource

    endpoint = stack.container.settings.s3_endpoint_url
    ocr = TextractOcr(
        boto3.client("textract", endpoint_url=endpoint, region_name="us-east-1"),
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1"),
        bucket=stack.bucket,
    )
    source = OcrSource(
        media_type="application/pdf",
        pages=(2,),
        page_count=2,
        storage_key=key,
        storage_version_id=object_version,
        read=lambda: content,
        run_id=run_id,
    )
    job = ocr.start(source)
    assert isinstance(job, RecognitionJob) and job.staged_key is not None
    assert stack.container.content.head(job.staged_key) is not None
    return job.staged_key


def held_for(stack: Stack, key: str) -> list[str]:
    """Every object version in the bucket made from the original `key` (derived, or staged for OCR)."""
    content = stack.container.content
    return sorted(
        {o.key for prefix in (derived_prefix(key), ocr_staging_prefix(key)) for o in content.object_versions(prefix)}
        | {o.key for o in content.object_versions(key) if o.key == key}
    )


def test_the_ocr_copies_and_derived_objects_of_a_deleted_version_are_removed_not_only_reported(
    stack: Stack, lost_events: None
) -> None:
    token = stack.token()
    pdf = two_page_pdf()
    ticket = stack.upload(token, "scan.pdf", "application/pdf", pdf)
    key, version_id = ticket["upload"]["fields"]["key"], uuid.UUID(ticket["versionId"])
    landed = stack.container.content.head(key)
    assert landed is not None
    staged = stage_ocr_copy(stack, key, landed.version_id, pdf, run_id=f"{version_id}-1")
    document = document_key("acme", uuid.UUID(ticket["fileId"]), version_id, 1)
    stack.container.content.put(document, b"{}", content_type="application/json")
    assert stack.call("DELETE", f"/v1/files/{ticket['fileId']}", token)[0] == 202
    reconcile(stack)
    assert held_for(stack, key) == [] and stack.container.content.head(staged) is None
    found = stack.container.file_metadata.find_version("acme", version_id)
    assert found is not None and found[1].state.value == "deleted"
    # An attempt still running when the version was swept writes after it: found by the scan, and removed.
    late_copy = stage_ocr_copy(stack, key, landed.version_id, pdf, run_id=f"{version_id}-2")
    late_document = document_key("acme", uuid.UUID(ticket["fileId"]), version_id, 2)
    stack.container.content.put(late_document, b"{}", content_type="application/json")
    report = reconcile(stack)
    assert held_for(stack, key) == []
    assert report["leftoversRemoved"] >= 2
    assert not {late_copy, late_document} & {entry["key"] for entry in report["bytesWithoutRow"]}


def test_bytes_removed_outside_quire_answer_410_with_a_sentence_and_are_reported_never_a_500(stack: Stack) -> None:
    """A lifecycle rule or a hand-deleted object takes bytes a row says are stored (S3 on AWS, or a disk)."""
    from tests.integration.api_steps import RUNBOOK, indexed

    token = stack.token()
    record = indexed(stack, token, "gone.md", RUNBOOK)
    current = record["current"]
    found = stack.container.file_metadata.find_version("acme", uuid.UUID(current["versionId"]))
    assert found is not None and found[1].document_key is not None
    stack.container.content.delete_all_versions(found[1].document_key)
    status, answer = stack.json("GET", f"/v1/files/{record['fileId']}/document", token)
    assert (status, answer["error"]) == (410, "content_missing"), answer
    assert "upload the file again" in answer["message"] and "derived/" not in answer["message"]
    status, answer = stack.json("POST", "/v1/tools/extract_text", token, {"fileId": record["fileId"]})
    assert status == 200 and answer["isError"] and answer["error"]["error"] == "content_missing", answer
    report = reconcile(stack)
    assert {"versionId": current["versionId"], "missing": "document"}.items() <= next(
        row for row in report["rowsWithoutBytes"] if row["versionId"] == current["versionId"]
    ).items()
    assert report["orphaned"] is True
    # Reported, never changed: the row says what it said.
    assert stack.json("GET", f"/v1/files/{record['fileId']}", token)[1]["current"]["processingState"] == "indexed"


def test_a_stored_upload_whose_original_is_gone_fails_bytes_missing_not_stuck(stack: Stack, lost_events: None) -> None:
    token = stack.token()
    ticket = stack.upload(token, "lost-original.pdf", "application/pdf", PDF)
    landed = stack.container.content.head(ticket["upload"]["fields"]["key"])
    assert landed is not None and landed.version_id is not None
    assert stack.container.file_metadata.mark_stored(
        "acme", uuid.UUID(ticket["versionId"]), byte_size=landed.byte_size, storage_version_id=landed.version_id
    )
    stack.container.content.delete_version(landed.key, landed.version_id)
    report = reconcile(stack)  # asks for processing (the event was lost), and finds the original missing
    assert ticket["versionId"] in versions(report["processingRequested"])
    assert {"versionId": ticket["versionId"], "missing": "original"}.items() <= next(
        row for row in report["rowsWithoutBytes"] if row["versionId"] == ticket["versionId"]
    ).items()
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    current = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]
    assert (current["processingState"], current["failure"]["reason"]) == ("failed", "bytes-missing"), current
    status, _ = stack.json("GET", f"/v1/files/{ticket['fileId']}/content", token)
    assert status == 200  # a signed URL: S3 itself answers 404 for the missing object, Quire never a 500
