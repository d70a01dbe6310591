"""Exports over HTTP: an exact artifact version (or an uploaded file version) rendered off the request path into a
file through the file ports, downloaded through a signed URL with entitlement checked again; once per source and
format even under concurrent requests; crash injection between the file row and the rendered mark."""

import threading
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.adapters.parsers.docx import DocxParser
from shared.adapters.parsers.pdf import PdfParser
from shared.domain.document import BlockKind, ExtractedDocument, ExtractionLimits
from shared.domain.exports import ExportKind, RenderJob
from tests.integration.api_steps import REPORT, RUNBOOK, create, drain, indexed
from tests.integration.files_stack import Stack

TABLE = (
    "| Item | Qty | Price |\n| --- | --- | --- |\n| Apples | 3 | 1.20 |\n| Pears | 5 | 0.80 |\n| Plums | 12 | 2.10 |\n"
)


def export(stack: Stack, token: str, artifact_id: str, version: int, fmt: str) -> tuple[int, Any]:
    return stack.json("POST", f"/v1/artifacts/{artifact_id}/versions/{version}/exports", token, {"format": fmt})


def rendered(stack: Stack, token: str, export_id: str) -> Any:
    drain(stack)
    status, record = stack.json("GET", f"/v1/exports/{export_id}", token)
    assert status == 200, record
    return record


def download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=20) as response:
        return response.read()  # type: ignore[no-any-return]


def test_an_artifact_version_exports_to_pdf_and_docx_and_reads_back(stack: Stack) -> None:
    token = stack.token()
    artifact_id = create(stack, token, {"markdown": REPORT + "\n" + TABLE})["artifactId"]
    for fmt, parser in (("pdf", PdfParser()), ("docx", DocxParser())):
        status, claimed = export(stack, token, artifact_id, 1, fmt)
        assert status == 202 and claimed["state"] == "pending" and claimed["url"] is None
        record = rendered(stack, token, claimed["exportId"])
        assert record["state"] == "rendered" and record["failure"] is None, record
        expires = datetime.fromisoformat(record["expiresAt"])
        assert expires - datetime.now(UTC) <= timedelta(minutes=15, seconds=5)
        content = download(record["url"])
        assert len(content) == record["byteSize"]
        back = parser.parse(content, ExtractionLimits())
        assert isinstance(back, ExtractedDocument)
        headings = {block.text for block in back.blocks if block.kind is BlockKind.HEADING}
        assert {"Quarterly report", "Risks"} <= headings
        cells = {cell for block in back.blocks if block.table for row in block.table.rows for cell in row}
        assert {"Apples", "Plums", "2.10"} <= cells
        # The rendering is a file of the collection, never extracted.
        status, file = stack.json("GET", f"/v1/files/{record['fileId']}", token)
        assert status == 200 and file["current"]["processingState"] == "skipped"
        assert file["current"]["exportId"] == record["exportId"]
        assert file["filename"] == f"Q3 v1.{fmt}"
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, file = stack.json("GET", f"/v1/files/{record['fileId']}", token)
    assert file["current"]["processingState"] == "skipped"  # the upload path did not start the pipeline


def test_the_same_export_is_claimed_once_even_by_concurrent_requests(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = stack.token()
    artifact_id = create(stack, token, {"markdown": "# Once\n\nOnly one render.\n"})["artifactId"]
    renders: list[RenderJob] = []
    real_render = stack.container.exports.render

    def counting(job: RenderJob) -> Any:
        renders.append(job)
        return real_render(job)

    monkeypatch.setattr(stack.container.exports, "render", counting)
    answers: list[tuple[int, Any]] = []
    barrier = threading.Barrier(6)

    def ask() -> None:
        barrier.wait()
        answers.append(export(stack, token, artifact_id, 1, "pdf"))

    askers = [threading.Thread(target=ask) for _ in range(6)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    assert {answer["exportId"] for _, answer in answers} == {answers[0][1]["exportId"]}
    record = rendered(stack, token, answers[0][1]["exportId"])
    assert record["state"] == "rendered"
    assert len(renders) == 1
    # Asked again later: the same record, already rendered (200), not a second render.
    status, again = export(stack, token, artifact_id, 1, "pdf")
    assert status == 200 and again["exportId"] == record["exportId"] and again["state"] == "rendered"
    drain(stack)
    assert len(renders) == 1
    # Another version is another export.
    stack.json(
        "POST", f"/v1/artifacts/{artifact_id}/versions", token, {"expectedLatestVersion": 1, "markdown": "# v2\n"}
    )
    status, second = export(stack, token, artifact_id, 2, "pdf")
    assert status == 202 and second["exportId"] != record["exportId"]
    status, missing = export(stack, token, artifact_id, 7, "pdf")
    assert status == 400 and "no version 7" in missing["message"]


def test_a_render_that_cannot_succeed_fails_with_a_sentence_and_leaves_no_file(stack: Stack) -> None:
    token = stack.token(tenant="fails")
    blocks = [{"kind": "table", "table": {"rows": [["a", "b"], ["w" * 6_000, "y"]], "header_rows": 1}}]
    artifact_id = create(stack, token, {"blocks": blocks})["artifactId"]
    status, claimed = export(stack, token, artifact_id, 1, "pdf")
    assert status == 202
    record = rendered(stack, token, claimed["exportId"])
    assert record["state"] == "failed" and record["fileId"] is None and record["url"] is None
    assert "taller than a page" in record["failure"] and "DOCX" in record["failure"]
    status, listed = stack.json("GET", "/v1/files", token)
    assert listed["files"] == []
    # The same answer on asking again: a failed render is not retried into the same answer.
    status, again = export(stack, token, artifact_id, 1, "pdf")
    assert status == 200 and again["exportId"] == record["exportId"] and again["state"] == "failed"
    # DOCX has no such limit: the same content renders there.
    status, docx = export(stack, token, artifact_id, 1, "docx")
    assert rendered(stack, token, docx["exportId"])["state"] == "rendered"


def test_a_crash_between_the_file_and_the_rendered_mark_leaves_a_pending_export_the_next_attempt_completes(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = stack.token(tenant="crashy")
    artifact_id = create(stack, token, {"markdown": "# Crash\n\nText.\n"})["artifactId"]
    store = stack.container.export_store

    def crash(*_: Any, **__: Any) -> bool:
        raise ConnectionError("the database went away after the file was stored")

    # First the bytes cannot be written: the file row exists (pending, so no download) and the export is pending.
    content = stack.container.content
    monkeypatch.setattr(content, "put", crash)
    _, claimed = export(stack, token, artifact_id, 1, "md")
    record = rendered(stack, token, claimed["exportId"])
    assert record["state"] == "pending" and record["fileId"] is None and record["url"] is None
    monkeypatch.undo()
    # Then the bytes are stored but the rendered mark is lost: never a rendered export without its bytes.
    monkeypatch.setattr(store, "mark_rendered", crash)
    with pytest.raises(ConnectionError):  # the infrastructure failing raises: only that is retried
        stack.container.exports.render(RenderJob(tenant_id="crashy", export_id=uuid.UUID(claimed["exportId"])))
    monkeypatch.undo()
    assert stack.json("GET", f"/v1/exports/{claimed['exportId']}", token)[1]["state"] == "pending"
    # The sweep hands it to the worker again; the attempt reuses the file row the first one made.
    resubmitted = stack.container.exports.resubmit_stalled("crashy", now=datetime.now(UTC) + timedelta(hours=1))
    assert resubmitted == 1
    record = rendered(stack, token, claimed["exportId"])
    assert record["state"] == "rendered" and download(record["url"]).startswith(b"# Crash")
    _, listed = stack.json("GET", "/v1/files", token)
    assert [file["fileId"] for file in listed["files"]] == [record["fileId"]]


def test_an_uploaded_file_converts_through_its_block_list(stack: Stack) -> None:
    token = stack.token()
    source = indexed(stack, token, "runbook-convert.md", RUNBOOK)
    status, claimed = stack.json("POST", f"/v1/files/{source['fileId']}/conversions", token, {"format": "docx"})
    assert status == 202 and claimed["kind"] == "conversion"
    assert claimed["sourceVersionId"] == source["current"]["versionId"]
    record = rendered(stack, token, claimed["exportId"])
    assert record["state"] == "rendered"
    back = DocxParser().parse(download(record["url"]), ExtractionLimits())
    assert isinstance(back, ExtractedDocument)
    assert "Incident ERR-4021" in {block.text for block in back.blocks if block.kind is BlockKind.HEADING}
    # An export cannot be converted again as if it were a source, and an unextracted version says why.
    status, refused = stack.json("POST", f"/v1/files/{record['fileId']}/conversions", token, {"format": "pdf"})
    assert status == 400 and "itself an export" in refused["message"]
    status, _ = stack.json("POST", f"/v1/files/{source['fileId']}/conversions", token, {"format": "exe"})
    assert status == 422


@pytest.mark.parametrize(
    "caller",
    [{"tenant": "other-co", "collections": ("docs",)}, {"tenant": "acme", "collections": ("elsewhere",)}],
    ids=["other tenant", "other collection"],
)
def test_every_export_route_answers_an_unentitled_caller_exactly_as_for_a_random_id(
    stack: Stack, caller: dict[str, Any]
) -> None:
    owner = stack.token()
    artifact_id = create(stack, owner, {"markdown": "# Private\n"})["artifactId"]
    _, claimed = export(stack, owner, artifact_id, 1, "html")
    record = rendered(stack, owner, claimed["exportId"])
    source = stack.upload(owner, "private.txt", "text/plain", b"private words\n")
    intruder = stack.token(**caller)
    probes = [
        ("POST", "/v1/artifacts/{id}/versions/1/exports", artifact_id, {"format": "pdf"}),
        ("GET", "/v1/exports/{id}", record["exportId"], None),
        ("POST", "/v1/files/{id}/conversions", source["fileId"], {"format": "pdf"}),
    ]
    for method, path, real_id, body in probes:
        theirs = stack.json(method, path.format(id=real_id), intruder, body)
        random = stack.json(method, path.format(id=uuid.uuid4()), intruder, body)
        malformed = stack.json(method, path.format(id="x"), intruder, body)
        assert theirs == random == malformed and theirs[0] == 404, (path, theirs)
    # The rendered file itself is no more visible than the artifact.
    assert stack.json("GET", f"/v1/files/{record['fileId']}", intruder)[0] == 404
    assert stack.json("GET", f"/v1/files/{record['fileId']}/content", intruder)[0] == 404


def test_an_exports_bytes_are_exactly_what_was_rendered_and_a_deleted_export_renders_again(stack: Stack) -> None:
    token = stack.token(tenant="tamper")
    artifact_id = create(stack, token, {"markdown": "# Signed off\n\nThe real text.\n"})["artifactId"]
    _, claimed = export(stack, token, artifact_id, 1, "md")
    record = rendered(stack, token, claimed["exportId"])
    original = download(record["url"])
    # Nobody can put other bytes under an export: no new version, no replacement of its file.
    body = {"filename": "Q3 v1.md", "mediaType": "text/markdown", "byteSize": 10}
    status, refused = stack.json("POST", f"/v1/files/{record['fileId']}/versions", token, body)
    assert status == 400 and "is an export" in refused["message"]
    status, refused = stack.json("POST", f"/v1/files/{record['fileId']}/replacements", token, {"markdown": "# x\n"})
    assert status == 400 and "is an export" in refused["message"]
    assert download(rendered(stack, token, claimed["exportId"])["url"]) == original
    # Its file deleted, the export says so; asked for again, it is rendered again as a new file.
    assert stack.json("DELETE", f"/v1/files/{record['fileId']}", token)[0] == 202
    gone = stack.json("GET", f"/v1/exports/{claimed['exportId']}", token)[1]
    assert gone["url"] is None and "deleted" in gone["failure"]
    status, again = export(stack, token, artifact_id, 1, "md")
    assert status == 202 and again["exportId"] == claimed["exportId"] and again["state"] == "pending"
    renewed = rendered(stack, token, claimed["exportId"])
    assert renewed["state"] == "rendered" and renewed["fileId"] != record["fileId"]
    assert download(renewed["url"]) == original  # the same content gives the same bytes


def test_a_failure_that_may_pass_is_rendered_again_when_asked_and_leaves_no_file_behind(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.domain.exports import RenderFailed

    token = stack.token(tenant="flaky")
    artifact_id = create(stack, token, {"markdown": "# Flaky\n"})["artifactId"]
    content = stack.container.content

    def lost(*_: Any, **__: Any) -> Any:
        raise ConnectionError("the bytes did not land")

    monkeypatch.setattr(content, "put", lost)
    _, claimed = export(stack, token, artifact_id, 1, "html")
    assert rendered(stack, token, claimed["exportId"])["state"] == "pending"  # its file row is pending
    monkeypatch.undo()
    service = stack.container.exports

    def timed_out(record: Any) -> Any:
        raise RenderFailed("rendering took longer than 120 seconds (the export limit)", retryable=True)

    monkeypatch.setitem(service._producers, ExportKind.ARTIFACT, timed_out)
    service.render(RenderJob(tenant_id="flaky", export_id=uuid.UUID(claimed["exportId"])))
    monkeypatch.undo()
    failed = stack.json("GET", f"/v1/exports/{claimed['exportId']}", token)[1]
    assert failed["state"] == "failed" and "longer than" in failed["failure"]
    # Nothing partial: the file row the first attempt made left with the failure.
    assert stack.json("GET", "/v1/files", token)[1]["files"] == []
    status, again = export(stack, token, artifact_id, 1, "html")
    assert status == 202 and again["state"] == "pending"
    assert rendered(stack, token, claimed["exportId"])["state"] == "rendered"


def test_a_late_worker_of_an_earlier_generation_changes_nothing(stack: Stack) -> None:
    token = stack.token(tenant="late")
    artifact_id = create(stack, token, {"markdown": "# Late\n"})["artifactId"]
    _, claimed = export(stack, token, artifact_id, 1, "md")
    first = rendered(stack, token, claimed["exportId"])
    store = stack.container.export_store
    export_id = uuid.UUID(claimed["exportId"])
    assert stack.json("DELETE", f"/v1/files/{first['fileId']}", token)[0] == 202
    assert export(stack, token, artifact_id, 1, "md")[1]["state"] == "pending"  # generation 1 is rendering
    # The earlier generation can neither reopen it nor mark it, whatever it finished with.
    assert store.reopen("late", export_id, generation=0) is None
    assert not store.mark_failed("late", export_id, generation=0, reason="late failure")
    second = rendered(stack, token, claimed["exportId"])
    assert second["state"] == "rendered" and second["fileId"] != first["fileId"]
    record = store.get("late", export_id)
    assert record is not None and record.generation == 1


CONTRACT = b"# Supply contract\n\nThe supplier delivers turbine blades every quarter under this agreement.\n"


def test_an_export_keeps_its_sources_metadata_as_it_was_when_it_was_claimed(stack: Stack) -> None:
    token = stack.token(tenant=f"p{uuid.uuid4().hex[:10]}")  # its own tenant: metadata key types are per collection
    body = {"collectionId": "docs", "filename": "contract.md", "mediaType": "text/markdown"}
    status, ticket = stack.json(
        "POST", "/v1/uploads", token, {**body, "byteSize": len(CONTRACT), "metadata": {"customer": "acme"}}
    )
    assert status == 201, ticket
    assert stack.post_bytes(ticket, CONTRACT, "text/markdown") in (200, 201, 204)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, found = stack.json("POST", "/v1/search", token, {"query": "turbine blades"})
    chunk_id = found["hits"][0]["chunkId"]
    content = {"markdown": "Blades ship quarterly [1].\n", "citations": [{"chunkId": chunk_id}]}
    artifact_id = create(stack, token, content)["artifactId"]
    source = {"fileId": ticket["fileId"], "versionId": ticket["versionId"]}
    acme = {**source, "metadata": {"customer": "acme"}, "metadataRevision": 0}
    _, of_version_1 = export(stack, token, artifact_id, 1, "md")
    _, converted = stack.json("POST", f"/v1/files/{ticket['fileId']}/conversions", token, {"format": "md"})
    assert of_version_1["sources"] == [{**acme, "chunkIds": [chunk_id]}]
    assert converted["sources"] == [{**acme, "chunkIds": []}]

    status, _ = stack.json("PATCH", f"/v1/files/{ticket['fileId']}/metadata", token, {"set": {"customer": "globex"}})
    assert status == 200
    globex = {**source, "metadata": {"customer": "globex"}, "metadataRevision": 1}
    # What was exported stays as it was; a new export shows the metadata now.
    for made in (of_version_1, converted):
        assert rendered(stack, token, made["exportId"])["sources"] == made["sources"]
    _, converted_now = stack.json("POST", f"/v1/files/{ticket['fileId']}/conversions", token, {"format": "txt"})
    assert converted_now["sources"] == [{**globex, "chunkIds": []}]
    stack.json("POST", f"/v1/artifacts/{artifact_id}/versions", token, {**content, "expectedLatestVersion": 1})
    _, of_version_2 = export(stack, token, artifact_id, 2, "md")
    assert of_version_2["sources"] == [{**globex, "chunkIds": [chunk_id]}]
    # Another format of version 1 names version 1's sources, as the version recorded them.
    _, of_version_1_as_text = export(stack, token, artifact_id, 1, "txt")
    assert of_version_1_as_text["sources"] == of_version_1["sources"]
    # The rendered notes name the cited file's metadata as it was cited.
    notes = {
        version: download(rendered(stack, token, made["exportId"])["url"]).decode()
        for version, made in ((1, of_version_1), (2, of_version_2))
    }
    assert "contract.md, version" in notes[1] and "(customer: acme)" in notes[1] and "globex" not in notes[1]
    assert "(customer: globex)" in notes[2]
