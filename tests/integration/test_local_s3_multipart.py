"""S3 multipart upload on the local S3 (shared/local/s3_multipart.py): the boto3 calls and presigned part PUTs that
run against AWS, answered as S3 answers them, every acknowledged part and upload on disk."""

import base64
import hashlib
import os
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from shared.local.embedded_postgres import free_port
from shared.local.paths import LOCAL_AWS_ENVIRONMENT
from shared.local.s3_server import LocalS3Server
from shared.local.supervisor import ensure_bucket
from tests.builders.local_s3 import forget_bucket, server_process

MIB = 1024 * 1024
ORIGIN = "http://127.0.0.1:1"


def client_for(endpoint: str) -> Any:
    """As the application builds its S3 client (SigV4, path style), signing with the local stack's credentials."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=LOCAL_AWS_ENVIRONMENT["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_AWS_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"],
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def sha256_of(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def http_put(url: str, data: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """A browser's PUT of a part's bytes to its presigned URL (loopback only)."""
    assert urlsplit(url).hostname == "127.0.0.1"
    request = urllib.request.Request(url, data=data, method="PUT", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as refusal:
        return refusal.code, dict(refusal.headers.items()), refusal.read()


def error_code(body: bytes) -> str:
    return body.split(b"<Code>")[1].split(b"</Code>")[0].decode()


class Upload:
    """One multipart upload, driven as the application's adapter drives it."""

    def __init__(self, client: Any, bucket: str, key: str, *, checksums: bool = True) -> None:
        self.client, self.bucket, self.key = client, bucket, key
        extra = {"ChecksumAlgorithm": "SHA256"} if checksums else {}
        self.upload_id: str = client.create_multipart_upload(
            Bucket=bucket, Key=key, ContentType="application/pdf", **extra
        )["UploadId"]

    def url(self, number: int, checksum: str | None = None, expires: int = 300) -> str:
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": self.key, "UploadId": self.upload_id}
        params["PartNumber"] = number
        if checksum is not None:
            params["ChecksumSHA256"] = checksum
        url: str = self.client.generate_presigned_url("upload_part", Params=params, ExpiresIn=expires)
        return url

    def put(self, number: int, data: bytes) -> dict[str, Any]:
        """A part through its presigned URL, signed with its checksum; the entry a completion names."""
        checksum = sha256_of(data)
        status, headers, body = http_put(self.url(number, checksum), data, {"x-amz-checksum-sha256": checksum})
        assert status == 200, body
        assert headers["x-amz-checksum-sha256"] == checksum
        return {"PartNumber": number, "ETag": headers["ETag"], "ChecksumSHA256": checksum}

    def complete(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        done: dict[str, Any] = self.client.complete_multipart_upload(
            Bucket=self.bucket, Key=self.key, UploadId=self.upload_id, MultipartUpload={"Parts": parts}
        )
        return done

    def parts(self) -> list[dict[str, Any]]:
        pages = self.client.get_paginator("list_parts").paginate(
            Bucket=self.bucket, Key=self.key, UploadId=self.upload_id
        )
        return [part for page in pages for part in page.get("Parts", [])]


@pytest.fixture
def bucket(s3_endpoint: str) -> str:
    name = f"quire-multipart-{free_port()}"
    ensure_bucket(s3_endpoint, name, browser_origins=(ORIGIN,))
    return name


@pytest.fixture
def client(s3_endpoint: str) -> Any:
    return client_for(s3_endpoint)


def multipart_etag(*parts: bytes) -> str:
    digests = b"".join(hashlib.md5(part).digest() for part in parts)  # noqa: S324 - S3's ETag
    return f'"{hashlib.md5(digests).hexdigest()}-{len(parts)}"'  # noqa: S324


def test_parts_put_to_presigned_urls_complete_into_one_new_version(client: Any, bucket: str) -> None:
    first, second, last = os.urandom(5 * MIB), os.urandom(5 * MIB), b"the end"
    earlier = client.put_object(Bucket=bucket, Key="t/a/big.pdf", Body=b"an earlier version")["VersionId"]
    upload = Upload(client, bucket, "t/a/big.pdf")
    entries = [upload.put(1, first), upload.put(2, second), upload.put(3, last)]
    listed = upload.parts()
    assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in listed] == [
        (1, 5 * MIB, f'"{hashlib.md5(first).hexdigest()}"'),  # noqa: S324 - S3's ETag
        (2, 5 * MIB, f'"{hashlib.md5(second).hexdigest()}"'),  # noqa: S324
        (3, 7, f'"{hashlib.md5(last).hexdigest()}"'),  # noqa: S324
    ]
    assert [p["ChecksumSHA256"] for p in listed] == [sha256_of(first), sha256_of(second), sha256_of(last)]

    done = upload.complete(entries)

    assert done["ETag"] == multipart_etag(first, second, last)
    composite = hashlib.sha256(b"".join(hashlib.sha256(p).digest() for p in (first, second, last))).digest()
    assert done["ChecksumSHA256"] == f"{base64.b64encode(composite).decode()}-3"
    assert done["VersionId"] and done["VersionId"] != earlier
    stored = client.get_object(Bucket=bucket, Key="t/a/big.pdf")
    assert stored["Body"].read() == first + second + last
    assert stored["ETag"] == done["ETag"] and stored["VersionId"] == done["VersionId"]
    assert stored["ContentType"] == "application/pdf" and stored["ContentLength"] == 10 * MIB + 7
    ranged = client.get_object(Bucket=bucket, Key="t/a/big.pdf", Range=f"bytes={10 * MIB}-{10 * MIB + 2}")
    assert ranged["Body"].read() == b"the"
    versions = client.list_object_versions(Bucket=bucket, Prefix="t/a/big.pdf")["Versions"]
    assert [v["VersionId"] for v in versions] == [done["VersionId"], earlier]
    # Finished: the upload is gone, and completing it again is S3's NoSuchUpload.
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    with pytest.raises(ClientError, match="NoSuchUpload"):
        upload.complete(entries)


def test_a_part_whose_bytes_differ_from_the_signed_checksum_is_refused_as_bad_digest(client: Any, bucket: str) -> None:
    upload = Upload(client, bucket, "t/a/doc.pdf")
    claimed = sha256_of(b"what the browser hashed")
    status, _, body = http_put(upload.url(1, claimed), b"what it sent", {"x-amz-checksum-sha256": claimed})
    assert (status, error_code(body)) == (400, "BadDigest")
    assert upload.parts() == []


def test_a_part_without_the_checksum_header_its_url_was_signed_with_is_forbidden(client: Any, bucket: str) -> None:
    upload = Upload(client, bucket, "t/a/doc.pdf")
    data = b"part bytes"
    url = upload.url(1, sha256_of(data))
    status, _, body = http_put(url, data)
    assert (status, error_code(body)) == (403, "SignatureDoesNotMatch")
    # Another checksum than the one signed: the signature covers the header's value too.
    other = sha256_of(b"other bytes")
    status, _, body = http_put(url, b"other bytes", {"x-amz-checksum-sha256": other})
    assert (status, error_code(body)) == (403, "SignatureDoesNotMatch")
    assert upload.parts() == []


def test_a_part_url_past_its_expiry_is_refused(client: Any, bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import botocore.auth

    upload = Upload(client, bucket, "t/a/doc.pdf")
    signed_an_hour_ago = datetime.now(UTC).replace(tzinfo=None) - timedelta(hours=1)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: signed_an_hour_ago)
    url = upload.url(1, expires=900)
    monkeypatch.undo()
    status, _, body = http_put(url, b"late bytes")
    assert (status, error_code(body)) == (403, "AccessDenied")
    assert b"<Message>Request has expired</Message>" in body
    assert upload.parts() == []


def test_parts_are_listed_a_page_at_a_time(client: Any, bucket: str) -> None:
    upload = Upload(client, bucket, "t/a/paged.pdf", checksums=False)
    for number in (3, 1, 2):  # by boto3 itself, signed in its Authorization header
        client.upload_part(
            Bucket=bucket, Key=upload.key, UploadId=upload.upload_id, PartNumber=number, Body=b"p%d" % number
        )
    page = client.list_parts(Bucket=bucket, Key=upload.key, UploadId=upload.upload_id, MaxParts=2)
    assert [p["PartNumber"] for p in page["Parts"]] == [1, 2]
    assert page["IsTruncated"] and page["NextPartNumberMarker"] == 2
    assert all("ChecksumSHA256" not in part for part in page["Parts"])  # the upload has no checksum algorithm
    rest = client.list_parts(Bucket=bucket, Key=upload.key, UploadId=upload.upload_id, MaxParts=2, PartNumberMarker=2)
    assert [p["PartNumber"] for p in rest["Parts"]] == [3] and not rest["IsTruncated"]
    assert [p["PartNumber"] for p in upload.parts()] == [1, 2, 3]
    # A part sent again replaces the first.
    client.upload_part(Bucket=bucket, Key=upload.key, UploadId=upload.upload_id, PartNumber=2, Body=b"again")
    assert [p["Size"] for p in upload.parts()] == [2, 5, 2]
    with pytest.raises(ClientError, match="InvalidArgument"):
        client.upload_part(Bucket=bucket, Key=upload.key, UploadId=upload.upload_id, PartNumber=10_001, Body=b"x")


def test_a_completion_is_refused_as_s3_refuses_it_and_the_upload_stays_open(client: Any, bucket: str) -> None:
    upload = Upload(client, bucket, "t/a/refused.pdf")
    small, whole, last = upload.put(1, b"too small"), upload.put(2, os.urandom(5 * MIB)), upload.put(3, b"end")
    refusals = {
        "EntityTooSmall": [small, whole],  # every part but the last is 5 MiB or more
        "InvalidPart": [whole, {**last, "ETag": '"00000000000000000000000000000000"'}],
        "InvalidPartOrder": [last, whole],
    }
    for code, parts in refusals.items():
        with pytest.raises(ClientError) as refused:
            upload.complete(parts)
        assert refused.value.response["Error"]["Code"] == code
    with pytest.raises(ClientError, match="InvalidPart"):
        upload.complete([whole, {"PartNumber": 4, "ETag": last["ETag"], "ChecksumSHA256": last["ChecksumSHA256"]}])
    with pytest.raises(ClientError, match="InvalidRequest"):  # a checksum upload's parts name their checksums
        upload.complete([{"PartNumber": 2, "ETag": whole["ETag"]}, last])
    assert [p["PartNumber"] for p in upload.parts()] == [1, 2, 3]
    assert upload.complete([whole, last])["ETag"].endswith('-2"')  # parts 2 and 3: a gap is allowed


def test_requests_outside_s3s_limits_get_s3s_refusals(client: Any, bucket: str) -> None:
    with pytest.raises(ClientError, match="KeyTooLongError"):
        client.create_multipart_upload(Bucket=bucket, Key="k" * 1025)
    with pytest.raises(ClientError, match="NotImplemented"):  # a checksum the local S3 does not keep
        client.create_multipart_upload(Bucket=bucket, Key="t/a/doc.pdf", ChecksumAlgorithm="CRC32C")
    with pytest.raises(ClientError, match="NoSuchBucket"):
        client.create_multipart_upload(Bucket=f"{bucket}-missing", Key="t/a/doc.pdf")
    upload = Upload(client, bucket, "t/a/doc.pdf")
    for number in (0, 10_001):
        status, _, body = http_put(upload.url(number), b"x")
        assert (status, error_code(body)) == (400, "InvalidArgument")
    with pytest.raises(ClientError, match="InvalidArgument"):
        client.list_parts(Bucket=bucket, Key=upload.key, UploadId=upload.upload_id, MaxParts=-1)
    completion = client.generate_presigned_url(
        "complete_multipart_upload", Params={"Bucket": bucket, "Key": upload.key, "UploadId": upload.upload_id}
    )
    for garbage in (b"<CompleteMultipartUpload><Part>", b"<CompleteMultipartUpload/>", b"not xml"):
        request = urllib.request.Request(completion, data=garbage, method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert (refused.value.code, error_code(refused.value.read())) == (400, "MalformedXML")
    with pytest.raises(ClientError, match="NoSuchUpload"):
        client.list_parts(Bucket=bucket, Key=upload.key, UploadId="../../etc")


def test_an_aborted_upload_and_its_parts_are_gone(client: Any, bucket: str) -> None:
    upload = Upload(client, bucket, "t/a/aborted.pdf")
    entry = upload.put(1, b"bytes")
    client.abort_multipart_upload(Bucket=bucket, Key=upload.key, UploadId=upload.upload_id)
    for call in (upload.parts, lambda: upload.complete([entry])):
        with pytest.raises(ClientError, match="NoSuchUpload"):
            call()
    with pytest.raises(ClientError, match="NoSuchUpload"):
        client.abort_multipart_upload(Bucket=bucket, Key=upload.key, UploadId=upload.upload_id)
    status, _, body = http_put(upload.url(2), b"late part")
    assert (status, error_code(body)) == (404, "NoSuchUpload")
    # An upload's id is valid for its own key only.
    other = Upload(client, bucket, "t/a/other.pdf")
    with pytest.raises(ClientError, match="NoSuchUpload"):
        client.list_parts(Bucket=bucket, Key="t/a/elsewhere.pdf", UploadId=other.upload_id)


def test_open_uploads_are_listed_by_prefix_a_page_at_a_time(client: Any, bucket: str) -> None:
    begun = datetime.now(UTC) - timedelta(seconds=5)
    ids = {key: Upload(client, bucket, key).upload_id for key in ("t/a/one", "t/a/two", "t/b/three")}
    pages = client.get_paginator("list_multipart_uploads").paginate(
        Bucket=bucket, Prefix="t/a/", PaginationConfig={"PageSize": 1}
    )
    listed = [upload for page in pages for upload in page.get("Uploads", [])]
    assert [(u["Key"], u["UploadId"]) for u in listed] == [("t/a/one", ids["t/a/one"]), ("t/a/two", ids["t/a/two"])]
    assert all(u["Initiated"] >= begun for u in listed)
    first = client.list_multipart_uploads(Bucket=bucket, Prefix="t/", MaxUploads=2)
    assert first["IsTruncated"] and len(first["Uploads"]) == 2


def test_a_browser_part_put_reads_the_etag_through_cors(client: Any, bucket: str) -> None:
    upload = Upload(client, bucket, "t/a/browser.pdf", checksums=False)
    status, headers, _ = http_put(upload.url(1), b"from the console", {"Origin": ORIGIN})
    assert status == 200
    assert headers["Access-Control-Allow-Origin"] == ORIGIN
    assert "ETag" in headers["Access-Control-Expose-Headers"] and "PUT" in headers["Access-Control-Allow-Methods"]


@pytest.fixture
def events() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def server(tmp_path: Path, aws_credentials: None, events: list[dict[str, Any]]) -> Iterator[LocalS3Server]:
    """A server of its own, on a directory of the test's, announcing new objects to `events`."""
    started = LocalS3Server(tmp_path / "s3", port=free_port(), on_object_created=events.append)
    started.start()
    try:
        yield started
    finally:
        started.stop()


def test_open_uploads_and_their_parts_survive_a_restart(tmp_path: Path, server: LocalS3Server) -> None:
    name = f"quire-mp-restart-{server.port}"
    ensure_bucket(server.endpoint, name)
    upload = Upload(client_for(server.endpoint), name, "t/a/resumed.pdf")
    first = os.urandom(5 * MIB)
    entries = [upload.put(1, first)]
    server.stop()  # nothing flushed on the way out: each part was on disk when it was answered
    forget_bucket(name)
    restarted = LocalS3Server(tmp_path / "s3", port=free_port())
    restarted.start()
    try:
        upload.client = client_for(restarted.endpoint)
        [listed] = upload.client.list_multipart_uploads(Bucket=name)["Uploads"]
        assert listed["UploadId"] == upload.upload_id and listed["ChecksumAlgorithm"] == "SHA256"
        assert [(p["PartNumber"], p["Size"]) for p in upload.parts()] == [(1, 5 * MIB)]
        entries.append(upload.put(2, b"after the restart"))
        version = upload.complete(entries)["VersionId"]
    finally:
        restarted.stop()
        forget_bucket(name)
    again = LocalS3Server(tmp_path / "s3", port=free_port())
    again.start()
    try:
        client = client_for(again.endpoint)
        stored = client.get_object(Bucket=name, Key="t/a/resumed.pdf", VersionId=version)
        assert stored["Body"].read() == first + b"after the restart"
        assert stored["ETag"] == multipart_etag(first, b"after the restart")
        assert client.list_multipart_uploads(Bucket=name).get("Uploads", []) == []
        assert list((tmp_path / "s3" / "uploads").iterdir()) == []
    finally:
        again.stop()
        forget_bucket(name)


def test_a_completed_upload_is_announced_once_on_disk_as_completed(
    server: LocalS3Server, events: list[dict[str, Any]]
) -> None:
    name = f"quire-mp-event-{server.port}"
    ensure_bucket(server.endpoint, name)
    upload = Upload(client_for(server.endpoint), name, "originals/t/a/new.pdf")
    done = upload.complete([upload.put(1, b"one part")])
    [event] = events
    detail = event["detail"]
    assert detail["reason"] == "CompleteMultipartUpload"
    assert detail["object"]["version-id"] == done["VersionId"] and detail["object"]["size"] == 8
    assert detail["object"]["etag"] == done["ETag"].strip('"')
    forget_bucket(name)


def test_a_completion_that_cannot_reach_the_disk_is_refused_and_the_upload_stays_open(
    server: LocalS3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.local import durable_s3

    name = f"quire-mp-full-{server.port}"
    ensure_bucket(server.endpoint, name)
    client = client_for(server.endpoint)
    upload = Upload(client, name, "t/a/doc.pdf")
    entries = [upload.put(1, b"kept for a retry")]
    real_write = durable_s3.write_synced

    def disk_full(path: Path, chunks: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(durable_s3, "write_synced", disk_full)
    with pytest.raises(ClientError, match="InternalError"):
        upload.complete(entries)
    monkeypatch.setattr(durable_s3, "write_synced", real_write)
    assert "Versions" not in client.list_object_versions(Bucket=name, Prefix="t/a/doc.pdf")
    assert [p["PartNumber"] for p in upload.parts()] == [1]
    version = upload.complete(entries)["VersionId"]
    assert client.get_object(Bucket=name, Key="t/a/doc.pdf", VersionId=version)["Body"].read() == b"kept for a retry"
    forget_bucket(name)


def test_a_part_cut_short_by_kill_9_is_not_a_part_after_the_restart(tmp_path: Path, aws_credentials: None) -> None:
    port, name = free_port(), "quire-mp-kill"
    child = server_process(tmp_path / "s3", port, name)
    try:
        upload = Upload(client_for(f"http://127.0.0.1:{port}"), name, "t/a/killed.pdf")
        first = upload.put(1, b"acknowledged")
        # Part 2's PUT says 5 MiB and sends one; the server dies while it waits for the rest.
        target = urlsplit(upload.url(2))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(
                f"PUT {target.path}?{target.query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Content-Length: {5 * MIB}\r\n\r\n".encode()
                + b"x" * MIB
            )
            parts_directory = next((tmp_path / "s3" / "uploads").iterdir()) / "parts"
            deadline = time.monotonic() + 30
            while sum(p.stat().st_size for p in parts_directory.glob("00002-*.data")) < MIB:
                assert time.monotonic() < deadline, "the server never wrote part 2's first MiB"
                time.sleep(0.01)
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    forget_bucket(name)
    restarted = LocalS3Server(tmp_path / "s3", port=free_port())
    restarted.start()
    try:
        upload.client = client_for(restarted.endpoint)
        assert [(p["PartNumber"], p["ETag"]) for p in upload.parts()] == [(1, first["ETag"])]
        # Part 2's bytes were never a part: the start removed them; part 1's file and record remain.
        assert sorted(p.name[:6] for p in parts_directory.iterdir()) == ["00001-", "00001."]
        assert upload.complete([first])["ETag"] == multipart_etag(b"acknowledged")
    finally:
        restarted.stop()
        forget_bucket(name)
