"""S3MultipartStore against a real s3 client whose calls botocore's Stubber answers (every request validated against
S3's service model), with responses shaped as S3 documents them: CreateMultipartUpload, ListParts paged by
NextPartNumberMarker, CompleteMultipartUpload, AbortMultipartUpload, ListMultipartUploads; and the presigned
UploadPart URL, which is signed offline."""

import base64
import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from shared.adapters.aws.s3_multipart import S3MultipartStore
from shared.domain.upload_sessions import StoredPart, UploadGone
from tests.builders.aws import offline_client

BUCKET = "quire-originals"
KEY = "tenants/acme/files/0b6a4a52-35d4-4f43-9d1f-8a3a2f0f8d11/versions/6f1c3a57-0b7e-4a7e-9d55-2f1f1a2b3c4d"
UPLOAD = "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"
SHA = base64.b64encode(hashlib.sha256(b"part one").digest()).decode()


@pytest.fixture
def s3() -> Iterator[tuple[S3MultipartStore, Stubber]]:
    client = offline_client("s3")
    with Stubber(client) as stubber:
        yield S3MultipartStore(lambda: client, BUCKET), stubber
        stubber.assert_no_pending_responses()


def test_an_upload_begins_with_the_stored_type_and_sha256_checksums_when_asked(
    s3: tuple[S3MultipartStore, Stubber],
) -> None:
    store, stubber = s3
    stubber.add_response(
        "create_multipart_upload",
        {"Bucket": BUCKET, "Key": KEY, "UploadId": UPLOAD, "ChecksumAlgorithm": "SHA256"},
        {"Bucket": BUCKET, "Key": KEY, "ContentType": "audio/mpeg", "ChecksumAlgorithm": "SHA256"},
    )
    assert store.begin(KEY, content_type="audio/mpeg", checksums=True) == UPLOAD


def sigv4_client() -> Any:
    """Configured as shared/bootstrap/clients.py configures S3's (SigV4, the regional endpoint): SigV2, botocore's
    default for presigning in us-east-1, would carry the checksum as a query parameter instead of a signed
    header."""
    return boto3.client(
        "s3",
        region_name="eu-west-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        endpoint_url="https://s3.eu-west-1.amazonaws.com",
        config=Config(signature_version="s3v4", s3={"addressing_style": "virtual"}),
    )


def test_a_part_url_is_a_presigned_upload_part_signed_with_its_checksum() -> None:
    store = S3MultipartStore(sigv4_client, BUCKET)
    before = datetime.now(UTC)
    part = store.part_upload(KEY, UPLOAD, 7, size=5 * 1024 * 1024, lifetime=timedelta(minutes=15), checksum_sha256=SHA)
    query = parse_qs(urlsplit(part.url).query)
    assert urlsplit(part.url).path.endswith(KEY)
    assert query["partNumber"] == ["7"] and query["uploadId"] == [UPLOAD]
    assert query["X-Amz-Expires"] == ["900"]
    # Signed as a header, so S3 refuses the PUT without it, and bytes whose SHA-256 is another (BadDigest).
    signed = query["X-Amz-SignedHeaders"][0].split(";")
    assert "x-amz-checksum-sha256" in signed
    # And its length: storage refuses a body of any other size, so a part cannot park more than was planned.
    assert "content-length" in signed
    assert part.headers == {"x-amz-checksum-sha256": SHA}
    assert before + timedelta(minutes=14) < part.expires_at <= datetime.now(UTC) + timedelta(minutes=15)

    plain = store.part_upload(KEY, UPLOAD, 1, size=10, lifetime=timedelta(hours=3), checksum_sha256=None)
    assert plain.headers == {} and parse_qs(urlsplit(plain.url).query)["X-Amz-Expires"] == ["900"]
    # Never past what was asked: a session with minutes left signs for those minutes.
    short = store.part_upload(KEY, UPLOAD, 1, size=10, lifetime=timedelta(seconds=42), checksum_sha256=None)
    assert parse_qs(urlsplit(short.url).query)["X-Amz-Expires"] == ["42"]


def listed(numbers: range, **page: Any) -> dict[str, Any]:
    return {
        "Bucket": BUCKET,
        "Key": KEY,
        "UploadId": UPLOAD,
        "Parts": [
            {
                "PartNumber": number,
                "Size": 5 * 1024 * 1024,
                "ETag": f'"{number:032x}"',
                "ChecksumSHA256": SHA,
                "LastModified": datetime(2026, 12, 7, tzinfo=UTC),
            }
            for number in numbers
        ],
        **page,
    }


def test_the_parts_s3_holds_are_read_from_every_page(s3: tuple[S3MultipartStore, Stubber]) -> None:
    store, stubber = s3
    stubber.add_response(
        "list_parts",
        listed(range(1, 1001), IsTruncated=True, NextPartNumberMarker=1000, MaxParts=1000),
        {"Bucket": BUCKET, "Key": KEY, "UploadId": UPLOAD},
    )
    stubber.add_response(
        "list_parts",
        listed(range(1001, 1003), IsTruncated=False, MaxParts=1000),
        {"Bucket": BUCKET, "Key": KEY, "UploadId": UPLOAD, "PartNumberMarker": 1000},
    )
    parts = store.parts(KEY, UPLOAD)
    assert parts is not None and [part.part_number for part in parts] == list(range(1, 1003))
    assert parts[0] == StoredPart(part_number=1, size=5 * 1024 * 1024, etag=f"{1:032x}", checksum_sha256=SHA)


def test_an_upload_s3_no_longer_knows_has_no_parts_and_aborting_it_again_is_not_an_error(
    s3: tuple[S3MultipartStore, Stubber],
) -> None:
    store, stubber = s3
    stubber.add_client_error("list_parts", "NoSuchUpload", "The specified upload does not exist.", 404)
    assert store.parts(KEY, UPLOAD) is None
    stubber.add_client_error("abort_multipart_upload", "NoSuchUpload", "The specified upload does not exist.", 404)
    store.abort(KEY, UPLOAD)
    stubber.add_client_error("abort_multipart_upload", "AccessDenied", "Access Denied", 403)
    with pytest.raises(ClientError):
        store.abort(KEY, UPLOAD)


def test_completion_names_every_part_with_its_etag_and_checksum_and_s3s_refusal_is_the_clients(
    s3: tuple[S3MultipartStore, Stubber],
) -> None:
    store, stubber = s3
    parts = [StoredPart(1, 5 * 1024 * 1024, "a" * 32, SHA), StoredPart(2, 10, "b" * 32)]
    stubber.add_response(
        "complete_multipart_upload",
        {"Bucket": BUCKET, "Key": KEY, "ETag": '"' + "c" * 32 + '-2"', "VersionId": "v2"},
        {
            "Bucket": BUCKET,
            "Key": KEY,
            "UploadId": UPLOAD,
            "MultipartUpload": {
                "Parts": [
                    {"PartNumber": 1, "ETag": '"' + "a" * 32 + '"', "ChecksumSHA256": SHA},
                    {"PartNumber": 2, "ETag": '"' + "b" * 32 + '"'},
                ]
            },
        },
    )
    assert store.complete(KEY, UPLOAD, parts) == "v2"
    stubber.add_client_error("complete_multipart_upload", "NoSuchUpload", "The specified upload does not exist.", 404)
    with pytest.raises(UploadGone):
        store.complete(KEY, UPLOAD, parts)
    stubber.add_client_error(
        "complete_multipart_upload",
        "InvalidPart",
        "One or more of the specified parts could not be found.",
        400,
    )
    with pytest.raises(ValueError, match="could not be found"):
        store.complete(KEY, UPLOAD, parts)


def test_stale_uploads_are_those_begun_before_the_cutoff_on_every_page(s3: tuple[S3MultipartStore, Stubber]) -> None:
    store, stubber = s3
    cutoff = datetime(2026, 12, 6, tzinfo=UTC)

    def upload(key: str, initiated: datetime) -> dict[str, Any]:
        return {"Key": key, "UploadId": f"id-{key}", "Initiated": initiated}

    stubber.add_response(
        "list_multipart_uploads",
        {
            "Bucket": BUCKET,
            "Uploads": [upload("tenants/acme/files/a", cutoff - timedelta(hours=1))],
            "IsTruncated": True,
            "NextKeyMarker": "tenants/acme/files/a",
            "NextUploadIdMarker": "id-tenants/acme/files/a",
        },
        {"Bucket": BUCKET, "Prefix": "tenants/acme/"},
    )
    stubber.add_response(
        "list_multipart_uploads",
        {
            "Bucket": BUCKET,
            "Uploads": [
                upload("tenants/acme/files/b", cutoff + timedelta(hours=1)),
                upload("tenants/acme/files/c", cutoff - timedelta(days=3)),
            ],
            "IsTruncated": False,
        },
        {
            "Bucket": BUCKET,
            "Prefix": "tenants/acme/",
            "KeyMarker": "tenants/acme/files/a",
            "UploadIdMarker": "id-tenants/acme/files/a",
        },
    )
    assert list(store.stale_uploads("tenants/acme/", begun_before=cutoff)) == [
        ("tenants/acme/files/a", "id-tenants/acme/files/a"),
        ("tenants/acme/files/c", "id-tenants/acme/files/c"),
    ]
