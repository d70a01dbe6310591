"""PDF tools over HTTP: merge, split, watermark, compose and a cited report, as new files through the export
worker; inputs never change; an encrypted input fails with a sentence; unentitled inputs are not found."""

import io
import urllib.request
import uuid
from typing import Any

from pypdf import PdfReader, PdfWriter

from tests.builders.pdf import page_texts, pdf_of, top_level_outline
from tests.integration.api_steps import drain
from tests.integration.files_stack import Stack


def upload_pdf(stack: Stack, token: str, name: str, content: bytes) -> str:
    ticket = stack.upload(token, name, "application/pdf", content)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    return str(ticket["fileId"])


def results(stack: Stack, token: str, path: str, body: dict[str, Any], expect: int = 202) -> list[Any]:
    status, answer = stack.json("POST", path, token, body)
    assert status == expect, answer
    drain(stack)
    done = []
    for claimed in answer["exports"]:
        status, record = stack.json("GET", f"/v1/exports/{claimed['exportId']}", token)
        assert status == 200
        done.append(record)
    return done


def fetched(record: Any) -> bytes:
    assert record["state"] == "rendered", record
    with urllib.request.urlopen(record["url"], timeout=20) as response:
        return response.read()  # type: ignore[no-any-return]


def test_merge_split_watermark_and_compose_make_new_files_and_leave_the_inputs_alone(stack: Stack) -> None:
    token = stack.token(tenant="pdfs")
    first_bytes, second_bytes = pdf_of("A1", "A2", "A3"), pdf_of("B1", "B2")
    first = upload_pdf(stack, token, "a.pdf", first_bytes)
    second = upload_pdf(stack, token, "b.pdf", second_bytes)
    (merged,) = results(
        stack, token, "/v1/pdf/merge", {"sources": [{"fileId": first}, {"fileId": second}], "name": "ab"}
    )
    content = fetched(merged)
    assert page_texts(content) == ["A1", "A2", "A3", "B1", "B2"] and merged["pageCount"] == 5
    assert [item.title for item in top_level_outline(PdfReader(io.BytesIO(content)))] == ["a.pdf", "b.pdf"]
    _, file = stack.json("GET", f"/v1/files/{merged['fileId']}", token)
    assert file["filename"] == "ab.pdf" and file["current"]["processingState"] == "skipped"

    parts = results(stack, token, "/v1/pdf/split", {"fileId": first, "ranges": ["1", "2-"]})
    assert [page_texts(fetched(part)) for part in parts] == [["A1"], ["A2", "A3"]]

    (stamped,) = results(stack, token, "/v1/pdf/watermark", {"fileId": second, "text": "DRAFT"})
    assert all("DRAFT" in text for text in page_texts(fetched(stamped)))

    pages = [{"fileId": second, "pages": "2"}, {"fileId": first, "pages": "3,1"}]
    (composed,) = results(stack, token, "/v1/pdf/compose", {"pages": pages})
    assert page_texts(fetched(composed)) == ["B2", "A3", "A1"]

    # The originals are exactly what was uploaded.
    for file_id, original in ((first, first_bytes), (second, second_bytes)):
        _, signed = stack.json("GET", f"/v1/files/{file_id}/content", token)
        with urllib.request.urlopen(signed["url"], timeout=20) as response:
            assert response.read() == original
    # The same operation on the same versions is the same result, not a second render.
    (again,) = results(
        stack, token, "/v1/pdf/merge", {"sources": [{"fileId": first}, {"fileId": second}], "name": "ab"}, 200
    )
    assert again["exportId"] == merged["exportId"]


def test_a_bad_input_fails_its_result_with_a_sentence_and_bad_requests_name_the_problem(stack: Stack) -> None:
    token = stack.token(tenant="pdfs-bad")
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_of("secret"))))
    writer.encrypt("pw")
    locked = io.BytesIO()
    writer.write(locked)
    locked_id = upload_pdf(stack, token, "locked.pdf", locked.getvalue())
    plain = upload_pdf(stack, token, "plain.pdf", pdf_of("P1", "P2"))
    (failed,) = results(stack, token, "/v1/pdf/merge", {"sources": [{"fileId": plain}, {"fileId": locked_id}]})
    assert failed["state"] == "failed" and "locked.pdf is encrypted" in failed["failure"]
    (missing,) = results(stack, token, "/v1/pdf/split", {"fileId": plain, "ranges": ["3-4"]})
    assert missing["state"] == "failed" and "plain.pdf has 2 pages" in missing["failure"]
    status, refused = stack.json("POST", "/v1/pdf/split", token, {"fileId": plain, "ranges": ["two"]})
    assert status == 400 and "ranges[0]" in refused["message"]
    ticket = stack.upload(token, "notes.txt", "text/plain", b"just text\n")
    status, refused = stack.json("POST", "/v1/pdf/watermark", token, {"fileId": ticket["fileId"], "text": "x"})
    assert status == 400 and "is not a PDF" in refused["message"]


def test_inputs_the_caller_cannot_read_are_not_found_exactly_like_random_ids(stack: Stack) -> None:
    owner = stack.token(tenant="pdfs-owner")
    theirs = upload_pdf(stack, owner, "private.pdf", pdf_of("private"))
    intruder_tokens = [stack.token(tenant="pdfs-intruder"), stack.token(tenant="pdfs-owner", collections=("other",))]
    for intruder in intruder_tokens:
        for path, body in (
            ("/v1/pdf/merge", lambda f: {"sources": [{"fileId": f}, {"fileId": f}]}),
            ("/v1/pdf/split", lambda f: {"fileId": f, "ranges": ["1"]}),
            ("/v1/pdf/watermark", lambda f: {"fileId": f, "text": "x"}),
            ("/v1/pdf/compose", lambda f: {"pages": [{"fileId": f, "pages": "1"}]}),
        ):
            real = stack.json("POST", path, intruder, body(theirs))
            random = stack.json("POST", path, intruder, body(str(uuid.uuid4())))
            assert real == random and real[0] == 404, (path, real)


def test_create_pdf_makes_a_cited_report_artifact_and_its_pdf(stack: Stack) -> None:
    token = stack.token(tenant="pdfs-report")
    (report,) = results(
        stack,
        token,
        "/v1/pdf/create",
        {"collectionId": "docs", "name": "Weekly", "markdown": "# Weekly\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n"},
    )
    assert report["kind"] == "artifact" and page_texts(fetched(report))[0].startswith("Weekly")
    status, artifact = stack.json("GET", f"/v1/artifacts/{report['artifactId']}", token)
    assert status == 200 and artifact["version"]["provenance"]["producer"] == "create_pdf"
