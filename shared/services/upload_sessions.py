"""Upload sessions: a large file (or any file, on request) uploaded by parts through S3 multipart, resumable from
what S3 holds, completed only when the parts make exactly the file declared (docs/files.md, "Upload sessions").

A session is opened by FileService (the same rules as a single POST decide name, type, size and metadata); from
then on it belongs to its file's tenant and collection: another tenant's id, or a collection the caller cannot
read, is the 404 of a random id. The completed object is announced by S3 like a POST's, so sniffing, scanning and
processing start from it as for any upload.
"""

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict

from shared.domain.auth import Principal
from shared.domain.errors import Conflict, InvalidRequest, NotFound
from shared.domain.files import NewVersion, SameBytes
from shared.domain.upload_sessions import (
    DEFAULT_PART_BYTES,
    SESSION_LIFETIME,
    NewUploadSession,
    PartUpload,
    SessionRefused,
    SessionState,
    StoredPart,
    UploadGone,
    UploadSession,
    completed_parts,
    part_plan,
    requested_parts,
)
from shared.domain.uploads import tenant_files_prefix
from shared.observability import logger
from shared.ports import AuthorizationPolicy, FileCatalog, FileContentStore, MultipartStore, UploadSessionStore

ABORTED = "the upload session was aborted before it completed; nothing was stored"
EXPIRED = "the upload session ended a day after it began with parts missing; upload the file again"
GONE = "storage no longer held the upload's parts (it was aborted); upload the file again"
# How long past its day a session may stay `completing` before reconciliation takes it for a crashed completion.
COMPLETION_GRACE = timedelta(hours=1)


class SessionTicket(BaseModel):
    model_config = ConfigDict(frozen=True)

    file_id: UUID
    version_id: UUID
    upload_id: UUID
    part_size: int
    part_count: int
    checksums: bool
    expires_at: datetime
    duplicate_of: SameBytes | None = None  # the declared SHA-256 is an earlier stored version's in the collection


class SessionStatus(BaseModel):
    """A session and, while it is open, the parts S3 holds (what a client resumes from)."""

    model_config = ConfigDict(frozen=True)

    session: UploadSession
    parts: list[StoredPart]


class UploadSessions:
    def __init__(
        self,
        sessions: UploadSessionStore,
        multipart: MultipartStore,
        catalog: FileCatalog,
        content: FileContentStore,
        policy: AuthorizationPolicy,
        *,
        part_url_lifetime: timedelta = timedelta(minutes=15),
        abort_stale_uploads: bool = False,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        new_id: Callable[[], UUID] = uuid4,
    ) -> None:
        self._sessions = sessions
        self._multipart = multipart
        self._catalog = catalog
        self._content = content
        self._policy = policy
        self._part_url_lifetime = part_url_lifetime
        # Locally only: on AWS the bucket's lifecycle rule aborts them (and the sweep needs no listing grant).
        self._abort_stale_uploads = abort_stale_uploads
        self._clock = clock
        self._new_id = new_id

    def open(self, new: NewVersion, *, new_file: bool, part_size: int | None, checksums: bool) -> SessionTicket:
        """Begin S3's multipart upload, then record the pending version and its session in one transaction (a
        crash between leaves an upload no row names, which the lifecycle rule, or locally reconciliation, aborts)."""
        try:
            plan = part_plan(new.declared_byte_size, preferred_part_size=part_size or DEFAULT_PART_BYTES)
        except SessionRefused as refused:
            raise InvalidRequest(str(refused)) from refused
        storage_upload_id = self._multipart.begin(new.storage_key, content_type=new.media_type, checksums=checksums)
        session = NewUploadSession(
            upload_id=self._new_id(),
            storage_upload_id=storage_upload_id,
            byte_size=plan.byte_size,
            part_size=plan.part_size,
            part_count=plan.part_count,
            checksums=checksums,
            expires_at=self._clock() + SESSION_LIFETIME,
        )
        try:
            self._sessions.open_session(new, session, new_file=new_file)
        except BaseException:
            self._multipart.abort(new.storage_key, storage_upload_id)
            raise
        return SessionTicket(
            file_id=new.file_id,
            version_id=new.version_id,
            upload_id=session.upload_id,
            part_size=session.part_size,
            part_count=session.part_count,
            checksums=checksums,
            expires_at=session.expires_at,
        )

    def part_uploads(self, principal: Principal, upload_id: UUID, body: Mapping[str, Any]) -> list[PartUpload]:
        session = self._open_session(principal, upload_id)
        try:
            wanted = requested_parts(body, session.plan, checksums=session.checksums)
        except SessionRefused as refused:
            raise InvalidRequest(str(refused)) from refused
        # Never past the session's own end: a URL that outlives the session would upload to an aborted upload.
        lifetime = min(self._part_url_lifetime, session.expires_at - self._clock())
        return [
            self._multipart.part_upload(
                session.storage_key,
                session.storage_upload_id,
                part.part_number,
                # Signed for the part's planned size: storage refuses a larger (or smaller) body.
                size=session.plan.expected_size(part.part_number),
                lifetime=lifetime,
                checksum_sha256=part.checksum_sha256,
            )
            for part in wanted
        ]

    def status(self, principal: Principal, upload_id: UUID) -> SessionStatus:
        session = self._session(principal, upload_id)
        parts: list[StoredPart] = []
        if not session.ended:
            parts = self._multipart.parts(session.storage_key, session.storage_upload_id) or []
        return SessionStatus(session=session, parts=parts)

    def complete(self, principal: Principal, upload_id: UUID, claimed: Sequence[tuple[int, str]]) -> UploadSession:
        """S3 makes the object of the claimed parts once they are exactly the declared file. The session is
        `completing` meanwhile (abort and expiry wait for it), so a completion racing an abort or another
        completion ends in one state; completing a completed session again answers the same (a client that lost
        the first answer, or whose request outlived the API's timeout, may ask twice)."""
        session = self._session(principal, upload_id)
        if session.state is SessionState.COMPLETED:
            return session
        if session.ended:
            raise Conflict(f"this upload session is {session.state.value}: start a new upload")
        if session.state is SessionState.OPEN:
            session = self._usable(session)
            if not self._move(session, SessionState.COMPLETING, SessionState.OPEN):
                return self.complete(principal, upload_id, claimed)  # moved meanwhile: answer as it is now
        stored = self._multipart.parts(session.storage_key, session.storage_upload_id)
        if stored is None:
            return self._completed_earlier(session)
        try:
            ordered = completed_parts(session.plan, stored, claimed)
            self._multipart.complete(session.storage_key, session.storage_upload_id, ordered)
        except (SessionRefused, ValueError) as refused:
            # The client's to fix (a part missing, another ETag): the session is open again for it.
            self._move(session, SessionState.OPEN, SessionState.COMPLETING)
            raise InvalidRequest(str(refused)) from refused
        except UploadGone:
            return self._completed_earlier(session)  # another completion made it first
        self._move(session, SessionState.COMPLETED, SessionState.COMPLETING)
        return self._session(principal, upload_id)

    def _completed_earlier(self, session: UploadSession) -> UploadSession:
        """S3 knows the upload no more: a completion (this one's lost answer, or one racing it) made the object, or
        the upload was aborted (the lifecycle rule, a crash of an abort)."""
        current = self._sessions.get_session(session.tenant_id, session.upload_id) or session
        landed = self._content.head(session.storage_key)
        if landed is not None and landed.byte_size == session.byte_size:
            self._move(current, SessionState.COMPLETED, SessionState.OPEN, SessionState.COMPLETING)
            return current.model_copy(update={"state": SessionState.COMPLETED})
        if current.ended:
            raise Conflict(f"this upload session is {current.state.value}: start a new upload")
        self._end(current, SessionState.EXPIRED, GONE, SessionState.OPEN, SessionState.COMPLETING)
        raise Conflict("storage no longer holds this upload's parts (it was aborted): start a new upload")

    def abort(self, principal: Principal, upload_id: UUID) -> UploadSession:
        session = self._session(principal, upload_id)
        if session.state is SessionState.ABORTED:
            return session
        if session.state is SessionState.OPEN and self._end(session, SessionState.ABORTED, ABORTED, SessionState.OPEN):
            self._multipart.abort(session.storage_key, session.storage_upload_id)
            return self._session(principal, upload_id)
        current = self._session(principal, upload_id)
        if current.state is SessionState.ABORTED:
            return current
        raise Conflict(f"this upload session is {current.state.value}; only an open one can be aborted")

    def expire_due(self, tenant_id: str, *, now: datetime, limit: int = 100) -> int:
        """Reconciliation: sessions past their day are expired (their uploads aborted, their versions rejected); one
        left completing an hour past its day (a completion that crashed) is completed if its object landed."""
        expired = 0
        due = self._sessions.open_sessions_expired(
            tenant_id, now=now, completing_before=now - COMPLETION_GRACE, limit=limit
        )
        for session in due:
            if session.state is SessionState.COMPLETING:
                landed = self._content.head(session.storage_key)
                if landed is not None and landed.byte_size == session.byte_size:
                    self._move(session, SessionState.COMPLETED, SessionState.COMPLETING)
                    continue
            if self._end(session, SessionState.EXPIRED, EXPIRED, session.state):
                self._multipart.abort(session.storage_key, session.storage_upload_id)
                expired += 1
                logger.info("upload session expired", extra={"tenantId": tenant_id, "uploadId": str(session.upload_id)})
        return expired

    def uploading(self, tenant_id: str, version_id: UUID, now: datetime) -> bool:
        """Reconciliation: the version's bytes may still come by parts (its session is open and within its day)."""
        session = self._sessions.session_of_version(tenant_id, version_id)
        return session is not None and not session.ended and not session.expired(now)

    def sweep(self, tenant_id: str, now: datetime) -> tuple[int, int]:
        """Reconciliation, each tenant's turn: sessions past their day expired; then, locally, the tenant's multipart
        uploads begun over a day ago (and an hour, for a session recorded just after its upload began) aborted, as
        the bucket's lifecycle rule does on AWS (a crash between beginning an upload and recording its session
        leaves one no session names)."""
        expired = self.expire_due(tenant_id, now=now)
        aborted = 0
        if not self._abort_stale_uploads:
            return expired, aborted
        begun_before = now - SESSION_LIFETIME - timedelta(hours=1)
        for key, storage_upload_id in self._multipart.stale_uploads(
            tenant_files_prefix(tenant_id), begun_before=begun_before
        ):
            self._multipart.abort(key, storage_upload_id)
            aborted += 1
        return expired, aborted

    def end_with_file(self, tenant_id: str, file_id: UUID) -> None:
        """A deleted file's open sessions are aborted (its parts would otherwise wait a day for the lifecycle rule;
        a session of a file deleted with its collection ends when it is next used)."""
        for session in self._sessions.open_sessions_of_file(tenant_id, file_id):
            if self._move(session, SessionState.ABORTED, SessionState.OPEN):
                self._multipart.abort(session.storage_key, session.storage_upload_id)

    def _move(self, session: UploadSession, to: SessionState, *expected: SessionState) -> bool:
        return self._sessions.move_session(
            session.tenant_id, session.upload_id, to, expected=expected, at=self._clock()
        )

    def _end(self, session: UploadSession, state: SessionState, reason: str, *expected: SessionState) -> bool:
        """The session ended as `state` if it was in one of `expected` (compare-and-set); then, and only then, its
        pending version says why no byte will come."""
        ended = self._move(session, state, *expected)
        if ended:
            self._catalog.mark_rejected(
                session.tenant_id, session.version_id, reason=reason, byte_size=0, storage_version_id=None
            )
        return ended

    def _session(self, principal: Principal, upload_id: UUID) -> UploadSession:
        """The session, if the caller may write its file's collection: 404 where it cannot read the collection
        (as for a random id), 403 where it only reads it."""
        session = self._sessions.get_session(principal.tenant_id, upload_id)
        if session is None:
            raise NotFound("not found")
        self._policy.ensure_can_write(principal, session.collection_id)
        return session

    def _open_session(self, principal: Principal, upload_id: UUID) -> UploadSession:
        session = self._session(principal, upload_id)
        if session.state is not SessionState.OPEN:
            raise Conflict(f"this upload session is {session.state.value}: start a new upload")
        return self._usable(session)

    def _usable(self, session: UploadSession) -> UploadSession:
        """An open session, still within its day, of a version still waiting for its bytes."""
        if not session.version_pending:
            # Its file was deleted (or the version rejected): no part may come, and S3 may free the others.
            if self._move(session, SessionState.ABORTED, SessionState.OPEN):
                self._multipart.abort(session.storage_key, session.storage_upload_id)
            raise Conflict("this upload's file was deleted: start a new upload")
        if session.expired(self._clock()):
            raise Conflict("this upload session ended a day after it began: start a new upload")
        return session
