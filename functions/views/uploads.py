"""Bodies of upload sessions: part URLs, what S3 holds, completion."""

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import Field, StrictInt

from functions.views.base import ApiModel
from shared.domain.upload_sessions import (
    MAX_PART_URLS_PER_CALL,
    MAX_PARTS,
    PartUpload,
    SessionState,
    StoredPart,
)
from shared.services.upload_sessions import SessionStatus

SHA256_BASE64 = Field(
    min_length=44, max_length=44, description="The part's SHA-256, base64 (as S3's x-amz-checksum-sha256 carries it)."
)


class PartChecksum(ApiModel):
    part_number: StrictInt = Field(ge=1, le=MAX_PARTS)
    checksum_sha256: Annotated[str, SHA256_BASE64]


class PartUrlsRequest(ApiModel):
    """The parts to sign: `partNumbers`, or `parts` with each part's SHA-256 (required when the session was opened
    with `checksums`). At most 100 a request."""

    part_numbers: list[Annotated[StrictInt, Field(ge=1, le=MAX_PARTS)]] | None = Field(
        default=None, max_length=MAX_PART_URLS_PER_CALL
    )
    parts: list[PartChecksum] | None = Field(default=None, max_length=MAX_PART_URLS_PER_CALL)

    def as_body(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


class PartUrlView(ApiModel):
    part_number: int
    url: str = Field(description="HTTP PUT the part's bytes here, exactly; the answer's ETag header names the part.")
    expires_at: datetime
    headers: dict[str, str] = Field(description="Headers the PUT must carry (the signed checksum), if any.")

    @classmethod
    def of(cls, part: PartUpload) -> "PartUrlView":
        return cls(part_number=part.part_number, url=part.url, expires_at=part.expires_at, headers=dict(part.headers))


class PartUrlsView(ApiModel):
    parts: list[PartUrlView]


class StoredPartView(ApiModel):
    part_number: int
    size: int
    etag: str
    checksum_sha256: str | None = None


class UploadSessionView(ApiModel):
    """A session and, while it is open, every part S3 holds (a client resumes by uploading the others)."""

    upload_id: UUID
    file_id: UUID
    version_id: UUID
    collection_id: str
    state: SessionState
    byte_size: int
    part_size: int
    part_count: int
    checksums: bool
    created_at: datetime
    expires_at: datetime
    ended_at: datetime | None
    parts: list[StoredPartView]

    @classmethod
    def of(cls, status: SessionStatus) -> "UploadSessionView":
        session = status.session
        return cls(
            upload_id=session.upload_id,
            file_id=session.file_id,
            version_id=session.version_id,
            collection_id=session.collection_id,
            state=session.state,
            byte_size=session.byte_size,
            part_size=session.part_size,
            part_count=session.part_count,
            checksums=session.checksums,
            created_at=session.created_at,
            expires_at=session.expires_at,
            ended_at=session.ended_at,
            parts=[StoredPartView(**_part(part)) for part in status.parts],
        )


def _part(part: StoredPart) -> dict[str, Any]:
    return {
        "part_number": part.part_number,
        "size": part.size,
        "etag": part.etag,
        "checksum_sha256": part.checksum_sha256,
    }


class CompletedPart(ApiModel):
    part_number: StrictInt = Field(ge=1, le=MAX_PARTS)
    etag: str = Field(min_length=1, max_length=130, description="The ETag the part's PUT answered.")


class CompleteRequest(ApiModel):
    """Every part from 1 to `partCount`, each with the ETag its upload returned."""

    parts: list[CompletedPart] = Field(min_length=1, max_length=MAX_PARTS)
