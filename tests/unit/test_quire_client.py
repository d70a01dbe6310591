"""The Python client (clients/python, `quire_client`) against a fake of the API's HTTP (httpx2.MockTransport, the
port the client sends through): typed errors with the API's sentence, retries that honour Retry-After, pages,
uploads that post to storage and wait (by the event feed, or by polling when there is none), and webhook
verification checked against the reference Standard Webhooks library."""

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from quire_client import (
    MEDIA_TYPES,
    NotFound,
    Polling,
    Quire,
    RateLimited,
    Retries,
    StorageRefused,
    TimedOut,
    TransportFailed,
    Unavailable,
    Unprocessable,
    WebhookVerificationError,
    media_type_for,
    retry_after_seconds,
    sign,
    verify_webhook,
)
from standardwebhooks.webhooks import Webhook

API = "http://127.0.0.1:9"
STORAGE = "http://127.0.0.1:9/storage/bucket"
FILE_ID = "0b8e1c52-7d3f-4f5e-9a1b-2c3d4e5f6a7b"
VERSION_ID = "1c9f2d63-8e4a-4a6f-8b2c-3d4e5f6a7b8c"
Handler = Callable[[httpx2.Request], httpx2.Response]


def fake_api(handler: Handler) -> tuple[Quire, list[float]]:
    """A client whose requests `handler` answers (a fake of the API), and the waits it slept."""
    slept: list[float] = []
    client = Quire(
        API, "token-1", transport=httpx2.MockTransport(handler), sleep=slept.append, retries=Retries(attempts=3)
    )
    return client, slept


def json_answer(status: int, body: Any, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, json=body, headers=headers)


def test_an_error_carries_the_apis_status_code_and_sentence() -> None:
    client, _ = fake_api(lambda _: json_answer(404, {"error": "not_found", "message": "Not found"}))
    with pytest.raises(NotFound) as raised:
        client.get_file(FILE_ID)
    assert (raised.value.status, raised.value.code, raised.value.message) == (404, "not_found", "Not found")
    assert str(raised.value) == "HTTP 404: Not found"


def test_a_validation_error_is_unprocessable_with_the_apis_sentence_naming_the_field() -> None:
    body = {"statusCode": 422, "detail": [{"loc": ["body", "query"], "type": "missing"}], "message": "query: missing"}
    client, _ = fake_api(lambda _: json_answer(422, body))
    with pytest.raises(Unprocessable, match="HTTP 422: query: missing") as raised:
        client.search({"query": ""})
    assert raised.value.code is None and raised.value.body == body


def test_a_429_is_retried_after_the_seconds_retry_after_gives_then_answers() -> None:
    answers = [
        json_answer(429, {"error": "rate_limited", "limit": "requests", "message": "Slow down"}, {"Retry-After": "7"}),
        json_answer(200, {"status": "ok", "database": "ok"}),
    ]
    client, slept = fake_api(lambda _: answers.pop(0))
    assert client.health()["status"] == "ok"
    assert slept == [7.0]


def test_retries_stop_after_the_attempts_and_raise_the_last_refusal_with_its_retry_after() -> None:
    seen: list[str] = []

    def always_limited(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.method)
        return json_answer(429, {"error": "rate_limited", "message": "Slow down"}, {"Retry-After": "120"})

    client, slept = fake_api(always_limited)
    with pytest.raises(RateLimited) as raised:
        client.search({"query": "x"})
    assert raised.value.retry_after == 120.0
    # Three attempts, each wait capped at the client's 60 seconds.
    assert seen == ["POST"] * 3 and slept == [60.0, 60.0]


def test_a_503_is_retried_for_a_read_but_not_for_a_post_without_retry_after() -> None:
    unavailable = json_answer(503, {"error": "unavailable", "message": "Try again shortly"})
    client, slept = fake_api(lambda _: unavailable)
    with pytest.raises(Unavailable, match="Try again shortly"):
        client.get_file(FILE_ID)
    # No Retry-After: backoff 0.5 s, doubling.
    assert slept == [0.5, 1.0]
    slept.clear()
    with pytest.raises(Unavailable):
        client.search({"query": "x"})
    assert slept == []


def test_retry_after_may_be_an_http_date() -> None:
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:30 GMT", now=1445412500.0) == 10.0
    assert retry_after_seconds("soon", now=0.0) is None
    assert retry_after_seconds(None, now=0.0) is None


def test_no_answer_is_a_transport_failure_an_oserror() -> None:
    def refused(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    client, _ = fake_api(refused)
    with pytest.raises(TransportFailed) as raised:
        client.me()
    assert isinstance(raised.value, OSError)


def test_the_token_goes_to_the_api_and_the_query_leaves_out_what_is_not_given() -> None:
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return json_answer(200, {"files": [], "nextCursor": None})

    client, _ = fake_api(answer)
    client.list_files(collection_id="docs/1", filter='{"equals":{"key":"a","value":1}}')
    request = seen[0]
    assert request.headers["Authorization"] == "Bearer token-1"
    assert request.url.path == "/v1/files"
    assert dict(request.url.params) == {"collectionId": "docs/1", "filter": '{"equals":{"key":"a","value":1}}'}


def test_a_query_in_the_path_is_kept_and_merged_with_the_parameters() -> None:
    seen: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(str(request.url))
        return json_answer(200, {})

    client, _ = fake_api(answer)
    client.request("GET", "/v1/files/a/document?cursor=12")
    client.request("GET", "/v1/files?limit=5", query={"cursor": "c 1", "facets": None})
    assert seen == [f"{API}/v1/files/a/document?cursor=12", f"{API}/v1/files?limit=5&cursor=c+1"]


def test_a_path_parameter_is_one_segment_whatever_it_holds() -> None:
    seen: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.url.raw_path.decode())
        return json_answer(200, {})

    client, _ = fake_api(answer)
    client.get_file("../me")
    assert seen == ["/v1/files/..%2Fme"]


def test_pages_follow_next_cursor_until_there_is_none() -> None:
    pages = {
        None: {"files": [{"fileId": "a"}, {"fileId": "b"}], "nextCursor": "c1"},
        "c1": {"files": [{"fileId": "c"}], "nextCursor": "c2"},
        "c2": {"files": [], "nextCursor": None},
    }
    asked: list[str | None] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        cursor = request.url.params.get("cursor")
        asked.append(cursor)
        return json_answer(200, pages[cursor])

    client, _ = fake_api(answer)
    assert [file["fileId"] for file in client.iter_files(limit=2)] == ["a", "b", "c"]
    assert asked == [None, "c1", "c2"]


class FakeQuire:
    """A fake of the API and of storage's presigned POST for uploads: the ticket, the form storage receives, the
    file's state after `ready_after` reads, and (when `events` is not None) an event feed."""

    def __init__(self, ready_after: int = 2, events: list[dict[str, Any]] | None = None, storage_status: int = 204):
        self.ready_after = ready_after
        self.events = events
        self.storage_status = storage_status
        self.form: bytes = b""
        self.storage_headers: httpx2.Headers | None = None
        self.reads = 0
        self.event_cursors: list[str | None] = []
        self.tickets: list[dict[str, Any]] = []

    def record(self, processing: str) -> dict[str, Any]:
        current = {"versionId": VERSION_ID, "state": "stored", "processingState": processing}
        return {"fileId": FILE_ID, "collectionId": "docs", "current": current, "versions": [current]}

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if request.method == "POST" and path == "/v1/uploads":
            self.tickets.append(json.loads(request.read()))
            upload = {"url": STORAGE, "fields": {"key": "k/1", "policy": "p"}}
            ticket = {"fileId": FILE_ID, "versionId": VERSION_ID, "upload": upload, "expiresAt": "2026-01-01T00:00:00Z"}
            return json_answer(201, ticket)
        if path == "/storage/bucket":
            self.form, self.storage_headers = request.read(), request.headers
            return httpx2.Response(self.storage_status, text="<Error><Code>AccessDenied</Code></Error>")
        if path == f"/v1/files/{FILE_ID}":
            self.reads += 1
            return json_answer(200, self.record("indexed" if self.reads >= self.ready_after else "extracting"))
        if path == "/v1/events":
            if self.events is None:
                return json_answer(404, {"error": "not_found", "message": "Not found"})
            after = request.url.params.get("after")
            self.event_cursors.append(after)
            start = int(after or 0)
            # Two a page; the cursor stays at the end once caught up.
            next_cursor = str(min(start + 2, len(self.events)))
            return json_answer(200, {"events": self.events[start : start + 2], "nextCursor": next_cursor})
        return json_answer(404, {"error": "not_found", "message": "Not found"})


def terminal_event(type_: str, file_id: str = FILE_ID) -> dict[str, Any]:
    data = {"fileId": file_id, "versionId": VERSION_ID, "version": 1}
    return {
        "eventId": secrets.token_hex(4),
        "type": type_,
        "occurredAt": "",
        "tenantId": "t",
        "collectionId": "docs",
        "data": data,
    }


def test_upload_posts_the_tickets_fields_then_the_file_without_the_token_and_polls_until_indexed() -> None:
    fake = FakeQuire(ready_after=3)
    client, slept = fake_api(fake)
    progress: list[tuple[int, int]] = []
    uploaded = client.upload(
        b"# Notes\n", "docs", filename="notes.md", metadata={"team": "a"}, progress=lambda *p: progress.append(p)
    )
    assert uploaded.outcome == "indexed" and uploaded.file is not None and uploaded.file_id == FILE_ID
    assert fake.reads == 3 and slept == [0.2, 0.30000000000000004]
    assert fake.storage_headers is not None and "authorization" not in fake.storage_headers
    assert fake.storage_headers["content-type"].startswith("multipart/form-data; boundary=")
    assert (
        fake.form.index(b'name="key"')
        < fake.form.index(b'name="policy"')
        < fake.form.index(b'name="file"; filename="notes.md"')
    )
    assert b"Content-Type: text/markdown\r\n\r\n# Notes\n" in fake.form
    assert progress[-1] == (len(fake.form), len(fake.form))


def test_upload_without_wait_returns_the_ticket_only() -> None:
    fake = FakeQuire()
    client, _ = fake_api(fake)
    uploaded = client.upload(b"x", "docs", filename="a.txt", wait=False)
    assert uploaded.file is None and uploaded.version_id == VERSION_ID and fake.reads == 0


def test_upload_declares_a_language_only_when_given_and_sends_it_as_given() -> None:
    fake = FakeQuire()
    client, _ = fake_api(fake)
    for language in ("de", None, ""):
        client.upload(b"x", "docs", filename="a.txt", language=language, wait=False)
    assert [ticket.get("language", "absent") for ticket in fake.tickets] == ["de", "absent", ""]  # the API refuses ""


def test_upload_declares_the_files_sha256_read_through_once_unless_told_not_to(tmp_path: Path) -> None:
    fake = FakeQuire()
    client, _ = fake_api(fake)
    path = tmp_path / "a.txt"
    path.write_bytes(b"x" * 200_000)  # more than one chunk of reading
    client.upload(path, "docs", wait=False)
    client.upload(b"x", "docs", filename="a.txt", wait=False, sha256=False)
    assert fake.tickets[0]["sha256"] == hashlib.sha256(b"x" * 200_000).hexdigest()
    assert "sha256" not in fake.tickets[1]


def test_storage_refusing_the_presigned_post_is_storage_refused_with_its_answer() -> None:
    client, _ = fake_api(FakeQuire(storage_status=403))
    with pytest.raises(StorageRefused, match="HTTP 403: <Error><Code>AccessDenied"):
        client.upload(b"x", "docs", filename="a.txt")


def test_waiting_with_an_event_cursor_reads_the_feed_until_the_versions_terminal_event() -> None:
    events = [
        terminal_event("file.version.indexed", file_id="another"),
        terminal_event("file.moved"),
        terminal_event("file.version.failed"),
    ]
    fake = FakeQuire(ready_after=1, events=events)
    client, _ = fake_api(fake)
    uploaded = client.upload(b"x", "docs", filename="a.txt", events_after="0")
    assert uploaded.outcome == "failed" and uploaded.event == events[2]
    assert fake.event_cursors == ["0", "2"]


def test_an_empty_event_page_means_caught_up_and_the_wait_asks_again_after_backing_off() -> None:
    fake = FakeQuire(events=[])

    def late_event(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/events" and len(fake.event_cursors) == 2:
            fake.events = [terminal_event("file.version.rejected")] * 3
        return fake(request)

    client, slept = fake_api(late_event)
    assert client.wait_for_version(FILE_ID, VERSION_ID, events_after="0").outcome == "rejected"
    assert slept == [0.2, 0.30000000000000004]


def test_waiting_falls_back_to_polling_where_the_api_has_no_event_feed() -> None:
    fake = FakeQuire(ready_after=2, events=None)
    client, _ = fake_api(fake)
    uploaded = client.wait_for_version(FILE_ID, VERSION_ID, events_after="0")
    assert uploaded.outcome == "indexed" and uploaded.event is None and fake.reads == 2


def test_a_wait_that_runs_out_raises_timed_out_with_the_last_view() -> None:
    client = Quire(
        API, "t", transport=httpx2.MockTransport(FakeQuire(ready_after=10**6)), sleep=lambda _: None, polling=Polling()
    )
    with pytest.raises(TimedOut) as raised:
        client.wait_for_version(FILE_ID, VERSION_ID, timeout=0)
    assert raised.value.last["current"]["processingState"] == "extracting"


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def test_webhook_verification_accepts_what_the_reference_library_accepts_and_refuses_what_it_refuses() -> None:
    secret, body, now = new_secret(), json.dumps({"type": "file.version.indexed"}).encode(), int(time.time())
    headers = {
        "webhook-id": "evt_1",
        "webhook-timestamp": str(now),
        "webhook-signature": sign(secret, "evt_1", now, body),
    }
    # The reference library signs the same bytes the same way, and verifies what the client signs.
    assert Webhook(secret).sign("evt_1", _utc(now), body.decode()) == headers["webhook-signature"]
    assert (
        Webhook(secret).verify(body, headers)
        == verify_webhook(secret, headers, body)
        == {"type": "file.version.indexed"}
    )
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        verify_webhook(secret, headers, body.replace(b"indexed", b"failed"))
    with pytest.raises(WebhookVerificationError, match="seconds from now"):
        verify_webhook(secret, headers, body, now=now + 301)
    with pytest.raises(WebhookVerificationError, match="header is missing"):
        verify_webhook(secret, {"webhook-id": "evt_1"}, body)


def test_while_a_secret_rotates_either_signature_verifies() -> None:
    old, new, body, now = new_secret(), new_secret(), b"{}", int(time.time())
    both = f"{sign(old, 'evt_2', now, body)} {sign(new, 'evt_2', now, body)}"
    headers = {"Webhook-Id": "evt_2", "Webhook-Timestamp": str(now), "Webhook-Signature": both}
    for secret in (old, new):
        assert verify_webhook(secret, headers, body) == {}
        Webhook(secret).verify(body, headers)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(new_secret(), headers, body)


def _utc(seconds: int) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, tz=UTC)


def test_the_clients_media_types_are_the_ones_the_server_accepts() -> None:
    from shared.domain.uploads import ACCEPTED_TYPES

    server = {extension: accepted.media_type for accepted in ACCEPTED_TYPES for extension in accepted.extensions}
    assert server == MEDIA_TYPES
    assert media_type_for("Report.PDF") == "application/pdf"
    with pytest.raises(ValueError, match=r"\.exe is not accepted"):
        media_type_for("setup.exe")
