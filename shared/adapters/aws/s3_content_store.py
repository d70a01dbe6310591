"""FileContentStore over S3 (and over moto's S3 server locally: same boto3 code, real presigned URLs)."""

import base64
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared.adapters.aws.retrying import LazyClient, error_code
from shared.domain.errors import StoredBytesMissing
from shared.domain.files import PresignedUpload, SignedRead, StoredObject
from shared.domain.uploads import attachment_disposition, signed_read_type, stored_content_type
from shared.ports import MAX_SIGNED_READ_LIFETIME, FileContentStore

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
else:
    S3Client = Any

_NOT_FOUND_CODES = {"404", "NoSuchKey", "NoSuchVersion", "NotFound"}
# The agreed convention with the bucket policy (infra): GetObject is denied on an object version tagged so.
DELETED_TAG = {"Key": "quire:deleted", "Value": "true"}
# DeleteObjects takes at most 1,000 keys a call; tags have no batch call, so they go a few at a time (as many
# as botocore's default connection pool holds).
_DELETE_BATCH = 1000
_WITHDRAW_CONCURRENCY = 10
# The form field of a POST that carries the bytes' SHA-256 (base64), as PutObject's x-amz-checksum-sha256 header.
CHECKSUM_FIELD = "x-amz-checksum-sha256"


class S3ContentStore(FileContentStore):
    def __init__(self, client_factory: Callable[[], S3Client], bucket: str) -> None:
        self._client: LazyClient[S3Client] = LazyClient(client_factory)
        self._bucket = bucket

    @property
    def client(self) -> S3Client:
        return self._client.get()

    def put(self, key: str, body: bytes, *, content_type: str) -> StoredObject:
        stored_type = stored_content_type(content_type)
        response = self.client.put_object(Bucket=self._bucket, Key=key, Body=body, ContentType=stored_type)
        return StoredObject(
            key=key, version_id=response.get("VersionId"), byte_size=len(body), content_type=stored_type
        )

    def get(self, key: str, *, version_id: str | None = None, max_bytes: int) -> bytes:
        return self._get(key, version_id=version_id, max_bytes=max_bytes)[0]

    def get_versioned(self, key: str, *, max_bytes: int) -> tuple[bytes, str | None]:
        return self._get(key, version_id=None, max_bytes=max_bytes)

    def _get(self, key: str, *, version_id: str | None, max_bytes: int) -> tuple[bytes, str | None]:
        kwargs: dict[str, Any] = {"Bucket": self._bucket, "Key": key}
        if version_id:
            kwargs["VersionId"] = version_id
        try:
            response = self.client.get_object(**kwargs)
        except ClientError as error:
            if error_code(error) in _NOT_FOUND_CODES:
                raise StoredBytesMissing(key, version_id) from error
            raise
        if response["ContentLength"] > max_bytes:
            response["Body"].close()
            raise ValueError(f"object is {response['ContentLength']} bytes; the limit is {max_bytes}")
        # Read one byte past the limit: the length header is the store's claim, the stream is the fact.
        body = response["Body"].read(max_bytes + 1)
        if len(body) > max_bytes:
            raise ValueError(f"object exceeds the limit of {max_bytes} bytes")
        return body, response.get("VersionId")

    def read_range(self, key: str, *, version_id: str | None, start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        kwargs: dict[str, Any] = {"Bucket": self._bucket, "Key": key, "Range": f"bytes={start}-{start + length - 1}"}
        if version_id:
            kwargs["VersionId"] = version_id
        try:
            body: bytes = self.client.get_object(**kwargs)["Body"].read(length)
        except ClientError as error:
            # A range starting at or past the end (an empty object, say) is S3's 416: nothing there to read.
            if error_code(error) == "InvalidRange":
                return b""
            if error_code(error) in _NOT_FOUND_CODES:
                raise StoredBytesMissing(key, version_id) from error
            raise
        return body

    def head(self, key: str, *, version_id: str | None = None) -> StoredObject | None:
        kwargs: dict[str, Any] = {"Bucket": self._bucket, "Key": key}
        if version_id:
            kwargs["VersionId"] = version_id
        try:
            response = self.client.head_object(**kwargs)
        except ClientError as error:
            if error_code(error) in _NOT_FOUND_CODES:
                return None
            raise
        return StoredObject(
            key=key,
            version_id=response.get("VersionId"),
            byte_size=response["ContentLength"],
            content_type=response.get("ContentType"),
        )

    def signed_read(
        self,
        key: str,
        *,
        version_id: str | None,
        filename: str,
        lifetime: timedelta,
        media_type: str | None = None,
    ) -> SignedRead | None:
        lifetime = min(lifetime, MAX_SIGNED_READ_LIFETIME)
        params: dict[str, Any] = {
            "Bucket": self._bucket,
            "Key": key,
            "ResponseContentDisposition": attachment_disposition(filename),
            "ResponseContentType": signed_read_type(media_type),
        }
        if version_id:
            params["VersionId"] = version_id
        seconds = max(1, int(lifetime.total_seconds()))
        url = self.client.generate_presigned_url("get_object", Params=params, ExpiresIn=seconds)
        return SignedRead(url=url, expires_at=datetime.now(UTC) + timedelta(seconds=seconds))

    def delete_version(self, key: str, version_id: str) -> None:
        try:
            self.client.delete_object(Bucket=self._bucket, Key=key, VersionId=version_id)
        except ClientError as error:
            if error_code(error) not in _NOT_FOUND_CODES:
                raise

    def delete_all_versions(self, key: str) -> int:
        removed = 0
        for stored in list(self._versions(key, exact=True)):
            if stored.version_id:
                self.delete_version(key, stored.version_id)
                removed += 1
        return removed

    def withdraw(self, objects: Sequence[tuple[str, str | None]]) -> int:
        pinned = [(key, version_id) for key, version_id in objects if version_id]
        # The tags first, concurrently (one call each): the bucket policy denies the reads from then on.
        with ThreadPoolExecutor(max_workers=_WITHDRAW_CONCURRENCY) as pool:
            list(pool.map(lambda pair: self._tag_deleted(*pair), pinned))
        removed = 0
        for start in range(0, len(pinned), _DELETE_BATCH):
            batch = pinned[start : start + _DELETE_BATCH]
            response = self.client.delete_objects(
                Bucket=self._bucket,
                Delete={"Objects": [{"Key": key, "VersionId": version} for key, version in batch], "Quiet": True},
            )
            failed = [e for e in response.get("Errors", []) if e.get("Code") not in _NOT_FOUND_CODES]
            if failed:
                raise RuntimeError(f"S3 kept {len(failed)} of {len(batch)} object versions: {failed[0]}")
            removed += len(batch)
        # An unversioned bucket's object (no version id): every version of its key, the null one included.
        for key, version_id in objects:
            if not version_id:
                self._tag_deleted(key, None)
                self.delete_all_versions(key)
                removed += 1
        return removed

    def _tag_deleted(self, key: str, version_id: str | None) -> None:
        kwargs: dict[str, Any] = {"Bucket": self._bucket, "Key": key, "Tagging": {"TagSet": [DELETED_TAG]}}
        if version_id:
            kwargs["VersionId"] = version_id
        try:
            self.client.put_object_tagging(**kwargs)
        except ClientError as error:
            if error_code(error) not in _NOT_FOUND_CODES:
                raise

    def signed_upload(
        self, key: str, *, content_type: str, max_bytes: int, lifetime: timedelta, sha256: str | None = None
    ) -> PresignedUpload:
        seconds = max(1, int(min(lifetime, MAX_SIGNED_READ_LIFETIME).total_seconds()))
        stored_type = stored_content_type(content_type)
        fields = {"Content-Type": stored_type}
        conditions: list[Any] = [
            {"bucket": self._bucket},
            ["eq", "$key", key],
            ["eq", "$Content-Type", stored_type],
            ["content-length-range", 1, max_bytes],
        ]
        if sha256 is not None:
            # S3 computes the posted bytes' SHA-256 and refuses them (BadDigest) unless it is this one; the field is
            # in the signed policy, so the browser can neither drop nor change it.
            checksum = base64.b64encode(bytes.fromhex(sha256)).decode()
            fields[CHECKSUM_FIELD] = checksum
            conditions.append({CHECKSUM_FIELD: checksum})
        post = self.client.generate_presigned_post(
            Bucket=self._bucket, Key=key, Fields=fields, Conditions=conditions, ExpiresIn=seconds
        )
        return PresignedUpload(
            url=post["url"],
            fields={name: str(value) for name, value in post["fields"].items()},
            expires_at=datetime.now(UTC) + timedelta(seconds=seconds),
        )

    def object_versions(self, prefix: str) -> Iterator[StoredObject]:
        return self._versions(prefix, exact=False, markers=False)

    def _versions(self, prefix: str, *, exact: bool, markers: bool = True) -> Iterator[StoredObject]:
        """Lazily, a page at a time: a caller that stops early never lists the rest of the bucket."""
        paginator = self.client.get_paginator("list_object_versions")
        for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix):
            for version in page.get("Versions", []):
                if not exact or version["Key"] == prefix:
                    yield StoredObject(
                        key=version["Key"], version_id=version.get("VersionId"), byte_size=version.get("Size", 0)
                    )
            for marker in page.get("DeleteMarkers", []) if markers else []:
                if not exact or marker["Key"] == prefix:
                    yield StoredObject(key=marker["Key"], version_id=marker.get("VersionId"), byte_size=0)

    def bucket_versioning(self) -> str | None:
        """The bucket's versioning status ("Enabled", "Suspended") or None if never enabled."""
        return self.client.get_bucket_versioning(Bucket=self._bucket).get("Status")
