"""Upload → Object Created → the in-process pipeline (inspect, extract) → a readable, windowed document."""

import uuid
from typing import Any

from functions.extract import handler as extract_step
from functions.inspect import handler as inspect_step
from shared.local.http_api import LocalLambdaContext
from tests.conftest import load_event
from tests.integration.files_stack import DOCX_TYPE, Stack
from tests.unit.test_office_parsers import word_document
from tests.unit.test_pdf_parser import report_pdf


def processed(stack: Stack, token: str, filename: str, media_type: str, content: bytes) -> dict[str, Any]:
    ticket = stack.upload(token, filename, media_type, content)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, record = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert status == 200
    return record  # type: ignore[no-any-return]


def test_an_uploaded_docx_is_extracted_and_read_as_markdown_with_locations(stack: Stack) -> None:
    token = stack.token()
    record = processed(stack, token, "Handbook.docx", DOCX_TYPE, word_document())
    current = record["current"]
    assert current["processingState"] == "extracted"
    assert current["extraction"]["blockCount"] >= 8
    status, window = stack.json("GET", f"/v1/files/{record['fileId']}/document", token)
    assert status == 200
    assert "# Employee handbook" in window["markdown"]
    assert "| Region | Days |\n| --- | --- |\n| EU | 25 |" in window["markdown"]
    table = next(block for block in window["blocks"] if block["kind"] == "table")
    assert table["location"] == {"table_index": 0}
    assert table["heading_path"] == ["Leave"]
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
    from datetime import UTC, datetime

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
    with_container = [inspect_step, extract_step]
    originals = [module.container for module in with_container]
    try:
        for module in with_container:
            module.container = stack.container
        # Already extracted by the local runner: inspect says so and does not proceed.
        inspected = inspect_step.handler(event, LocalLambdaContext())
        assert inspected["proceed"] is False
        assert set(inspected) <= {"tenantId", "fileId", "versionId", "proceed", "why", "mediaType", "byteSize"}
        deleted = {**event, "versionId": str(uuid.uuid4())}
        assert extract_step.handler(deleted, LocalLambdaContext())["proceed"] is False
    finally:
        for module, original in zip(with_container, originals, strict=True):
            module.container = original
