"""MultipartStore over S3 (and over the local S3, whose multipart is Quire's own on disk: same boto3 code)."""

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared.adapters.aws.retrying import LazyClient, error_code
from shared.domain.upload_sessions import PartUpload, StoredPart, UploadGone
from shared.domain.uploads import stored_content_type
from shared.ports import MAX_SIGNED_READ_LIFETIME, MultipartStore

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import CompletedPartTypeDef
else:
    S3Client = Any
    CompletedPartTypeDef = dict

_NO_SUCH_UPLOAD = {"NoSuchUpload", "404", "NotFound"}
# S3's refusals of a completion whose parts are not what it holds: the client's to fix, not a retry.
_PART_REFUSALS = {"InvalidPart", "InvalidPartOrder", "EntityTooSmall", "InvalidRequest", "BadDigest"}
_CHECKSUM_HEADER = "x-amz-checksum-sha256"


class S3MultipartStore(MultipartStore):
    def __init__(self, client_factory: Callable[[], S3Client], bucket: str) -> None:
        self._client: LazyClient[S3Client] = LazyClient(client_factory)
        self._bucket = bucket

    @property
    def client(self) -> S3Client:
        return self._client.get()

    def begin(self, key: str, *, content_type: str, checksums: bool) -> str:
        kwargs: dict[str, Any] = {"Bucket": self._bucket, "Key": key, "ContentType": stored_content_type(content_type)}
        if checksums:
            kwargs["ChecksumAlgorithm"] = "SHA256"
        upload_id: str = self.client.create_multipart_upload(**kwargs)["UploadId"]
        return upload_id

    def part_upload(
        self,
        key: str,
        storage_upload_id: str,
        part_number: int,
        *,
        size: int,
        lifetime: timedelta,
        checksum_sha256: str | None,
    ) -> PartUpload:
        seconds = max(1, int(min(lifetime, MAX_SIGNED_READ_LIFETIME).total_seconds()))
        params: dict[str, Any] = {
            "Bucket": self._bucket,
            "Key": key,
            "UploadId": storage_upload_id,
            "PartNumber": part_number,
            # Signed: S3 refuses a body of any other length, so no part can park more than was planned.
            "ContentLength": size,
        }
        headers: dict[str, str] = {}
        if checksum_sha256 is not None:
            # Signed as a header: the PUT must carry it, and S3 refuses bytes whose SHA-256 differs (BadDigest).
            params["ChecksumSHA256"] = checksum_sha256
            headers[_CHECKSUM_HEADER] = checksum_sha256
        url = self.client.generate_presigned_url("upload_part", Params=params, ExpiresIn=seconds)
        return PartUpload(
            part_number=part_number,
            url=url,
            expires_at=datetime.now(UTC) + timedelta(seconds=seconds),
            headers=headers,
        )

    def parts(self, key: str, storage_upload_id: str) -> list[StoredPart] | None:
        stored: list[StoredPart] = []
        paginator = self.client.get_paginator("list_parts")
        try:
            for page in paginator.paginate(Bucket=self._bucket, Key=key, UploadId=storage_upload_id):
                stored.extend(
                    StoredPart(
                        part_number=part["PartNumber"],
                        size=part["Size"],
                        etag=part["ETag"].strip('"'),
                        checksum_sha256=part.get("ChecksumSHA256"),
                    )
                    for part in page.get("Parts", [])
                )
        except ClientError as error:
            if error_code(error) in _NO_SUCH_UPLOAD:
                return None
            raise
        return sorted(stored, key=lambda part: part.part_number)

    def complete(self, key: str, storage_upload_id: str, parts: Sequence[StoredPart]) -> str | None:
        listed: list[CompletedPartTypeDef] = []
        for part in parts:
            entry: CompletedPartTypeDef = {"PartNumber": part.part_number, "ETag": f'"{part.etag}"'}
            if part.checksum_sha256:
                entry["ChecksumSHA256"] = part.checksum_sha256
            listed.append(entry)
        try:
            response = self.client.complete_multipart_upload(
                Bucket=self._bucket, Key=key, UploadId=storage_upload_id, MultipartUpload={"Parts": listed}
            )
        except ClientError as error:
            if error_code(error) in _NO_SUCH_UPLOAD:
                raise UploadGone(storage_upload_id) from error
            if error_code(error) in _PART_REFUSALS:
                raise ValueError(str(error.response.get("Error", {}).get("Message") or error_code(error))) from error
            raise
        version_id: str | None = response.get("VersionId")
        return version_id

    def abort(self, key: str, storage_upload_id: str) -> None:
        try:
            self.client.abort_multipart_upload(Bucket=self._bucket, Key=key, UploadId=storage_upload_id)
        except ClientError as error:
            if error_code(error) not in _NO_SUCH_UPLOAD:
                raise

    def stale_uploads(self, prefix: str, *, begun_before: datetime) -> Iterator[tuple[str, str]]:
        paginator = self.client.get_paginator("list_multipart_uploads")
        for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix):
            for upload in page.get("Uploads", []):
                if upload["Initiated"] < begun_before:
                    yield upload["Key"], upload["UploadId"]
