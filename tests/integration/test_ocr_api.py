"""Scans and images end to end over HTTP: browser upload → text layer → RapidOCR (the real engine, turning
an upside-down page upright) → chunks → search, with citations whose page and box are checked against
where the typesetter put the words; low confidence flagged in all three places; usage recorded."""

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from shared.domain.recognition import LOW_CONFIDENCE_THRESHOLD, BoundingBox
from shared.domain.recognized_layout import turned
from shared.domain.uploads import derived_prefix
from shared.local import scan_corpus
from shared.local.scan_corpus import GeneratedScan
from tests.integration.files_stack import Stack

# Tolerance for a box drawn around OCR's detection of a word versus the typesetter's glyph boxes.
SLACK = 0.012


def processed(stack: Stack, token: str, scan: GeneratedScan) -> dict[str, Any]:
    ticket = stack.upload(token, scan.filename, scan.media_type, scan.content)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, record = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert status == 200, record
    return record  # type: ignore[no-any-return]


def top_hit(stack: Stack, token: str, query: str) -> dict[str, Any]:
    status, answer = stack.json("POST", "/v1/search", token, {"query": query, "limit": 3})
    assert status == 200 and answer["outcome"] == "found", answer
    return answer["hits"][0]  # type: ignore[no-any-return]


def printed_box(page: tuple[str, list[str]], phrase: str) -> BoundingBox:
    """Where the typesetter put `phrase` on the upright page, normalised (the ground truth of a citation)."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(scan_corpus._typeset_pdf(*page))
    try:
        pdf_page = document[0]
        width, height = pdf_page.get_size()
        textpage = pdf_page.get_textpage()
        searcher = textpage.search(phrase)
        found = searcher.get_next()
        assert found is not None, phrase
        start, count = found
        boxes = [textpage.get_charbox(index) for index in range(start, start + count)]
        left, bottom = min(box[0] for box in boxes), min(box[1] for box in boxes)
        right, top = max(box[2] for box in boxes), max(box[3] for box in boxes)
        return BoundingBox(
            left=left / width, top=1 - top / height, width=(right - left) / width, height=(top - bottom) / height
        )
    finally:
        document.close()


def inside(inner: BoundingBox, outer: dict[str, float]) -> bool:
    return (
        inner.left >= outer["left"] - SLACK
        and inner.top >= outer["top"] - SLACK
        and inner.right <= outer["left"] + outer["width"] + SLACK
        and inner.bottom <= outer["top"] + outer["height"] + SLACK
    )


@pytest.fixture(scope="module")
def scanned(stack: Stack) -> dict[str, Any]:
    tenant = f"o{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant, collections=("docs",))
    records = {scan.filename: processed(stack, token, scan) for scan in scan_corpus.scan_corpus()}
    return {"token": token, "tenant": tenant, "records": records}


def test_a_scanned_pdf_is_read_by_ocr_with_its_upside_down_page_turned(stack: Stack, scanned: dict[str, Any]) -> None:
    record = scanned["records"]["scanned-remittance.pdf"]["current"]
    assert record["processingState"] == "indexed", record
    assert record["ocr"]["state"] == "recognized" and record["ocr"]["engine"] == "rapidocr"
    assert record["ocr"]["pages"] == [1, 2]
    assert record["ocr"]["confidence"] >= 0.9 and record["ocr"]["lowConfidence"] is False
    assert record["extraction"]["pagesWithoutText"] == []
    assert record["indexing"]["chunkCount"] >= 2

    # Words that exist only in the pixels of page 1.
    hit = top_hit(stack, scanned["token"], "QX-7731")
    citation = hit["citation"]
    assert citation["filename"] == "scanned-remittance.pdf" and citation["page"] == 1
    assert citation["kind"] == "transcription" and citation["ocrConfidence"] >= LOW_CONFIDENCE_THRESHOLD
    assert "QX-7731" in hit["excerpt"]
    assert inside(printed_box(scan_corpus.INVOICE_PAGE, "QX-7731"), citation["box"]), citation["box"]
    assert citation["box"]["height"] < 0.4  # the cited text's region, not the whole page

    # Page 2 was scanned upside down: found, and its box is where the words are on the page as displayed.
    hit = top_hit(stack, scanned["token"], "Marguerite Okonkwo certified")
    citation = hit["citation"]
    assert citation["page"] == 2 and "Okonkwo" in hit["excerpt"]
    upright = printed_box(scan_corpus.INSPECTION_PAGE, "Marguerite Okonkwo")
    assert inside(turned(upright, 180), citation["box"]), (turned(upright, 180), citation["box"])
    assert citation["box"]["top"] > 0.5  # near the top of the upright page, so near the bottom as displayed


def test_a_mixed_pdf_keeps_its_text_layer_and_reads_only_the_scanned_page(
    stack: Stack, scanned: dict[str, Any]
) -> None:
    record = scanned["records"]["mixed-operations.pdf"]["current"]
    assert record["processingState"] == "indexed", record
    assert record["ocr"]["pages"] == [2]
    typed = top_hit(stack, scanned["token"], "warehouse throughput eleven percent")
    assert typed["citation"]["page"] == 1 and typed["citation"]["kind"] == "quote"
    scanned_hit = top_hit(stack, scanned["token"], "Quillbrook maritime trust")
    assert scanned_hit["citation"]["page"] == 2 and scanned_hit["citation"]["kind"] == "transcription"
    assert inside(printed_box(scan_corpus.MINUTES_PAGE, "Quillbrook"), scanned_hit["citation"]["box"])


def test_a_screenshot_table_is_read_as_a_table_and_the_missing_vision_model_is_said(
    stack: Stack, scanned: dict[str, Any]
) -> None:
    record = scanned["records"]["returns-dashboard.png"]["current"]
    assert record["processingState"] == "indexed", record
    assert record["ocr"]["pages"] == [1]
    # No vision model runs locally: said on the file, never a made-up description.
    assert record["vision"]["state"] == "unavailable" and "QUIRE_VISION_MODEL_ID" in record["vision"]["detail"]
    hit = top_hit(stack, scanned["token"], "Kamchatka returns")
    citation = hit["citation"]
    assert citation["filename"] == "returns-dashboard.png" and citation["page"] == 1 and citation["box"]
    assert "Kamchatka | 611 | 8 | 15.8%" in hit["excerpt"]
    assert "Region | Orders | Returns | Margin" in hit["excerpt"]  # the header row repeated with its rows

    # The agent tools read what search cites: the stored document.
    file_id = scanned["records"]["returns-dashboard.png"]["fileId"]
    status, answer = stack.json("POST", "/v1/tools/extract_tables", scanned["token"], {"fileId": file_id})
    assert status == 200 and not answer["isError"], answer
    tables = answer["result"]["tables"]
    assert len(tables) == 1 and "| Region | Orders | Returns | Margin |" in tables[0]["content"]
    assert tables[0]["confidence"] is not None
    reader = stack.container.document_reader
    analysis = reader.analyze_image(reader.entitled(_principal(scanned), uuid.UUID(file_id)))
    assert analysis.description is None and analysis.recognition.vision_state == "unavailable"
    assert any("Zanzibar" in piece.text for piece in analysis.transcription)


def test_a_degraded_scan_is_flagged_low_confidence_in_all_three_places(stack: Stack, scanned: dict[str, Any]) -> None:
    token = scanned["token"]
    entry = scanned["records"]["faded-delivery-note.pdf"]
    current = entry["current"]
    assert current["processingState"] == "indexed", current
    # 1. The file record (and 2. its listing line).
    assert current["ocr"]["lowConfidence"] is True and current["ocr"]["confidence"] < LOW_CONFIDENCE_THRESHOLD
    assert entry["lowConfidence"] is True
    status, listing = stack.json("GET", "/v1/files?limit=100", token)
    assert status == 200
    flags = {line["filename"]: line["lowConfidence"] for line in listing["files"]}
    assert flags["faded-delivery-note.pdf"] is True and flags["scanned-remittance.pdf"] is False
    # 3. The read result and the document's own warning.
    status, window = stack.json("GET", f"/v1/files/{entry['fileId']}/document", token)
    assert status == 200 and window["lowConfidence"] is True and window["recognizedPages"] == [1]
    assert any("low OCR confidence" in warning for warning in window["warnings"])
    status, clean = stack.json(
        "GET", f"/v1/files/{scanned['records']['scanned-remittance.pdf']['fileId']}/document", token
    )
    assert status == 200 and clean["lowConfidence"] is False


def test_usage_is_recorded_once_per_version_and_step_and_scoped_to_the_caller(
    stack: Stack, scanned: dict[str, Any]
) -> None:
    status, usage = stack.json("GET", "/v1/usage", scanned["token"])
    assert status == 200, usage
    ocr = [line for line in usage["lines"] if line["step"] == "ocr"]
    assert len(ocr) == 1 and ocr[0]["provider"] == "rapidocr" and ocr[0]["priced"] is False
    # One call per scan; pages read: 2 (scanned) + 1 (mixed, page 2 only) + 1 (screenshot) + 1 (degraded).
    assert (ocr[0]["calls"], ocr[0]["pages"]) == (4, 5)
    embed = [line for line in usage["lines"] if line["step"] == "embed"]
    assert embed and embed[0]["calls"] == 4 and embed[0]["inputTokens"] > 0
    # Another tenant sees none of it, and neither does a caller of another collection.
    for token in (
        stack.token(tenant=f"x{uuid.uuid4().hex[:8]}"),
        stack.token(tenant=scanned["tenant"], collections=("hr",)),
    ):
        status, other = stack.json("GET", "/v1/usage", token)
        assert status == 200 and other["lines"] == []


def test_a_rescan_reads_every_page_again_as_a_new_attempt(stack: Stack, scanned: dict[str, Any]) -> None:
    token = scanned["token"]
    file_id = scanned["records"]["mixed-operations.pdf"]["fileId"]
    before = stack.container.file_metadata.get_file(scanned["tenant"], uuid.UUID(file_id))
    assert before is not None and before.current.document_key is not None
    status, started = stack.json("POST", f"/v1/files/{file_id}/scan", token)
    assert status == 202 and started["state"] == "queued" and started["engine"] == "rapidocr"
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, record = stack.json("GET", f"/v1/files/{file_id}", token)
    assert record["current"]["processingState"] == "indexed"
    # Every page now, the typed one included (in place of its text layer).
    assert record["current"]["ocr"]["pages"] == [1, 2]
    hit = top_hit(stack, token, "warehouse throughput eleven percent")
    assert hit["citation"]["page"] == 1 and hit["citation"]["kind"] == "transcription"
    status, usage = stack.json("GET", "/v1/usage", token)
    ocr = next(line for line in usage["lines"] if line["step"] == "ocr")
    assert (ocr["calls"], ocr["pages"]) == (5, 7)  # the rescan was a real second call, recorded as one
    # The document of the attempt before is gone with it: nothing points at it any more.
    assert stack.container.content.head(before.current.document_key) is None
    # Deleting the file sweeps everything ever derived from it.
    assert stack.call("DELETE", f"/v1/files/{file_id}", token)[0] == 202
    stack.container.reconciler.run(datetime.now(UTC))
    derived = derived_prefix(before.current.storage_key)
    assert list(stack.container.content.object_versions(derived)) == []


def test_scan_refuses_what_it_cannot_scan_and_hides_what_the_caller_may_not_see(
    stack: Stack, scanned: dict[str, Any]
) -> None:
    token = scanned["token"]
    file_id = scanned["records"]["scanned-remittance.pdf"]["fileId"]
    outsider = stack.token(tenant=f"x{uuid.uuid4().hex[:8]}")
    other_collection = stack.token(tenant=scanned["tenant"], collections=("hr",))
    missing = stack.json("POST", f"/v1/files/{uuid.uuid4()}/scan", token)
    for caller in (outsider, other_collection):
        assert stack.json("POST", f"/v1/files/{file_id}/scan", caller) == missing
    assert missing[0] == 404
    text = stack.upload(token, "notes.md", "text/markdown", b"# Notes\n\nNothing to scan here.\n")
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, refusal = stack.json("POST", f"/v1/files/{text['fileId']}/scan", token)
    assert status == 400 and "only PDFs and images" in refusal["message"]


def _principal(scanned: dict[str, Any]) -> Any:
    from shared.domain.auth import Role, with_role

    return with_role(scanned["tenant"], "ann", {"docs"}, Role.ADMIN)
