"""Spend and capacity limits per tenant (issue 16) on the in-process stack: over each limit the API answers 429
with Retry-After and a sentence naming the limit, before anything is recorded or spent, and the pipeline over the
daily OCR limit ends the version in a recorded state without asking the engine. Each test has its own tenant and
its own Container with the limit it needs (the session's stack keeps the defaults)."""

import json
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime
from typing import Any

from shared.domain.capabilities import CapabilityStatus
from shared.domain.files import FailureReason, ProcessingState
from shared.domain.limits import Spend, day_start
from shared.domain.recognition import (
    BoundingBox,
    RecognitionJob,
    RecognitionResult,
    RecognizedLine,
    RecognizedPage,
)
from shared.domain.usage import Usage
from shared.local import scan_corpus
from shared.ports import OcrProvider, OcrSource
from tests.integration.files_stack import Stack
from tests.integration.limited_stack import limited

BOX = BoundingBox(left=0.1, top=0.1, width=0.6, height=0.03)


class FakeCountingOcr(OcrProvider):
    """An engine that reads every page it is asked for at once, and counts how often it was asked."""

    def __init__(self) -> None:
        self.sources: list[OcrSource] = []

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready("fake-counting-ocr")

    def start(self, source: OcrSource) -> RecognitionResult:
        self.sources.append(source)
        pages = tuple(
            RecognizedPage(page=page, lines=(RecognizedLine(text=f"Counted words {page}", box=BOX, confidence=0.9),))
            for page in source.pages or ()
        )
        usage = Usage(provider="fake-counting-ocr", operation="fake:read", priced=True, pages=len(pages))
        return RecognitionResult(engine="fake-counting-ocr", pages=pages, usage=usage)

    def collect(self, job: RecognitionJob) -> RecognitionResult | None:
        raise AssertionError("this engine never hands out a job")

    def discard(self, job: RecognitionJob) -> None:
        raise AssertionError("this engine never hands out a job")


def call(stack: Stack, method: str, path: str, token: str, body: Any = None) -> tuple[int, dict[str, str], Any]:
    """Status, headers and JSON body (Stack.call drops the headers; a 429's Retry-After is one)."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    request = urllib.request.Request(f"{stack.api}{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, dict(response.headers), json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read() or b"null")


def new_tenant() -> str:
    return f"l{uuid.uuid4().hex[:10]}"


def assert_refused(answer: tuple[int, dict[str, str], Any], limit: str, *words: str) -> str:
    status, headers, body = answer
    assert status == 429, body
    assert int(headers["Retry-After"]) >= 1
    assert body["error"] == "limit_exceeded" and body["limit"] == limit
    for word in words:
        assert word in body["message"], body["message"]
    return str(body["message"])


def test_an_upload_ticket_past_the_daily_bytes_is_a_429_and_nothing_is_recorded_or_signed(stack: Stack) -> None:
    tenant = new_tenant()
    token = stack.token(tenant=tenant)
    upload = {"collectionId": "docs", "filename": "a.txt", "mediaType": "text/plain", "byteSize": 600}
    with limited(stack, limit_upload_bytes_per_day=1_000) as container:
        status, _, ticket = call(stack, "POST", "/v1/uploads", token, upload)
        assert status == 201, ticket
        refused = call(stack, "POST", "/v1/uploads", token, {**upload, "filename": "b.txt"})
        message = assert_refused(refused, "upload_bytes_per_day", "daily upload limit of 1,000 bytes", "00:00 UTC")
        assert "url" not in json.dumps(refused[2])  # no presigned POST
        version = {"filename": "a.txt", "mediaType": "text/plain", "byteSize": 600}
        again = call(stack, "POST", f"/v1/files/{ticket['fileId']}/versions", token, version)
        assert_refused(again, "upload_bytes_per_day")
        assert container.file_metadata.declared_bytes_since(tenant, day_start(datetime.now(UTC))) == 600
        status, _, listing = call(stack, "GET", "/v1/files", token)
        assert status == 200 and len(listing["files"]) == 1
    assert "600 declared today, 600 more needed" in message


def test_the_pipeline_over_the_daily_ocr_pages_records_why_without_asking_the_engine_and_a_rescan_is_a_429(
    stack: Stack,
) -> None:
    tenant = new_tenant()
    token = stack.token(tenant=tenant)
    engine = FakeCountingOcr()
    scan = scan_corpus.scanned_pdf()  # two pages, no text layer
    with limited(stack, ocr=engine, limit_ocr_pages_per_day=1) as container:
        ticket = stack.upload(token, scan.filename, scan.media_type, scan.content)
        container.workflow.drain()  # type: ignore[attr-defined]
        found = container.file_metadata.find_version(tenant, uuid.UUID(ticket["versionId"]))
        assert found is not None
        version = found[1]
        assert version.processing_state is ProcessingState.FAILED
        assert version.failure_reason is FailureReason.SPEND_LIMIT
        assert "this needs 2 pages, more than the tenant's daily OCR limit of 1 page" in (version.failure_detail or "")
        assert "scan the file again after 00:00 UTC" in (version.failure_detail or "")
        assert engine.sources == []
        assert container.usage_ledger.spent_since(tenant, day_start(datetime.now(UTC))) == Spend()
        # Rescanning it is refused by the API first, before an attempt is queued.
        refused = call(stack, "POST", f"/v1/files/{ticket['fileId']}/scan", token)
        assert_refused(refused, "ocr_pages_per_day", "daily OCR limit of 1 page")
        again = container.file_metadata.find_version(tenant, version.version_id)
        assert again is not None and again[1].processing_attempt == version.processing_attempt
    assert engine.sources == []


def test_the_rescan_past_the_limit_per_file_per_hour_is_a_429_and_ocr_is_not_asked_again(stack: Stack) -> None:
    tenant = new_tenant()
    token = stack.token(tenant=tenant)
    engine = FakeCountingOcr()
    image = scan_corpus.table_screenshot()
    with limited(stack, ocr=engine, limit_rescans_per_file_per_hour=2) as container:
        ticket = stack.upload(token, image.filename, image.media_type, image.content)
        container.workflow.drain()  # type: ignore[attr-defined]
        assert len(engine.sources) == 1  # its first processing read it: one OCR run of the file this hour
        status, _, started = call(stack, "POST", f"/v1/files/{ticket['fileId']}/scan", token)
        assert status == 202, started
        container.workflow.drain()  # type: ignore[attr-defined]
        assert len(engine.sources) == 2
        refused = call(stack, "POST", f"/v1/files/{ticket['fileId']}/scan", token)
        assert_refused(refused, "rescans_per_file_per_hour", "OCR'd 2 times in the last hour", "limit is 2")
        assert 3000 < int(refused[1]["Retry-After"]) <= 3600
        container.workflow.drain()  # type: ignore[attr-defined]
        assert len(engine.sources) == 2


def test_a_burst_past_the_tenants_request_rate_gets_429s_while_another_tenant_in_the_same_burst_does_not(
    stack: Stack,
) -> None:
    noisy, quiet = stack.token(tenant=new_tenant()), stack.token(tenant=new_tenant())
    with limited(stack, limit_requests_per_second=1, limit_request_burst=3):
        answers = []
        for index in range(10):
            answers.append(("noisy", call(stack, "GET", "/v1/me", noisy)))
            if index % 4 == 0:
                answers.append(("quiet", call(stack, "GET", "/v1/me", quiet)))
    noisy_statuses = [answer[0] for who, answer in answers if who == "noisy"]
    assert noisy_statuses[:3] == [200, 200, 200]
    assert noisy_statuses.count(429) >= 5
    refused = next(answer for who, answer in answers if who == "noisy" and answer[0] == 429)
    assert_refused(refused, "requests_per_second", "limit of 1 requests per second")
    assert [answer[0] for who, answer in answers if who == "quiet"] == [200, 200, 200]
