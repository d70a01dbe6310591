"""Upload sessions: S3's multipart upload behind a large file, and the session rows that make it Quire's.

The docstrings are the contracts adapters keep (docs/architecture.md, "Ports and their adapters").
"""

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

from shared.domain.files import NewVersion
from shared.domain.upload_sessions import NewUploadSession, PartUpload, SessionState, StoredPart, UploadSession


class MultipartStore(Protocol):
    """S3 multipart uploads of originals (moto's S3 server locally, whose multipart is Quire's own on disk:
    shared/local/s3_multipart.py). `storage_upload_id` is S3's id; it never reaches a client."""

    def begin(self, key: str, *, content_type: str, checksums: bool) -> str:
        """Begin a multipart upload of `key` (SHA-256 checksums on every part when `checksums`); S3's upload id."""
        ...

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
        """A presigned UploadPart URL for an HTTP PUT of exactly `size` bytes (the length is signed), valid for
        `lifetime` (at most 15 minutes); with `checksum_sha256` (base64) it is signed with the checksum, which S3
        then requires the bytes to match."""
        ...

    def parts(self, key: str, storage_upload_id: str) -> list[StoredPart] | None:
        """Every part S3 holds (all pages of ListParts, in part order), or None when S3 knows no such upload."""
        ...

    def complete(self, key: str, storage_upload_id: str, parts: Sequence[StoredPart]) -> str | None:
        """Make the object of `parts` (in order); the new object version's id. Raises ValueError with S3's
        reason when S3 refuses the parts, UploadGone when S3 knows the upload no more."""
        ...

    def abort(self, key: str, storage_upload_id: str) -> None:
        """Abort the upload and free its parts; an upload S3 no longer knows is not an error."""
        ...

    def stale_uploads(self, prefix: str, *, begun_before: datetime) -> Iterator[tuple[str, str]]:
        """(key, storage upload id) of the uploads under `prefix` begun before `begun_before` and never ended (on
        AWS the bucket's lifecycle rule aborts them after a day; locally reconciliation does, through this)."""
        ...


class UploadSessionStore(Protocol):
    """The session rows (PostgreSQL, row-level security by tenant)."""

    def open_session(self, new: NewVersion, session: NewUploadSession, *, new_file: bool) -> None:
        """Record the pending version (as FileCatalog.create_version does, with its rules) and its session, in one
        transaction."""
        ...

    def get_session(self, tenant_id: str, upload_id: UUID) -> UploadSession | None: ...

    def session_of_version(self, tenant_id: str, version_id: UUID) -> UploadSession | None: ...

    def move_session(
        self, tenant_id: str, upload_id: UUID, to: SessionState, *, expected: Sequence[SessionState], at: datetime
    ) -> bool:
        """The session becomes `to` if it is in one of `expected` states (compare-and-set; ended at `at` when `to`
        ends it); False when it was not."""
        ...

    def open_sessions_of_file(self, tenant_id: str, file_id: UUID) -> list[UploadSession]:
        """The file's open sessions (a new version may be uploading while an earlier one is)."""
        ...

    def open_sessions_expired(
        self, tenant_id: str, *, now: datetime, completing_before: datetime, limit: int
    ) -> list[UploadSession]:
        """Open sessions past their `expires_at`, and sessions left completing since before `completing_before`
        (a completion that crashed), oldest first."""
        ...
