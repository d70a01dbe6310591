"""Upload sessions, the pure rules: how a large upload is cut into parts, which parts a client may ask URLs for, and
when the parts S3 holds make the file that was declared (docs/files.md, "Upload sessions").

S3's limits (https://docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html): at most 10,000 parts, each 5 MiB to
5 GiB but the last, an object at most 5 TiB.
"""

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

MIB = 1024 * 1024
MIN_PART_BYTES = 5 * MIB
MAX_PART_BYTES = 5 * 1024 * MIB
MAX_PARTS = 10_000
MAX_OBJECT_BYTES = 5 * 1024 * 1024 * MIB
DEFAULT_PART_BYTES = 16 * MIB
# Part URLs one request may ask for (each presigned for at most 15 minutes).
MAX_PART_URLS_PER_CALL = 100
SHA256_BYTES = 32
# An open session's life, as the bucket's lifecycle rule aborts an incomplete multipart upload a day after it began.
SESSION_LIFETIME = timedelta(days=1)


class SessionState(StrEnum):
    OPEN = "open"
    # A completion is asking S3 to make the object: abort and expiry wait until it ends.
    COMPLETING = "completing"
    COMPLETED = "completed"
    ABORTED = "aborted"
    EXPIRED = "expired"


class UploadGone(Exception):
    """Storage no longer knows the multipart upload (completed by another request, or aborted)."""


class SessionRefused(ValueError):
    """A request about a session's parts that cannot be honoured; the message names the part and the rule."""


@dataclass(frozen=True)
class PartPlan:
    """How a declared size is cut: every part `part_size` bytes but the last, which holds the rest."""

    byte_size: int
    part_size: int
    part_count: int

    def expected_size(self, part_number: int) -> int:
        if not 1 <= part_number <= self.part_count:
            raise SessionRefused(f"part {part_number}: this upload has parts 1 to {self.part_count}")
        if part_number < self.part_count:
            return self.part_size
        return self.byte_size - self.part_size * (self.part_count - 1)


def part_plan(byte_size: int, *, preferred_part_size: int = DEFAULT_PART_BYTES) -> PartPlan:
    """The parts of a `byte_size` upload: `preferred_part_size` (whole MiB, at least S3's 5 MiB) unless that would
    take more than 10,000 parts, then the smallest whole-MiB size that fits."""
    if byte_size < 1:
        raise SessionRefused("byteSize: an upload has at least one byte")
    if byte_size > MAX_OBJECT_BYTES:
        raise SessionRefused(
            f"byteSize: {byte_size} bytes is past S3's largest object, {MAX_OBJECT_BYTES} bytes (5 TiB)"
        )
    size = max(MIN_PART_BYTES, -(-preferred_part_size // MIB) * MIB)
    if -(-byte_size // size) > MAX_PARTS:
        size = -(-byte_size // MAX_PARTS)
        size = -(-size // MIB) * MIB
    size = min(size, MAX_PART_BYTES)
    return PartPlan(byte_size=byte_size, part_size=size, part_count=max(1, -(-byte_size // size)))


@dataclass(frozen=True)
class RequestedPart:
    part_number: int
    checksum_sha256: str | None = None  # base64, as S3's x-amz-checksum-sha256 header carries it


def requested_parts(body: Mapping[str, Any], plan: PartPlan, *, checksums: bool) -> list[RequestedPart]:
    """The parts a `POST /v1/uploads/{uploadId}/parts` body asks URLs for: `{"partNumbers": [1, 2]}` (the issue's
    form) or `{"parts": [{"partNumber": 1, "checksumSha256": "…"}]}` (each part's SHA-256, base64, when the
    session was opened with checksums, and only then: S3 refuses a part whose bytes do not match, and a checksum of
    another algorithm than the upload's)."""
    if "parts" in body and "partNumbers" in body:
        raise SessionRefused("give `parts` or `partNumbers`, not both")
    if "partNumbers" in body:
        numbers = body["partNumbers"]
        if not isinstance(numbers, list):
            raise SessionRefused("partNumbers: a list of part numbers")
        items: list[Any] = [{"partNumber": number} for number in numbers]
    else:
        items = body.get("parts")  # type: ignore[assignment]
        if not isinstance(items, list):
            raise SessionRefused("parts: a list of {partNumber, checksumSha256}")
    if not items:
        raise SessionRefused("ask for at least one part")
    if len(items) > MAX_PART_URLS_PER_CALL:
        raise SessionRefused(f"at most {MAX_PART_URLS_PER_CALL} parts a request; ask again for the rest")
    parts: list[RequestedPart] = []
    seen: set[int] = set()
    for index, item in enumerate(items):
        number = item.get("partNumber") if isinstance(item, dict) else None
        if not isinstance(number, int) or isinstance(number, bool):
            raise SessionRefused(f"parts[{index}].partNumber: a whole number")
        plan.expected_size(number)
        if number in seen:
            raise SessionRefused(f"parts[{index}].partNumber: part {number} is asked for twice")
        seen.add(number)
        parts.append(RequestedPart(number, _checksum(item.get("checksumSha256"), f"parts[{index}]", checksums)))
    return parts


def _checksum(checksum: object, where: str, checksums: bool) -> str | None:
    """A part's SHA-256, as the session takes them: required with checksums, refused without (S3 refuses a
    checksum of an upload begun without one)."""
    if checksum is None and checksums:
        raise SessionRefused(f"{where}.checksumSha256: this upload was opened with checksums")
    if checksum is not None and not checksums:
        raise SessionRefused(
            f"{where}.checksumSha256: this upload was opened without checksums (open it with `checksums: true`)"
        )
    if checksum is not None:
        _check_sha256(checksum, f"{where}.checksumSha256")
    return checksum if isinstance(checksum, str) else None


def _check_sha256(value: object, field: str) -> None:
    try:
        decoded = base64.b64decode(value, validate=True) if isinstance(value, str) else b""
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) != SHA256_BYTES:
        raise SessionRefused(f"{field}: a SHA-256 digest in base64 (44 characters)")


@dataclass(frozen=True)
class StoredPart:
    """A part as S3 lists it."""

    part_number: int
    size: int
    etag: str
    checksum_sha256: str | None = None


def completed_parts(
    plan: PartPlan, stored: Sequence[StoredPart], claimed: Sequence[tuple[int, str]]
) -> list[StoredPart]:
    """The parts to complete the upload with, in order, when they make exactly the declared file: parts 1 to N and no
    other, each the size the plan gives it (so the sum is the declared size), and each the part the client says it
    uploaded (its ETag as S3 lists it: a part replaced meanwhile is refused). SessionRefused names the first
    problem."""
    by_number = {part.part_number: part for part in stored}
    past = sorted(number for number in by_number if number > plan.part_count)
    if past:
        raise SessionRefused(f"part {past[0]} is past the last part ({plan.part_count}) of this upload")
    missing = [number for number in range(1, plan.part_count + 1) if number not in by_number]
    if missing:
        raise SessionRefused(
            f"part {missing[0]} has not arrived ({len(missing)} of {plan.part_count} missing): upload it, then complete"
        )
    for number in range(1, plan.part_count + 1):
        expected, got = plan.expected_size(number), by_number[number].size
        if got != expected:
            raise SessionRefused(f"part {number} is {got} bytes; this upload's part {number} is {expected} bytes")
    claims = dict(claimed)
    if len(claims) != len(claimed) or set(claims) != set(range(1, plan.part_count + 1)):
        raise SessionRefused(
            f"parts: name every part from 1 to {plan.part_count} once, with the ETag its upload returned"
        )
    for number, etag in sorted(claims.items()):
        if _bare(etag) != _bare(by_number[number].etag):
            raise SessionRefused(f"part {number}: its ETag is not the one stored; upload the part again")
    return [by_number[number] for number in range(1, plan.part_count + 1)]


def _bare(etag: str) -> str:
    return etag.strip().strip('"')


class NewUploadSession(BaseModel):
    """A session about to be recorded beside its pending version: S3's multipart upload already begun."""

    model_config = ConfigDict(frozen=True)

    upload_id: UUID
    storage_upload_id: str
    byte_size: int
    part_size: int
    part_count: int
    checksums: bool
    expires_at: datetime


class UploadSession(BaseModel):
    """A session as recorded, with the file's collection as it is now (a moved file's session follows it)."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    upload_id: UUID
    file_id: UUID
    version_id: UUID
    collection_id: str
    storage_key: str
    storage_upload_id: str
    byte_size: int
    part_size: int
    part_count: int
    checksums: bool
    state: SessionState
    created_at: datetime
    expires_at: datetime
    ended_at: datetime | None = None
    # False once its version is no longer waiting for bytes (the file deleted, the version rejected).
    version_pending: bool = True

    @property
    def plan(self) -> PartPlan:
        return PartPlan(byte_size=self.byte_size, part_size=self.part_size, part_count=self.part_count)

    @property
    def ended(self) -> bool:
        return self.state not in (SessionState.OPEN, SessionState.COMPLETING)

    def expired(self, now: datetime) -> bool:
        return self.state is SessionState.EXPIRED or (self.state is SessionState.OPEN and now >= self.expires_at)


@dataclass(frozen=True)
class PartUpload:
    """Where one part goes: an HTTP PUT of exactly the part's bytes to `url`, with `headers` (the part's checksum,
    when the session has them: S3 refuses bytes that do not match it)."""

    part_number: int
    url: str
    expires_at: datetime
    headers: Mapping[str, str]
