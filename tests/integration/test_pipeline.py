"""Upload → Object Created → the in-process pipeline (inspect, extract) → a readable, windowed document."""

import io
import uuid
import zipfile
from datetime import UTC, datetime, timedelta
from typing import Any

from functions.extract import handler as extract_step
from functions.index import handler as index_step
from functions.inspect import handler as inspect_step
from shared.bootstrap import overridden
from shared.local.http_api import LocalLambdaContext
from tests.builders.office import word_document
from tests.builders.pdf import report_pdf
from tests.conftest import load_event
from tests.integration.files_stack import DOCX_TYPE, Stack


def processed(stack: Stack, token: str, filename: str, media_type: str, content: bytes) -> dict[str, Any]:
    ticket = stack.upload(token, filename, media_type, content)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, record = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert status == 200
    return record  # type: ignore[no-any-return]


def stored_without_processing(stack: Stack, token: str, filename: str, content: bytes) -> tuple[Any, uuid.UUID]:
    """An upload stored by hand, its event lost: nothing asked for processing yet (the crash shapes below)."""
    from tests.integration.api_steps import EventLost

    with overridden(EventLost(stack.container)):
        ticket = stack.upload(token, filename, "text/plain", content)
    version_id = uuid.UUID(ticket["versionId"])
    landed = stack.container.content.head(ticket["upload"]["fields"]["key"])
    assert landed is not None
    assert stack.container.file_metadata.mark_stored(
        "acme", version_id, byte_size=landed.byte_size, storage_version_id=landed.version_id
    )
    return ticket, version_id


def test_an_uploaded_docx_is_extracted_and_read_as_markdown_with_locations(stack: Stack) -> None:
    token = stack.token()
    record = processed(stack, token, "Handbook.docx", DOCX_TYPE, word_document())
    current = record["current"]
    assert current["processingState"] == "indexed"
    assert current["extraction"]["blockCount"] >= 8
    status, window = stack.json("GET", f"/v1/files/{record['fileId']}/document", token)
    assert status == 200
    assert "# Employee handbook" in window["markdown"]
    assert "| Region | Days |\n| --- | --- |\n| EU | 25 |" in window["markdown"]
    table = next(block for block in window["blocks"] if block["kind"] == "table")
    # camelCase like the rest of the API, with the first release's names alongside until the next release.
    assert table["location"] == {"tableIndex": 0, "table_index": 0}
    assert table["headingPath"] == table["heading_path"] == ["Leave"]
    assert window["nextCursor"] is None


def test_a_scan_like_pdf_records_its_pages_without_text_and_an_encrypted_one_fails_with_its_sentence(
    stack: Stack,
) -> None:
    token = stack.token()
    mixed = processed(stack, token, "report.pdf", "application/pdf", report_pdf(blank_second_page=True))
    assert mixed["current"]["extraction"]["pagesWithoutText"] == [2]
    locked = processed(stack, token, "locked.pdf", "application/pdf", report_pdf(password="secret"))
    assert locked["current"]["processingState"] == "failed"
    assert locked["current"]["failure"]["reason"] == "encrypted"
    assert "password" in locked["current"]["failure"]["message"]
    status, answer = stack.json("GET", f"/v1/files/{locked['fileId']}/document", token)
    assert status == 409
    assert (answer["error"], answer["reason"], answer["retryable"]) == ("extraction_failed", "encrypted", False)


def test_a_long_document_is_read_window_by_window(stack: Stack) -> None:
    token = stack.token()
    text = "\n\n".join(f"Paragraph number {i}." for i in range(120)).encode()
    record = processed(stack, token, "long.txt", "text/plain", text)
    seen: list[str] = []
    cursor = ""
    while True:
        status, window = stack.json("GET", f"/v1/files/{record['fileId']}/document{cursor}", token)
        assert status == 200
        assert len(window["blocks"]) <= 50
        seen.extend(block["text"] for block in window["blocks"])
        if not window["nextCursor"]:
            break
        cursor = f"?cursor={window['nextCursor']}"
    assert seen == [f"Paragraph number {i}." for i in range(120)]


def test_a_document_is_not_found_for_an_unentitled_caller_exactly_as_a_random_id(stack: Stack) -> None:
    record = processed(stack, stack.token(collections=("docs",)), "a.txt", "text/plain", b"secret text")
    outsider = stack.token(tenant="globex", collections=("docs",))
    assert stack.call("GET", f"/v1/files/{record['fileId']}/document", outsider) == stack.call(
        "GET", f"/v1/files/{uuid.uuid4()}/document", outsider
    )


def test_deleting_a_file_sweeps_its_derived_document_too(stack: Stack) -> None:
    token = stack.token()
    record = processed(stack, token, "gone.txt", "text/plain", b"to be deleted")
    found = stack.container.file_metadata.find_version("acme", uuid.UUID(record["current"]["versionId"]))
    assert found is not None
    assert found[1].document_key
    assert stack.container.content.head(found[1].document_key) is not None
    assert stack.call("DELETE", f"/v1/files/{record['fileId']}", token)[0] == 202
    stack.container.reconciler.run(datetime.now(UTC))
    assert stack.container.content.head(found[1].document_key) is None


def test_the_step_functions_tasks_take_and_return_references_only(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "steps.txt", "text/plain", b"one\n\ntwo\n")
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    event = {**load_event("pipeline_step.json"), "fileId": ticket["fileId"], "versionId": ticket["versionId"]}
    with overridden(stack.container):
        # Already extracted by the local runner: inspect says so and does not proceed.
        inspected = inspect_step.handler(event, LocalLambdaContext())
        assert inspected["proceed"] is False
        references = {"tenantId", "fileId", "versionId", "attempt", "rescan", "reindex"}
        assert set(inspected) <= references | {"proceed", "why", "mediaType", "byteSize"}
        deleted = {**event, "versionId": str(uuid.uuid4())}
        assert extract_step.handler(deleted, LocalLambdaContext())["proceed"] is False
        # Already indexed: a repeated index task changes nothing and says why, in references only.
        indexed = index_step.handler(event, LocalLambdaContext())
        assert indexed["proceed"] is False
        assert set(indexed) <= references | {"proceed", "why", "indexed", "failure"}
        # Each output is the next step's input as it stands: the attempt travels with it.
        assert indexed["attempt"] == event["attempt"]


def test_an_extracted_version_is_not_extracted_again_by_a_late_or_repeated_step(stack: Stack) -> None:
    from shared.domain.workflow import ProcessVersion

    token = stack.token()
    record = processed(stack, token, "once.txt", "text/plain", b"only once")
    version = record["current"]
    request = ProcessVersion(tenant_id="acme", file_id=record["fileId"], version_id=version["versionId"], attempt=1)
    assert stack.container.pipeline.inspect(request).proceed is False
    assert stack.container.pipeline.extract(request).proceed is False
    again = stack.json("GET", f"/v1/files/{record['fileId']}", token)[1]["current"]
    assert again["processingState"] == "indexed"


def test_a_version_deleted_while_it_is_extracted_leaves_no_document_behind(stack: Stack) -> None:
    from shared.domain.workflow import ProcessVersion

    token = stack.token()
    ticket, version_id = stored_without_processing(stack, token, "racy.txt", b"deleted mid-way")
    attempt = stack.container.file_metadata.queue_processing("acme", version_id, stale_before=datetime.now(UTC))
    assert attempt == 1
    request = ProcessVersion(tenant_id="acme", file_id=ticket["fileId"], version_id=ticket["versionId"], attempt=1)
    assert stack.container.pipeline.inspect(request).proceed is True
    stack.call("DELETE", f"/v1/files/{ticket['fileId']}", token)  # while the parser runs
    result = stack.container.pipeline.extract(request)
    assert result.proceed is False
    prefix = f"derived/tenants/acme/files/{ticket['fileId']}/"
    assert list(stack.container.content.object_versions(prefix)) == []


def test_a_retry_after_a_dead_attempt_is_a_new_attempt_and_the_old_one_cannot_write(stack: Stack) -> None:
    from shared.domain.workflow import ProcessVersion

    token = stack.token()
    ticket, version_id = stored_without_processing(stack, token, "retry.txt", b"try, try again")
    metadata = stack.container.file_metadata
    first = metadata.queue_processing("acme", version_id, stale_before=datetime.now(UTC))
    old = ProcessVersion(tenant_id="acme", file_id=ticket["fileId"], version_id=ticket["versionId"], attempt=1)
    assert first == 1 and stack.container.pipeline.inspect(old).proceed is True
    # The first attempt went silent; past the threshold a second one is started, under a new name.
    second = metadata.queue_processing("acme", version_id, stale_before=datetime.now(UTC) + timedelta(seconds=1))
    assert second == 2
    new = old.model_copy(update={"attempt": 2})
    assert new.execution_name != old.execution_name
    assert stack.container.pipeline.extract(old).proceed is False  # superseded: it may not write
    assert stack.container.pipeline.inspect(new).proceed is True
    assert stack.container.pipeline.extract(new).proceed is True
    current = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]
    assert current["processingState"] == "extracted"


def test_a_derived_document_nobody_points_at_is_reported(stack: Stack) -> None:
    orphan = f"derived/tenants/acme/files/{uuid.uuid4()}/versions/{uuid.uuid4()}/document-1.json"
    stack.container.content.put(orphan, b"{}", content_type="application/json")
    report = stack.container.reconciler.run(datetime.now(UTC)).as_dict()
    assert orphan in {entry["key"] for entry in report["bytesWithoutRow"]}


def test_a_timed_out_extraction_is_tried_again_by_reconciliation_a_bounded_number_of_times(stack: Stack) -> None:
    from shared.domain.files import FailureReason, ProcessingState

    token = stack.token()
    ticket, version_id = stored_without_processing(stack, token, "slow.txt", b"slow to read")
    metadata = stack.container.file_metadata
    attempt = metadata.queue_processing("acme", version_id, stale_before=datetime.now(UTC))
    assert attempt == 1
    metadata.move_processing(
        "acme", version_id, attempt=1, to=ProcessingState.EXTRACTING, expected=[ProcessingState.QUEUED]
    )
    metadata.record_failure("acme", version_id, reason=FailureReason.TIMED_OUT, detail="took too long", attempt=1)
    report = stack.container.reconciler.run(datetime.now(UTC) + timedelta(hours=3)).as_dict()
    assert {"versionId": ticket["versionId"], "outcome": "started"}.items() <= next(
        e for e in report["processingRequested"] if e["versionId"] == ticket["versionId"]
    ).items()
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    assert stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]["processingState"] == "indexed"


def test_a_document_that_cannot_be_indexed_fails_with_a_reason_instead_of_retrying_for_ever(stack: Stack) -> None:
    # Given a text whose NUL bytes sit past the sniffed prefix (PostgreSQL refuses NUL in text)
    token = stack.token()
    content = b"plain words " * 1000 + b"\x00\x00 hidden \x00 zeros\n\nmore text\n"
    record = processed(stack, token, "zeros.txt", "text/plain", content)
    # Then it is indexed without the NULs, never left in `indexing` for the sweep to restart
    assert record["current"]["processingState"] == "indexed"
    status, answer = stack.json("POST", "/v1/search", token, {"query": "hidden zeros", "mode": "keyword"})
    assert status == 200 and "\x00" not in str(answer)
    assert answer["hits"][0]["citation"]["fileId"] == record["fileId"]


def test_ingesting_a_file_lists_no_object_versions_and_leaves_no_work_behind(stack: Stack) -> None:
    # A listing's cost grows with the bucket (moto's copied all of it), so no per-file step may list: the
    # pipeline finds the versions of what it wrote by key.
    token = stack.token()
    listings: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        listings.append(params.get("Prefix", ""))

    events = stack.container.content.client.meta.events  # type: ignore[attr-defined]
    events.register("before-call.s3.ListObjectVersions", record)
    try:
        # Given a text file (chunk, embed, index, publish) and a mixed PDF whose text layer OCR completes
        text = processed(stack, token, "notes.txt", "text/plain", b"Pallet 41 left the depot.\n" * 50)
        mixed = processed(stack, token, "mixed.pdf", "application/pdf", report_pdf(blank_second_page=True))
    finally:
        events.unregister("before-call.s3.ListObjectVersions", record)
    # Then both were indexed without a single listing, and no work object is left
    assert [r["current"]["processingState"] for r in (text, mixed)] == ["indexed", "indexed"]
    assert listings == []
    for record_ in (text, mixed):
        derived = f"derived/tenants/acme/files/{record_['fileId']}/"
        assert [o.key for o in stack.container.content.object_versions(derived) if "/work-" in o.key] == []


def test_a_damaged_docx_or_pdf_fails_with_a_fixed_sentence_never_the_librarys_words(stack: Stack) -> None:
    # Given files that pass the upload's sniffing but that their libraries cannot read (lxml and PDFium would
    # say where and what they expected)
    token = stack.token()
    package = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(word_document())) as source, zipfile.ZipFile(package, "w") as damaged:
        for info in source.infolist():
            body = source.read(info.filename)
            damaged.writestr(
                info, b"<w:document xmlns:w='urn:w'><w:body></w:document>" if "document.xml" in info.filename else body
            )
    docx = processed(stack, token, "damaged.docx", DOCX_TYPE, package.getvalue())
    pdf = processed(
        stack, token, "damaged.pdf", "application/pdf", b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nnot a PDF\n"
    )
    # Then each is malformed, and what the owner reads is the fix, not the library's exception
    assert docx["current"]["failure"]["reason"] == "malformed"
    assert docx["current"]["failure"]["detail"] == (
        "not a readable DOCX: open it in the program that made it, save it again and upload it again"
    )
    assert pdf["current"]["failure"]["reason"] == "malformed"
    assert pdf["current"]["failure"]["detail"] == (
        "the PDF is damaged and cannot be opened: save or print it to a new PDF and upload that"
    )
