"""Upload sessions against the local stack (API, PostgreSQL, the local S3's multipart): a file uploaded by parts,
resumed from what GET lists, refused when a part is missing or its checksum is wrong, aborted, expired by
reconciliation, and the same 404 to every caller who may not see it (docs/files.md, "Upload sessions")."""

import base64
import hashlib
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.bootstrap import Container, overridden
from shared.bootstrap.adapters import adapters_for
from shared.domain.auth import Role
from shared.services.upload_sessions import ABORTED, EXPIRED
from tests.integration.api_steps import RUNBOOK
from tests.integration.conftest import stop_webhook_deliveries
from tests.integration.files_stack import LIMIT, Stack

MIB = 1024 * 1024


@pytest.fixture
def parts_stack(stack: Stack) -> Iterator[Stack]:
    """The session's stack with documents up to 12 MiB, so a document takes several 5 MiB parts."""
    settings = stack.container.settings.model_copy(update={"max_upload_bytes": 12 * MIB})
    container = Container(settings, adapters_for(settings, webhook_sender=stack.container.webhook_sender))
    with overridden(container):
        try:
            yield replace(stack, container=container)
        finally:
            container.workflow.drain()  # type: ignore[attr-defined]
            stop_webhook_deliveries(container)
            container.database.close()


def big_markdown(size: int) -> bytes:
    """A text document of `size` bytes: the runbook, then blank lines (cheap to index, heavy to upload; uploaded as
    plain text, whose parser reads 11 MiB of blank lines in a second where Markdown's takes twenty)."""
    return RUNBOOK + b"\n" * (size - len(RUNBOOK))


def open_session(stack: Stack, token: str, content: bytes, **options: Any) -> dict[str, Any]:
    body = {
        "collectionId": "docs",
        "filename": "big.txt",
        "mediaType": "text/plain",
        "byteSize": len(content),
        **options,
    }
    status, ticket = stack.json("POST", "/v1/uploads", token, body)
    assert status == 201, ticket
    return ticket  # type: ignore[no-any-return]


def part_urls(stack: Stack, token: str, upload_id: str, body: dict[str, Any]) -> dict[int, dict[str, Any]]:
    status, answer = stack.json("POST", f"/v1/uploads/{upload_id}/parts", token, body)
    assert status == 200, answer
    return {part["partNumber"]: part for part in answer["parts"]}


def put_part(part: dict[str, Any], data: bytes) -> tuple[int, str]:
    """The PUT a browser makes: exactly the part's bytes, with the headers the URL was signed with."""
    request = urllib.request.Request(part["url"], data=data, method="PUT", headers=dict(part["headers"]))
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers["ETag"]
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def slices(content: bytes, ticket: dict[str, Any]) -> dict[int, bytes]:
    size = ticket["partSize"]
    return {number: content[(number - 1) * size : number * size] for number in range(1, ticket["partCount"] + 1)}


def sha256_b64(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def test_a_file_past_the_single_post_is_uploaded_by_parts_resumed_and_indexed(parts_stack: Stack) -> None:
    stack = parts_stack
    token = stack.token()
    content = big_markdown(11 * MIB + 123)
    ticket = open_session(stack, token, content, partSize=5 * MIB)
    assert (ticket["partSize"], ticket["partCount"]) == (5 * MIB, 3)
    assert ticket.get("upload") is None
    assert datetime.fromisoformat(ticket["expiresAt"]) > datetime.now(UTC) + timedelta(hours=23)
    pieces = slices(content, ticket)
    urls = part_urls(stack, token, ticket["uploadId"], {"partNumbers": [3, 1]})
    etags = {number: put_part(urls[number], pieces[number]) for number in (3, 1)}
    assert all(status == 200 for status, _ in etags.values()), etags

    # The client crashes here; after a reload it asks what S3 holds and uploads only the rest.
    status, session = stack.json("GET", f"/v1/uploads/{ticket['uploadId']}", token)
    assert status == 200 and session["state"] == "open", session
    held = {part["partNumber"]: part for part in session["parts"]}
    assert sorted(held) == [1, 3]
    assert held[3]["size"] == len(pieces[3]) and held[1]["etag"].strip('"') == etags[1][1].strip('"')
    missing = [number for number in range(1, ticket["partCount"] + 1) if number not in held]
    urls = part_urls(stack, token, ticket["uploadId"], {"partNumbers": missing})
    etags[2] = put_part(urls[2], pieces[2])

    claimed = [{"partNumber": number, "etag": etags[number][1]} for number in sorted(etags)]
    status, done = stack.json("POST", f"/v1/uploads/{ticket['uploadId']}/complete", token, {"parts": claimed})
    assert status == 200 and done["state"] == "completed", done
    # A client that lost that answer may ask again, and hears the same.
    again = stack.json("POST", f"/v1/uploads/{ticket['uploadId']}/complete", token, {"parts": claimed})
    assert again[0] == 200 and again[1]["state"] == "completed"

    stack.events.join()
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    record = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]
    assert record["current"]["processingState"] == "indexed", record
    assert record["current"]["byteSize"] == len(content)
    status, read = stack.json("GET", f"/v1/files/{ticket['fileId']}/content", token)
    assert status == 200, read
    with urllib.request.urlopen(read["url"], timeout=30) as response:
        assert hashlib.sha256(response.read()).digest() == hashlib.sha256(content).digest()
    hits = stack.json("POST", "/v1/search", token, {"query": "ERR-4021 certificate expired"})[1]
    assert any(hit["citation"]["fileId"] == ticket["fileId"] for hit in hits["hits"]), hits


def test_a_completion_with_a_missing_or_wrong_part_is_refused_naming_it(parts_stack: Stack) -> None:
    stack = parts_stack
    token = stack.token()
    content = big_markdown(6 * MIB)
    ticket = open_session(stack, token, content, partSize=5 * MIB)
    pieces = slices(content, ticket)
    urls = part_urls(stack, token, ticket["uploadId"], {"partNumbers": [1, 2]})
    _, etag1 = put_part(urls[1], pieces[1])
    complete = f"/v1/uploads/{ticket['uploadId']}/complete"

    status, refused = stack.json("POST", complete, token, {"parts": [{"partNumber": 1, "etag": etag1}]})
    assert status == 400 and "part 2 has not arrived" in refused["message"], refused

    # A part of another size than planned is refused by storage (its URL is signed for the exact length), so no
    # part can park more than the declared file; the sum is checked again at completion.
    assert put_part(urls[2], pieces[2] + b"x")[0] == 403
    assert put_part(urls[2], pieces[2][:-1])[0] == 403
    assert [
        part["partNumber"] for part in stack.json("GET", f"/v1/uploads/{ticket['uploadId']}", token)[1]["parts"]
    ] == [1]

    _, etag2 = put_part(urls[2], pieces[2])
    claimed = [{"partNumber": 1, "etag": etag1}, {"partNumber": 2, "etag": '"' + "0" * 32 + '"'}]
    status, refused = stack.json("POST", complete, token, {"parts": claimed})
    assert status == 400 and "part 2: its ETag" in refused["message"], refused
    # A part the plan does not have.
    status, refused = stack.json("POST", f"/v1/uploads/{ticket['uploadId']}/parts", token, {"partNumbers": [3]})
    assert status == 400 and "parts 1 to 2" in refused["message"], refused

    claimed[1]["etag"] = etag2
    assert stack.json("POST", complete, token, {"parts": claimed})[1]["state"] == "completed"


def test_a_part_whose_bytes_do_not_match_its_checksum_is_refused_by_storage(stack: Stack) -> None:
    token = stack.token()
    content = RUNBOOK
    ticket = open_session(stack, token, content, multipart=True, checksums=True)
    assert ticket["checksums"] is True and ticket["partCount"] == 1
    upload_id = ticket["uploadId"]

    status, refused = stack.json("POST", f"/v1/uploads/{upload_id}/parts", token, {"partNumbers": [1]})
    assert status == 400 and "checksumSha256" in refused["message"], refused

    urls = part_urls(stack, token, upload_id, {"parts": [{"partNumber": 1, "checksumSha256": sha256_b64(content)}]})
    assert urls[1]["headers"] == {"x-amz-checksum-sha256": sha256_b64(content)}
    status, answer = put_part(urls[1], content.replace(b"47 minutes", b"48 minutes"))
    assert status == 400 and "BadDigest" in answer, answer
    assert stack.json("GET", f"/v1/uploads/{upload_id}", token)[1]["parts"] == []

    # Without the signed header the PUT does not match its signature.
    unsigned = {**urls[1], "headers": {}}
    assert put_part(unsigned, content)[0] == 403

    status, etag = put_part(urls[1], content)
    assert status == 200, etag
    held = stack.json("GET", f"/v1/uploads/{upload_id}", token)[1]["parts"]
    assert held[0]["checksumSha256"] == sha256_b64(content)
    done = stack.json("POST", f"/v1/uploads/{upload_id}/complete", token, {"parts": [{"partNumber": 1, "etag": etag}]})
    assert done[1]["state"] == "completed", done


def test_an_aborted_session_ends_and_its_version_says_why(stack: Stack) -> None:
    token = stack.token()
    ticket = open_session(stack, token, RUNBOOK, multipart=True)
    upload_id = ticket["uploadId"]
    urls = part_urls(stack, token, upload_id, {"partNumbers": [1]})
    assert put_part(urls[1], RUNBOOK)[0] == 200

    status, aborted = stack.json("DELETE", f"/v1/uploads/{upload_id}", token)
    assert status == 200 and aborted["state"] == "aborted" and aborted["endedAt"], aborted
    assert stack.json("DELETE", f"/v1/uploads/{upload_id}", token)[1]["state"] == "aborted"
    current = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]
    assert (current["state"], current["rejectionReason"]) == ("rejected", ABORTED)
    status, refused = stack.json("POST", f"/v1/uploads/{upload_id}/parts", token, {"partNumbers": [1]})
    assert status == 409 and "aborted" in refused["message"], refused
    # The parts are gone from storage, so a PUT to an old URL has no upload to join.
    assert put_part(urls[1], RUNBOOK)[0] == 404


def test_deleting_the_file_ends_its_open_session(stack: Stack) -> None:
    token = stack.token()
    ticket = open_session(stack, token, RUNBOOK, multipart=True)
    assert stack.json("DELETE", f"/v1/files/{ticket['fileId']}", token)[0] == 202
    status, session = stack.json("GET", f"/v1/uploads/{ticket['uploadId']}", token)
    assert status == 200 and session["state"] == "aborted", session


def test_a_session_left_open_past_its_day_is_expired_and_its_upload_aborted(own_stack: Stack) -> None:
    stack = own_stack
    token = stack.token()
    ticket = open_session(stack, token, RUNBOOK, multipart=True)
    urls = part_urls(stack, token, ticket["uploadId"], {"partNumbers": [1]})
    assert put_part(urls[1], RUNBOOK)[0] == 200

    # Within its day the version waits for its parts, past the pending threshold a single POST has.
    report = stack.container.reconciler.run(datetime.now(UTC) + timedelta(hours=3)).as_dict()
    assert ticket["versionId"] not in {entry["versionId"] for entry in report["pendingWithoutBytes"]}
    assert stack.json("GET", f"/v1/uploads/{ticket['uploadId']}", token)[1]["state"] == "open"

    report = stack.container.reconciler.run(datetime.now(UTC) + timedelta(days=2)).as_dict()
    assert report["sessionsExpired"] == 1 and report["uploadsAborted"] == 0, report
    session = stack.json("GET", f"/v1/uploads/{ticket['uploadId']}", token)[1]
    assert session["state"] == "expired" and session["parts"] == []
    current = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]
    assert (current["state"], current["rejectionReason"]) == ("rejected", EXPIRED)
    s3 = stack.container.adapters.multipart
    assert list(s3.stale_uploads("tenants/", begun_before=datetime.now(UTC) + timedelta(days=1))) == []


def test_a_multipart_upload_no_session_names_is_aborted_after_a_day(own_stack: Stack) -> None:
    """A crash between beginning S3's upload and recording its session: locally reconciliation aborts it, as the
    bucket's lifecycle rule does on AWS."""
    stack = own_stack
    s3 = stack.container.adapters.multipart
    key = f"tenants/acme/files/{uuid.uuid4()}/versions/{uuid.uuid4()}"
    s3.begin(key, content_type="text/markdown", checksums=False)
    # The tenant's turn comes because it has a file: this one, whose session expires too.
    open_session(stack, stack.token(), RUNBOOK, multipart=True)
    report = stack.container.reconciler.run(datetime.now(UTC) + timedelta(days=2)).as_dict()
    assert report["uploadsAborted"] == 1 and report["sessionsExpired"] == 1, report
    assert list(s3.stale_uploads("tenants/", begun_before=datetime.now(UTC) + timedelta(days=3))) == []


def test_every_session_route_is_the_same_404_to_another_tenant_as_a_random_id(stack: Stack) -> None:
    owner = stack.token()
    ticket = open_session(stack, owner, RUNBOOK, multipart=True)
    intruders = {
        "another tenant": stack.token(tenant="globex"),
        "another collection": stack.token(collections=("hr",)),
    }
    random_id = str(uuid.uuid4())
    for name, token in intruders.items():
        for (method, path, body), (_, random_path, _) in zip(
            session_routes(ticket["uploadId"]), session_routes(random_id), strict=True
        ):
            existing = stack.call(method, path, token, body)
            assert existing == stack.call(method, random_path, token, body), (name, method, path)
            assert existing[0] == 404, (name, method, path, existing)
    reader = stack.token(role=Role.READ)
    for method, path, body in session_routes(ticket["uploadId"]):
        assert stack.json(method, path, reader, body)[0] == 403, (method, path)
    # Untouched by all of that.
    session = stack.json("GET", f"/v1/uploads/{ticket['uploadId']}", owner)[1]
    assert session["state"] == "open"


def session_routes(upload_id: str) -> list[tuple[str, str, Any]]:
    return [
        ("GET", f"/v1/uploads/{upload_id}", None),
        ("POST", f"/v1/uploads/{upload_id}/parts", {"partNumbers": [1]}),
        ("POST", f"/v1/uploads/{upload_id}/complete", {"parts": [{"partNumber": 1, "etag": "x"}]}),
        ("DELETE", f"/v1/uploads/{upload_id}", None),
    ]


def test_sizes_past_the_limits_are_refused_naming_them(stack: Stack) -> None:
    token = stack.token()
    body = {"collectionId": "docs", "filename": "big.md", "mediaType": "text/markdown"}
    # A document past the largest document (it is read whole) is refused, by parts or not.
    status, refused = stack.json("POST", "/v1/uploads", token, {**body, "byteSize": LIMIT + 1, "multipart": True})
    assert status in (400, 413) and str(LIMIT) in refused["message"], refused
    status, refused = stack.json("POST", "/v1/uploads", token, {**body, "byteSize": 100, "partSize": 4 * MIB})
    assert status == 422 and refused["message"] == "partSize: at least 5242880", refused
    # Below the single POST's limit, without asking for parts, the answer is the POST as before.
    status, ticket = stack.json("POST", "/v1/uploads", token, {**body, "byteSize": 100})
    assert status == 201 and ticket["upload"]["url"] and ticket.get("uploadId") is None, ticket


def test_completions_at_once_all_answer_completed_and_make_one_object(parts_stack: Stack) -> None:
    """A client retrying while its first completion still runs (a large object outlives the API's timeout)."""
    from concurrent.futures import ThreadPoolExecutor

    stack = parts_stack
    token = stack.token()
    content = big_markdown(6 * MIB)
    ticket = open_session(stack, token, content, partSize=5 * MIB)
    pieces = slices(content, ticket)
    urls = part_urls(stack, token, ticket["uploadId"], {"partNumbers": [1, 2]})
    claimed = [{"partNumber": n, "etag": put_part(urls[n], pieces[n])[1]} for n in (1, 2)]
    path = f"/v1/uploads/{ticket['uploadId']}/complete"
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: stack.json("POST", path, token, {"parts": claimed}), range(4)))
    assert [(status, body["state"]) for status, body in answers] == [(200, "completed")] * 4, answers
    stack.events.join()
    versions = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["versions"]
    assert len(versions) == 1 and versions[0]["byteSize"] == len(content), versions


def test_a_completion_racing_an_abort_ends_in_one_state_both_answers_agree_with(parts_stack: Stack) -> None:
    from concurrent.futures import ThreadPoolExecutor

    stack = parts_stack
    token = stack.token()
    content = big_markdown(6 * MIB)
    for delay in (0.0, 0.02, 0.05):
        ticket = open_session(stack, token, content, partSize=5 * MIB)
        pieces = slices(content, ticket)
        urls = part_urls(stack, token, ticket["uploadId"], {"partNumbers": [1, 2]})
        claimed = [{"partNumber": n, "etag": put_part(urls[n], pieces[n])[1]} for n in (1, 2)]
        upload = f"/v1/uploads/{ticket['uploadId']}"

        def abort_later(pause: float = delay, path: str = upload) -> tuple[int, Any]:
            time.sleep(pause)
            return stack.json("DELETE", path, token)

        with ThreadPoolExecutor(2) as pool:
            completing = pool.submit(stack.json, "POST", f"{upload}/complete", token, {"parts": claimed})
            aborting = pool.submit(abort_later)
            completed, aborted = completing.result(), aborting.result()
        stack.events.join()
        final = stack.json("GET", upload, token)[1]["state"]
        current = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]
        assert final in ("completed", "aborted"), final
        if final == "completed":
            assert completed == (200, completed[1]) and completed[1]["state"] == "completed", completed
            assert aborted[0] == 409 and current["state"] in ("stored", "pending"), (aborted, current)
        else:
            assert aborted[0] == 200 and aborted[1]["state"] == "aborted", aborted
            assert completed[0] == 409 and current["state"] == "rejected", (completed, current)
