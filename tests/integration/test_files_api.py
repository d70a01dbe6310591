"""The file lifecycle over real HTTP: the API handler, moto's S3 server, the Object Created handler, PostgreSQL."""

import base64
import json
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.adapters.aws.s3_content_store import S3ContentStore
from shared.adapters.local.jwt_tokens import LocalTokenIssuer
from shared.domain.auth import Principal
from shared.domain.errors import NotFound
from shared.domain.files import NewVersion
from shared.domain.uploads import storage_key
from shared.local.http_api import LocalLambdaContext
from shared.local.s3_server import object_created_event
from tests.integration.files_stack import DOCX_TYPE, LIMIT, PDF, PNG, SVG, Stack, docx_bytes


def test_an_upload_is_stored_and_reads_back_byte_identical_as_an_attachment(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "Annual report.pdf", "application/pdf", PDF)
    status, file = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert status == 200
    assert (file["current"]["state"], file["current"]["byteSize"], file["filename"]) == (
        "stored",
        len(PDF),
        "Annual report.pdf",
    )
    status, read = stack.json("GET", f"/v1/files/{ticket['fileId']}/content", token)
    assert status == 200
    assert datetime.fromisoformat(read["expiresAt"]) <= datetime.now(UTC) + timedelta(minutes=15, seconds=5)
    with urllib.request.urlopen(read["url"], timeout=10) as response:
        assert response.read() == PDF
        assert response.headers["Content-Type"] == "application/octet-stream"
        assert response.headers["Content-Disposition"].startswith('attachment; filename="Annual report.pdf"')


def test_the_upload_policy_pins_the_key_the_type_and_the_declared_size(stack: Stack) -> None:
    ticket = stack.start_upload(stack.token(), "a.pdf", "application/pdf", 1234)
    fields = ticket["upload"]["fields"]
    policy = json.loads(base64.b64decode(fields["policy"]))
    conditions = policy["conditions"]
    assert ["eq", "$key", fields["key"]] in conditions
    assert ["eq", "$Content-Type", "application/pdf"] in conditions
    assert ["content-length-range", 1, 1234] in conditions
    assert fields["key"].endswith(f"/files/{ticket['fileId']}/versions/{ticket['versionId']}")
    expiration = datetime.fromisoformat(policy["expiration"].replace("Z", "+00:00"))
    assert expiration <= datetime.now(UTC) + timedelta(minutes=15, seconds=5)


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (
            {"filename": "big.pdf", "mediaType": "application/pdf", "byteSize": LIMIT + 1},
            413,
            f"limit is {LIMIT} bytes",
        ),
        ({"filename": "x.svg", "mediaType": "image/svg+xml", "byteSize": 10}, 415, "accepted types: application/pdf"),
        ({"filename": "x.png", "mediaType": "image/*", "byteSize": 10}, 415, "accepted types"),
        ({"filename": "report.docx", "mediaType": "application/pdf", "byteSize": 10}, 415, "must be named .pdf"),
        ({"filename": "/\r\n\t", "mediaType": "text/plain", "byteSize": 10}, 400, "filename is empty"),
    ],
)
def test_refusals_name_the_limit_or_what_is_accepted(
    stack: Stack, body: dict[str, Any], status: int, message: str
) -> None:
    got, answer = stack.json("POST", "/v1/uploads", stack.token(), {"collectionId": "docs", **body})
    assert got == status
    assert message in answer["message"]


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("../../etc/passwd.txt", "_.._etc_passwd.txt"),
        ("evil\r\nSet-Cookie: a=b.txt", "evil__Set-Cookie: a=b.txt"),
        ("a\\b\\c.txt", "a_b_c.txt"),
        ("x" * 1000 + ".txt", "x" * 251 + ".txt"),
    ],
)
def test_hostile_filenames_are_cleaned_not_trusted(stack: Stack, filename: str, expected: str) -> None:
    token = stack.token()
    ticket = stack.start_upload(token, filename, "text/plain", 5)
    _, file = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert file["filename"] == expected


@pytest.mark.parametrize(
    ("filename", "media_type", "content", "reason"),
    [
        ("logo.png", "image/png", SVG, "looks like HTML, XML or SVG markup"),
        ("notes.txt", "text/plain", b"<!DOCTYPE html><html><script>x()</script></html>", "looks like HTML"),
        ("memo.docx", DOCX_TYPE, b"PK\x03\x04" + b"\x00" * 100, "not a Word document"),
        ("memo.docx", DOCX_TYPE, PDF, "it looks like a PDF"),
        ("photo.jpg", "image/jpeg", PNG, "it looks like a PNG image"),
    ],
)
def test_content_that_is_not_what_was_declared_is_rejected_with_a_reason(
    stack: Stack, filename: str, media_type: str, content: bytes, reason: str
) -> None:
    token = stack.token()
    ticket = stack.upload(token, filename, media_type, content)
    _, file = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert file["current"]["state"] == "rejected"
    assert reason in file["current"]["rejectionReason"]
    status, _ = stack.json("GET", f"/v1/files/{ticket['fileId']}/content", token)
    assert status == 409  # nothing to read from a rejected version


def test_a_real_docx_is_stored(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "memo.docx", DOCX_TYPE, docx_bytes())
    assert stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]["state"] == "stored"


def test_a_body_larger_than_declared_is_rejected_even_if_the_store_accepts_it(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.start_upload(token, "small.txt", "text/plain", 10)
    # moto ignores the policy's content-length-range; the handler checks what actually landed.
    stack.post_bytes(ticket, b"x" * 1000, "text/plain")
    _, file = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert file["current"]["state"] == "rejected"
    assert file["current"]["rejectionReason"] == "1000 bytes arrived but 10 were declared"


def test_duplicate_events_do_the_work_once_and_unknown_keys_are_not_trusted(stack: Stack) -> None:
    from functions.on_object_created.handler import handler

    token = stack.token()
    ticket = stack.upload(token, "dup.txt", "text/plain", b"hello")
    key = ticket["upload"]["fields"]["key"]
    stored = stack.container.file_metadata.find_version("acme", uuid.UUID(ticket["versionId"]))
    assert stored is not None
    event = object_created_event(stack.bucket, key, stored[1].storage_version_id, 5, "etag")
    outcomes = [handler(event, LocalLambdaContext())["outcome"] for _ in range(3)]
    assert outcomes == ["duplicate"] * 3
    forged = object_created_event(
        stack.bucket, f"tenants/acme/files/{uuid.uuid4()}/versions/{uuid.uuid4()}", "v", 5, "e"
    )
    assert handler(forged, LocalLambdaContext())["outcome"] == "unknown_key"
    stranger = object_created_event(stack.bucket, "uploads/../../anything", "v", 5, "e")
    assert handler(stranger, LocalLambdaContext())["outcome"] == "unknown_key"
    other_tenant = object_created_event(stack.bucket, key.replace("tenants/acme/", "tenants/globex/"), "v", 5, "e")
    assert handler(other_tenant, LocalLambdaContext())["outcome"] == "unknown_key"


def test_a_new_version_keeps_the_old_one_readable(stack: Stack) -> None:
    token = stack.token()
    first = stack.upload(token, "notes.txt", "text/plain", b"first draft")
    status, second = stack.json(
        "POST",
        f"/v1/files/{first['fileId']}/versions",
        token,
        {"filename": "notes.txt", "mediaType": "text/plain", "byteSize": 12},
    )
    assert status == 201 and second["fileId"] == first["fileId"] and second["versionId"] != first["versionId"]
    assert stack.post_bytes(second, b"second draft", "text/plain") in (200, 204)
    _, latest = stack.json("GET", f"/v1/files/{first['fileId']}/content", token)
    _, original = stack.json("GET", f"/v1/files/{first['fileId']}/content?versionId={first['versionId']}", token)
    with urllib.request.urlopen(latest["url"]) as now, urllib.request.urlopen(original["url"]) as then:
        assert (now.read(), then.read()) == (b"second draft", b"first draft")


def test_listing_is_keyset_paged_and_complete(stack: Stack) -> None:
    token = stack.token(collections=("paged",))
    made = {stack.start_upload(token, f"f{i}.txt", "text/plain", 3, collection="paged")["fileId"] for i in range(5)}
    seen: list[str] = []
    cursor = None
    while True:
        query = "/v1/files?collectionId=paged&limit=2" + (f"&cursor={cursor}" if cursor else "")
        status, page = stack.json("GET", query, token)
        assert status == 200 and len(page["files"]) <= 2
        seen.extend(f["fileId"] for f in page["files"])
        cursor = page["nextCursor"]
        if not cursor:
            break
    assert sorted(seen) == sorted(made)


def test_a_deleted_file_leaves_every_listing_at_once(stack: Stack) -> None:
    token = stack.token(collections=("gone",))
    ticket = stack.upload(token, "bye.txt", "text/plain", b"bye", collection="gone")
    assert stack.json("DELETE", f"/v1/files/{ticket['fileId']}", token) == (
        202,
        {"fileId": ticket["fileId"], "state": "deleting", "bytesLeftToSweep": 0},
    )
    assert stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[0] == 404
    assert stack.json("GET", "/v1/files?collectionId=gone", token)[1]["files"] == []
    assert stack.json("DELETE", f"/v1/files/{ticket['fileId']}", token)[0] == 404


def routes(file_id: str, version_id: str) -> list[tuple[str, str, Any]]:
    return [
        ("GET", f"/v1/files/{file_id}", None),
        ("GET", f"/v1/files/{file_id}/content", None),
        ("GET", f"/v1/files/{file_id}/content?versionId={version_id}", None),
        ("GET", f"/v1/files/{file_id}/pages/1", None),
        ("GET", f"/v1/files/{file_id}/pages/1?versionId={version_id}", None),
        ("GET", f"/v1/files/{file_id}/document?versionId={version_id}", None),
        ("POST", f"/v1/files/{file_id}/versions", {"filename": "x.txt", "mediaType": "text/plain", "byteSize": 3}),
        ("DELETE", f"/v1/files/{file_id}", None),
    ]


def test_an_unentitled_caller_cannot_tell_an_existing_file_from_a_random_id(stack: Stack) -> None:
    owner = stack.token(tenant="acme", collections=("secret",))
    ticket = stack.upload(owner, "plan.pdf", "application/pdf", PDF, collection="secret")
    probes = {
        "other tenant, same collection name": stack.token(tenant="globex", collections=("secret",)),
        "same tenant, other collection": stack.token(tenant="acme", collections=("docs",)),
        "no token": None,
        "bad token": LocalTokenIssuer(b"not-the-secret-0123456789abcdefgh").issue(
            Principal(tenant_id="acme", subject="eve", collections=frozenset({"secret"}))
        ),
    }
    random_file, random_version = str(uuid.uuid4()), str(uuid.uuid4())
    for label, token in probes.items():
        for (method, path, body), (_, random_path, _) in zip(
            routes(ticket["fileId"], ticket["versionId"]), routes(random_file, random_version), strict=True
        ):
            existing = stack.call(method, path, token, body)
            missing = stack.call(method, random_path, token, body)
            assert existing == missing, (label, method, path)
            assert existing[0] in (401, 404), (label, method, path)
    # Nor can it list it, or upload into a collection it is not given.
    assert stack.json("GET", "/v1/files?collectionId=secret", probes["same tenant, other collection"])[1]["files"] == []
    assert stack.json("GET", "/v1/files", probes["other tenant, same collection name"])[1]["files"] == []
    upload_into_secret = {"collectionId": "secret", "filename": "x.txt", "mediaType": "text/plain", "byteSize": 3}
    denied = stack.call("POST", "/v1/uploads", probes["same tenant, other collection"], upload_into_secret)
    assert denied[0] == 404
    # And the owner still has it, untouched.
    assert stack.json("GET", f"/v1/files/{ticket['fileId']}", owner)[1]["current"]["state"] == "stored"


def test_no_response_but_the_signed_upload_itself_reveals_a_storage_key_or_the_bucket(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "k.txt", "text/plain", b"key")
    for method, path in [
        ("GET", f"/v1/files/{ticket['fileId']}"),
        ("GET", "/v1/files"),
        ("DELETE", f"/v1/files/{ticket['fileId']}"),
        ("GET", f"/v1/files/{ticket['fileId']}"),
    ]:
        _, raw = stack.call(method, path, token)
        assert b"tenants/" not in raw and stack.bucket.encode() not in raw, path


def test_deleting_a_collection_mid_upload_cannot_miss_the_file_being_uploaded(stack: Stack) -> None:
    token = stack.token(collections=("mid",))
    done = stack.upload(token, "done.txt", "text/plain", b"done", collection="mid")
    in_flight = stack.start_upload(
        token, "late.txt", "text/plain", 4, collection="mid"
    )  # metadata written, no bytes yet
    status, answer = stack.json("DELETE", "/v1/collections/mid/files", token)
    assert (status, answer) == (202, {"collectionId": "mid", "versionsDeleting": 2, "bytesLeftToSweep": 0})
    # The bytes land after the deletion: the upload never becomes stored, and the late bytes are discarded.
    stack.post_bytes(in_flight, b"late", "text/plain")
    assert stack.json("GET", "/v1/files?collectionId=mid", token)[1]["files"] == []
    for ticket in (done, in_flight):
        found = stack.container.file_metadata.find_version("acme", uuid.UUID(ticket["versionId"]))
        assert found is not None and found[1].state.value == "deleting"
    assert stack.container.content.head(in_flight["upload"]["fields"]["key"]) is None
    stack.container.reconciler.run(datetime.now(UTC))
    assert stack.container.content.head(done["upload"]["fields"]["key"]) is None


def test_a_collection_the_caller_is_not_given_cannot_be_emptied(stack: Stack) -> None:
    owner = stack.token(collections=("kept",))
    ticket = stack.upload(owner, "kept.txt", "text/plain", b"kept", collection="kept")
    outsider = stack.token(collections=("docs",))
    assert stack.call("DELETE", "/v1/collections/kept/files", outsider) == stack.call(
        "DELETE", f"/v1/collections/{uuid.uuid4().hex}/files", outsider
    )
    assert stack.json("GET", f"/v1/files/{ticket['fileId']}", owner)[1]["current"]["state"] == "stored"


def test_a_store_that_cannot_sign_has_its_bytes_proxied_as_an_attachment(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = stack.token()
    ticket = stack.upload(token, "page.html", "text/html", b"<html><script>alert(1)</script></html>")
    monkeypatch.setattr(stack.container.content, "signed_read", lambda *args, **kwargs: None)
    request = urllib.request.Request(
        f"{stack.api}/v1/files/{ticket['fileId']}/content", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.read() == b"<html><script>alert(1)</script></html>"
        assert response.headers["Content-Type"] == "application/octet-stream"
        assert response.headers["Content-Disposition"].startswith('attachment; filename="page.html"')
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_a_store_that_cannot_sign_proxies_bytes_that_are_not_text_unchanged(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A PDF's bytes are not UTF-8: they go through the API base64-encoded, and arrive as they were stored.
    token = stack.token()
    binary = PDF + bytes(range(128, 256))
    ticket = stack.upload(token, "binary.pdf", "application/pdf", binary)
    monkeypatch.setattr(stack.container.content, "signed_read", lambda *args, **kwargs: None)
    request = urllib.request.Request(
        f"{stack.api}/v1/files/{ticket['fileId']}/content", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.read() == binary
        assert response.headers["Content-Type"] == "application/octet-stream"


def test_an_html_original_is_stored_as_opaque_bytes_and_keeps_its_media_type_on_the_record(stack: Stack) -> None:
    # Given an HTML upload (the signed GET forces an attachment, but an object stored as text/html would be a
    # page on any URL that ever opened it inline)
    token = stack.token()
    ticket = stack.upload(token, "page.html", "text/html", b"<html><script>alert(1)</script></html>")
    # Then the object in the bucket is not HTML to a browser
    store = stack.container.content
    assert isinstance(store, S3ContentStore)
    stored = store.client.head_object(Bucket=stack.bucket, Key=ticket["upload"]["fields"]["key"])
    assert stored["ContentType"] == "application/octet-stream"
    # And the file is still HTML to Quire
    status, file = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert status == 200 and file["current"]["mediaType"] == "text/html", file


def test_a_new_version_cannot_bring_back_a_file_deleted_after_it_was_looked_up(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "race.txt", "text/plain", b"race")
    file_id = uuid.UUID(ticket["fileId"])
    # The race: the service looked the file up (live), then a DELETE committed, then the version is recorded.
    stack.container.file_metadata.begin_delete_file("acme", file_id)
    new_version_id = uuid.uuid4()
    with pytest.raises(NotFound):
        stack.container.file_metadata.create_version(
            NewVersion(
                tenant_id="acme",
                file_id=file_id,
                version_id=new_version_id,
                collection_id="docs",
                filename="race.txt",
                media_type="text/plain",
                declared_byte_size=4,
                storage_key=storage_key("acme", file_id, new_version_id),
                created_by="ann",
            ),
            new_file=False,
        )
    assert stack.json("GET", f"/v1/files/{file_id}", token)[0] == 404


def test_posting_the_upload_form_again_cannot_displace_the_stored_bytes(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.upload(token, "once.txt", "text/plain", b"original")
    stack.post_bytes(ticket, b"replaced", "text/plain")  # the form is still valid for a few minutes
    key = ticket["upload"]["fields"]["key"]
    # The newcomer is removed, so the recorded object stays the current one (and out of noncurrent expiry).
    remaining = [stored.version_id for stored in stack.container.content.object_versions(key)]
    found = stack.container.file_metadata.find_version("acme", uuid.UUID(ticket["versionId"]))
    assert found is not None
    assert remaining == [found[1].storage_version_id]
    assert stack.container.content.get(key, max_bytes=100) == b"original"


@pytest.mark.parametrize("cursor", ["x", base64.urlsafe_b64encode(b'["2020-01-01T00:00:00", 5]').decode(), "W10"])
def test_a_forged_cursor_is_a_clear_400_not_a_crash(stack: Stack, cursor: str) -> None:
    status, answer = stack.json("GET", f"/v1/files?cursor={cursor}", stack.token())
    assert (status, answer["message"]) == (400, "cursor is not one this API returned")


def test_an_empty_body_is_rejected_saying_to_upload_again_not_a_crash(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.start_upload(token, "empty.txt", "text/plain", 10)
    # moto ignores the policy's content-length-range: an empty POST lands, and S3 answers a range read of it
    # with 416, which must not reach the event handler (or the sweep that retries it) as an error.
    stack.post_bytes(ticket, b"", "text/plain")
    _, file = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert file["current"]["state"] == "rejected"
    assert file["current"]["rejectionReason"] == "0 bytes arrived but 10 were declared: upload the file again"


def test_a_download_link_issued_before_a_delete_stops_working_when_the_delete_returns(stack: Stack) -> None:
    token = stack.token(collections=("leak",))
    ticket = stack.upload(token, "secret.pdf", "application/pdf", PDF, collection="leak")
    status, read = stack.json("GET", f"/v1/files/{ticket['fileId']}/content", token)
    assert status == 200
    with urllib.request.urlopen(read["url"], timeout=10) as response:
        assert response.read() == PDF  # the link works before the delete
    assert stack.json("DELETE", f"/v1/files/{ticket['fileId']}", token) == (
        202,
        {"fileId": ticket["fileId"], "state": "deleting", "bytesLeftToSweep": 0},
    )
    # No sweep in between: the request itself ended access (the version's bytes are gone, and tagged on AWS).
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(read["url"], timeout=10)
    assert 400 <= refused.value.code < 500
    assert stack.container.content.head(ticket["upload"]["fields"]["key"]) is None


def test_deleting_a_collection_ends_its_links_and_says_how_many_bytes_are_left_to_the_sweep(stack: Stack) -> None:
    token = stack.token(collections=("links",))
    tickets = [stack.upload(token, f"f{i}.pdf", "application/pdf", PDF, collection="links") for i in range(3)]
    links = [stack.json("GET", f"/v1/files/{t['fileId']}/content", token)[1]["url"] for t in tickets]
    status, answer = stack.json("DELETE", "/v1/collections/links/files", token)
    assert (status, answer) == (202, {"collectionId": "links", "versionsDeleting": 3, "bytesLeftToSweep": 0})
    for link in links:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(link, timeout=10)
        assert 400 <= refused.value.code < 500


def test_the_document_of_an_older_version_a_citation_names_is_read_with_its_version_id(stack: Stack) -> None:
    # Given a file with two indexed versions
    token = stack.token(collections=("history",))
    first = stack.upload(token, "notes.md", "text/markdown", b"# Notes\n\nThe first draft says apples.\n", "history")
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    second_body = b"# Notes\n\nThe second draft says pears.\n"
    status, second = stack.json(
        "POST",
        f"/v1/files/{first['fileId']}/versions",
        token,
        {"filename": "notes.md", "mediaType": "text/markdown", "byteSize": len(second_body)},
    )
    assert status == 201
    assert stack.post_bytes(second, second_body, "text/markdown") in (200, 204)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    document = f"/v1/files/{first['fileId']}/document"
    # Then without a version the newest is read, and with one that version
    status, newest = stack.json("GET", document, token)
    assert status == 200 and newest["versionId"] == second["versionId"] and "pears" in newest["markdown"]
    status, older = stack.json("GET", f"{document}?versionId={first['versionId']}", token)
    assert status == 200 and older["versionId"] == first["versionId"] and "apples" in older["markdown"]
    # And a version that is not the file's, or a caller without the collection, gets the 404 a random id gets
    assert stack.json("GET", f"{document}?versionId={uuid.uuid4()}", token)[0] == 404
    outsider = stack.token(collections=("docs",))
    assert stack.call("GET", f"{document}?versionId={first['versionId']}", outsider) == stack.call(
        "GET", f"/v1/files/{uuid.uuid4()}/document?versionId={first['versionId']}", outsider
    )
    # And once the file is deleted its reader is told so
    assert stack.call("DELETE", f"/v1/files/{first['fileId']}", token)[0] == 202
    status, gone = stack.json("GET", f"{document}?versionId={first['versionId']}", token)
    assert status == 404 and gone["error"] == "deleted"
