"""The file lifecycle as callers see it: upload tickets, listings, reads and deletion.

Entitlement is checked here, through the AuthorizationPolicy, before anything is revealed: an
unentitled caller gets NotFound, exactly as for an id that does not exist.
"""

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice
from typing import Any, overload
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict

from shared.domain.auth import Principal
from shared.domain.errors import (
    Conflict,
    InvalidRequest,
    NotFound,
    NotReady,
    UnsupportedMediaType,
)
from shared.domain.files import (
    FilePage,
    FileRecord,
    FileVersionRecord,
    NewVersion,
    PresignedUpload,
    SameBytes,
    SignedRead,
    VersionState,
    declared_sha256,
)
from shared.domain.languages import UnknownLanguage, language_code
from shared.domain.metadata import MetadataError, validated_metadata
from shared.domain.metadata_filter import FilterError, MetadataFilter, facet_keys
from shared.domain.page_images import parse_page_image_key
from shared.domain.search import SearchFilters
from shared.domain.text_reads import (
    ENCODING_PROBE_BYTES,
    TEXT_READ_MEDIA_TYPES,
    TextSlice,
    clamp_read,
    decode_slice,
    detect_encoding,
)
from shared.domain.uploads import (
    DERIVED_PREFIX,
    MEDIA_KINDS,
    accepted_type,
    check_declared_size,
    clean_filename,
    file_prefix,
    parse_storage_key,
    storage_key,
)
from shared.observability import logger
from shared.ports import (
    MAX_SIGNED_READ_LIFETIME,
    AuthorizationPolicy,
    FileCatalog,
    FileContentStore,
    MalwareScanning,
)
from shared.services.limits import SpendLimits
from shared.services.upload_sessions import SessionTicket, UploadSessions

MAX_PAGE_SIZE = 100
EXPORTS_ARE_RENDERINGS = (
    "this file is an export (Quire rendered it from its source): change the source and export it again instead"
)
# A real cursor is about 100 characters (a timestamp and a UUID).
MAX_CURSOR_CHARS = 200


# Each costs a tag and a share of a batched removal, ten at a time: about 5 s on S3 at worst, well inside 29 s.
MAX_WITHDRAWN_IN_REQUEST = 500
# How many of a deleted file's derived objects (documents per attempt, page images) one request looks through,
# and for how many files (one listing each) a collection's deletion does so.
MAX_DERIVED_LISTED_IN_REQUEST = 2000
MAX_FILES_WITHDRAWN_IN_REQUEST = 50


@dataclass(frozen=True)
class Deletion:
    versions_deleting: int
    # Stored versions whose bytes the request did not remove (past MAX_WITHDRAWN_IN_REQUEST, or a removal that
    # failed): links already issued to them work until the sweep removes them or they expire (15 minutes).
    bytes_left_to_sweep: int


@dataclass(frozen=True)
class UploadLimits:
    # The largest single POST, and the largest document (extraction reads a document whole).
    max_bytes: int
    url_lifetime: timedelta = timedelta(minutes=15)
    # The largest recording, uploaded by parts (up to S3's 5 TiB object).
    max_media_bytes: int = 10 * 1024**3

    def largest(self, kind: str) -> int:
        """The largest file of this kind an upload (by parts, past the single POST) may declare."""
        return self.max_media_bytes if kind in MEDIA_KINDS else self.max_bytes

    @property
    def largest_of_all(self) -> int:
        return max(self.max_bytes, self.max_media_bytes)


@dataclass(frozen=True)
class PartsRequest:
    """How a client asks for an upload by parts: `multipart` for a file the single POST would take (resumable),
    `part_size` (whole MiB, at least 5) and SHA-256 `checksums` on every part."""

    multipart: bool = False
    part_size: int | None = None
    checksums: bool = False

    @property
    def wanted(self) -> bool:
        """Parts asked for: by `multipart`, or by choosing their size or checksums."""
        return self.multipart or self.part_size is not None or self.checksums


class UploadTicket(BaseModel):
    model_config = ConfigDict(frozen=True)

    file_id: UUID
    version_id: UUID
    upload: PresignedUpload
    duplicate_of: SameBytes | None = None  # the declared SHA-256 is an earlier stored version's in the collection


class ProxiedContent(BaseModel):
    """The bytes themselves, for a store that cannot sign a URL."""

    model_config = ConfigDict(frozen=True)

    content: bytes
    filename: str
    media_type: str


def encode_cursor(record: FileRecord) -> str:
    raw = json.dumps([record.created_at.isoformat(), str(record.file_id)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    if len(cursor) > MAX_CURSOR_CHARS:
        raise InvalidRequest("cursor is not one this API returned")
    try:
        created_at, file_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(created_at, str) or not isinstance(file_id, str):
            raise TypeError("cursor fields are not strings")
        return datetime.fromisoformat(created_at), UUID(file_id)
    except (ValueError, TypeError, AttributeError, RecursionError, binascii.Error) as error:
        raise InvalidRequest("cursor is not one this API returned") from error


class FileService:
    def __init__(
        self,
        catalog: FileCatalog,
        content: FileContentStore,
        policy: AuthorizationPolicy,
        limits: UploadLimits,
        new_id: Callable[[], UUID] = uuid4,
        *,
        spend: SpendLimits | None = None,
        scanning: MalwareScanning | None = None,
        sessions: UploadSessions | None = None,
    ) -> None:
        self._sessions = sessions
        self._catalog = catalog
        self._content = content
        self._policy = policy
        self._limits = limits
        self._new_id = new_id
        self._spend = spend
        self._scanning = scanning

    @overload
    def start_upload(
        self,
        principal: Principal,
        *,
        collection_id: str,
        filename: str,
        media_type: str,
        byte_size: int,
        metadata: dict[str, Any] | None = None,
        language: str | None = None,
        sha256: str | None = None,
        by_parts: None = None,
    ) -> UploadTicket: ...
    @overload
    def start_upload(
        self,
        principal: Principal,
        *,
        collection_id: str,
        filename: str,
        media_type: str,
        byte_size: int,
        metadata: dict[str, Any] | None = None,
        language: str | None = None,
        sha256: str | None = None,
        by_parts: PartsRequest,
    ) -> UploadTicket | SessionTicket: ...
    def start_upload(
        self,
        principal: Principal,
        *,
        collection_id: str,
        filename: str,
        media_type: str,
        byte_size: int,
        metadata: dict[str, Any] | None = None,
        language: str | None = None,
        sha256: str | None = None,
        by_parts: PartsRequest | None = None,
    ) -> UploadTicket | SessionTicket:
        self._policy.ensure_can_write(principal, collection_id)
        return self._ticket(
            principal,
            self._new_id(),
            collection_id=collection_id,
            filename=filename,
            media_type=media_type,
            byte_size=byte_size,
            new_file=True,
            metadata=metadata,
            language=language,
            sha256=sha256,
            by_parts=by_parts,
        )

    @overload
    def start_new_version(
        self,
        principal: Principal,
        file_id: UUID,
        *,
        filename: str,
        media_type: str,
        byte_size: int,
        metadata: dict[str, Any] | None = None,
        language: str | None = None,
        sha256: str | None = None,
        by_parts: None = None,
    ) -> UploadTicket: ...
    @overload
    def start_new_version(
        self,
        principal: Principal,
        file_id: UUID,
        *,
        filename: str,
        media_type: str,
        byte_size: int,
        metadata: dict[str, Any] | None = None,
        language: str | None = None,
        sha256: str | None = None,
        by_parts: PartsRequest,
    ) -> UploadTicket | SessionTicket: ...
    def start_new_version(
        self,
        principal: Principal,
        file_id: UUID,
        *,
        filename: str,
        media_type: str,
        byte_size: int,
        metadata: dict[str, Any] | None = None,
        language: str | None = None,
        sha256: str | None = None,
        by_parts: PartsRequest | None = None,
    ) -> UploadTicket | SessionTicket:
        record = self.writable_file(principal, file_id)
        if record.current.export_id is not None:
            # An export's file is the rendering of its source: its bytes change only by exporting again.
            raise InvalidRequest(EXPORTS_ARE_RENDERINGS)
        return self._ticket(
            principal,
            file_id,
            collection_id=record.collection_id,
            filename=filename,
            media_type=media_type,
            byte_size=byte_size,
            new_file=False,
            metadata=metadata,
            language=language,
            sha256=sha256,
            by_parts=by_parts,
        )

    def _ticket(
        self,
        principal: Principal,
        file_id: UUID,
        *,
        collection_id: str,
        filename: str,
        media_type: str,
        byte_size: int,
        new_file: bool,
        metadata: dict[str, Any] | None,
        language: str | None,
        sha256: str | None,
        by_parts: PartsRequest | None,
    ) -> UploadTicket | SessionTicket:
        # Refused before anything is recorded or signed: size (naming the limit), then type and name, then the size
        # for that type, then metadata. Without `by_parts` (the caller offers no session) one POST is the limit.
        sessions = self._sessions if by_parts is not None else None
        check_declared_size(byte_size, self._limits.max_bytes if sessions is None else self._limits.largest_of_all)
        name = clean_filename(filename)
        accepted = accepted_type(media_type, name)
        parts_wanted = by_parts is not None and by_parts.wanted
        if sessions is None and parts_wanted:
            raise InvalidRequest("multipart: upload sessions are not offered by this deployment")
        check_declared_size(byte_size, self._limits.largest(accepted.kind))
        try:
            checked = validated_metadata(metadata) if metadata is not None else None
        except MetadataError as error:
            raise InvalidRequest(str(error)) from error
        try:
            declared = language_code(language) if language is not None else None
        except UnknownLanguage as error:
            raise InvalidRequest(f"language: {error}") from error
        if self._spend is not None:
            self._spend.ensure_upload_fits(principal.tenant_id, byte_size)
            if accepted.kind in MEDIA_KINDS:
                # A recording is transcribed: with the day's minutes all spent it could only wait, so it is refused.
                refusal = self._spend.transcription_refusal(principal.tenant_id, seconds=1, then="upload it again")
                if refusal is not None:
                    raise refusal
        version_id = self._new_id()
        key = storage_key(principal.tenant_id, file_id, version_id)
        new = NewVersion(
            tenant_id=principal.tenant_id,
            file_id=file_id,
            version_id=version_id,
            collection_id=collection_id,
            filename=name,
            media_type=accepted.media_type,
            declared_byte_size=byte_size,
            storage_key=key,
            created_by=principal.subject,
            metadata=checked,
            declared_language=declared,
            declared_sha256=declared_sha256(sha256),
        )
        # Taken either way: the same bytes already in the collection are said (duplicateOf), never refused.
        same = (
            self._catalog.same_bytes(principal.tenant_id, collection_id, new.declared_sha256)
            if new.declared_sha256 is not None
            else None
        )
        if sessions is not None and (parts_wanted or byte_size > self._limits.max_bytes):
            assert by_parts is not None
            session = sessions.open(new, new_file=new_file, part_size=by_parts.part_size, checksums=by_parts.checksums)
            return session.model_copy(update={"duplicate_of": same})
        # Metadata first: a crash after this leaves a pending row that reconciliation can see.
        self._catalog.create_version(new, new_file=new_file)
        upload = self._content.signed_upload(
            key,
            content_type=accepted.media_type,
            max_bytes=byte_size,
            lifetime=self._limits.url_lifetime,
            sha256=new.declared_sha256,
        )
        return UploadTicket(file_id=file_id, version_id=version_id, upload=upload, duplicate_of=same)

    def get_file(self, principal: Principal, file_id: UUID) -> FileRecord:
        record = self._catalog.get_file(principal.tenant_id, file_id)
        if record is None:
            raise NotFound("not found")
        self._policy.ensure_can_read(principal, record.collection_id)
        return record

    def writable_file(self, principal: Principal, file_id: UUID) -> FileRecord:
        """The file, if the caller may change it: 404 where it cannot see it, 403 where it only reads it."""
        record = self.get_file(principal, file_id)
        self._policy.ensure_can_write(principal, record.collection_id)
        return record

    def list_files(
        self,
        principal: Principal,
        *,
        collection_id: str | None,
        limit: int,
        cursor: str | None,
        where: MetadataFilter | None = None,
    ) -> FilePage:
        if not 1 <= limit <= MAX_PAGE_SIZE:
            raise InvalidRequest(f"limit must be between 1 and {MAX_PAGE_SIZE}")
        records, more = self._catalog.list_files(
            principal.tenant_id,
            self._policy.readable_collections(principal),
            collection_id=collection_id,
            limit=limit,
            after=decode_cursor(cursor) if cursor else None,
            where=where,
        )
        return FilePage(files=tuple(records), next_cursor=encode_cursor(records[-1]) if more and records else None)

    def facets(
        self,
        principal: Principal,
        keys: Sequence[object],
        *,
        collections: frozenset[str] | None = None,
        where: MetadataFilter | None = None,
        filters: SearchFilters | None = None,
    ) -> dict[str, list[tuple[Any, int]]]:
        """Each key's most frequent values over the files the caller can read in `collections` (by default all it
        reads) that the filters keep: what a product builds its filter controls from. A key that is not a facet
        is a 400 naming it; a count never includes a file the caller cannot read."""
        try:
            wanted = facet_keys(keys)
        except FilterError as error:
            raise InvalidRequest(str(error)) from error
        readable = self._policy.readable_collections(principal)
        return self._catalog.facets(
            principal.tenant_id,
            readable if collections is None else readable & collections,
            wanted,
            where=where,
            filters=filters,
        )

    def read(
        self, principal: Principal, file_id: UUID, *, version_id: UUID | None, lifetime: timedelta
    ) -> SignedRead | ProxiedContent:
        version = self._readable_version(self.get_file(principal, file_id), version_id)
        self._ensure_scanned(version)
        signed = self._content.signed_read(
            version.storage_key,
            version_id=version.storage_version_id,
            filename=version.filename,
            lifetime=min(lifetime, MAX_SIGNED_READ_LIFETIME),
        )
        if signed is not None:
            return signed
        content = self._content.get(
            version.storage_key, version_id=version.storage_version_id, max_bytes=self._limits.max_bytes
        )
        return ProxiedContent(content=content, filename=version.filename, media_type=version.media_type)

    def read_text(
        self, principal: Principal, file_id: UUID, *, version_id: UUID | None, offset: int, limit: int
    ) -> tuple[FileVersionRecord, TextSlice]:
        """At most MAX_TEXT_READ_BYTES of a text file's own bytes from `offset`, through the same entitlement and
        malware gate as a download; any other type is refused naming its extracted document."""
        version = self._readable_version(self.get_file(principal, file_id), version_id)
        if version.media_type not in TEXT_READ_MEDIA_TYPES:
            raise UnsupportedMediaType(
                f"{version.media_type} is not read as text here (only {', '.join(sorted(TEXT_READ_MEDIA_TYPES))}):"
                " read its extracted document instead"
            )
        self._ensure_scanned(version)
        total = version.byte_size or 0
        try:
            start, length = clamp_read(offset, limit, total)
        except ValueError as error:
            raise InvalidRequest(str(error)) from error

        def fetch(begin: int, size: int) -> bytes:
            if not size:
                return b""
            return self._content.read_range(
                version.storage_key, version_id=version.storage_version_id, start=begin, length=size
            )

        probe = min(ENCODING_PROBE_BYTES, total)
        encoding = detect_encoding(fetch(0, probe), whole_file=probe == total)
        try:
            return version, decode_slice(
                fetch(start, length), offset=offset, limit=limit, total_bytes=total, encoding=encoding
            )
        except ValueError as error:
            raise InvalidRequest(str(error)) from error

    def cited_version(self, principal: Principal, file_id: UUID, version_id: UUID | None) -> FileVersionRecord:
        """The stored version (the newest when `version_id` is None) whose bytes `read` would serve, through the
        same entitlement and malware gate, for what a citation shows of it (a page image). A version deleted
        since, or the whole file, raises VersionDeleted to a caller that may read the collection it was in."""
        version = self._readable_version(self._file_even_if_deleted(principal, file_id), version_id)
        self._ensure_scanned(version)
        return version

    def _file_even_if_deleted(self, principal: Principal, file_id: UUID) -> FileRecord:
        """As `get_file`, but a file whose versions are all deleted is found too (entitlement checked the same
        way, on the collection it was in), so that its reader can be told it was deleted."""
        record = self._catalog.get_file(principal.tenant_id, file_id, include_gone=True)
        if record is None:
            raise NotFound("not found")
        self._policy.ensure_can_read(principal, record.collection_id)
        return record

    def _ensure_scanned(self, version: FileVersionRecord) -> None:
        if self._scanning is not None and self._scanning.gates_processing and not version.found_clean:
            # With a scanner on, no one downloads bytes it has not found clean (nor any it refused: rejected).
            raise NotReady("this version is awaiting its malware scan: its bytes are served once they are found clean")

    @staticmethod
    def _readable_version(record: FileRecord, version_id: UUID | None) -> FileVersionRecord:
        version = record.version(version_id)
        if version.state is not VersionState.STORED:
            raise NotReady(f"this version is {version.state.value}, not stored: there are no bytes to read")
        return version

    def document_version(
        self, principal: Principal, file_id: UUID, version_id: UUID | None = None
    ) -> tuple[FileRecord, FileVersionRecord]:
        """The newest stored version, or the version `version_id` (an older one a citation names), and its file,
        entitlement checked; the caller reads its document. A named version deleted since raises VersionDeleted
        (naming the collection the caller was entitled in)."""
        if version_id is None:
            record = self.get_file(principal, file_id)
            version = record.current
        else:
            record = self._file_even_if_deleted(principal, file_id)
            version = record.version(version_id)
        # Whether it is stored, and has a document, is the reader's to say (after the caller noted the file).
        return record, version

    def delete_collection_files(self, principal: Principal, collection_id: str) -> Deletion:
        """Every file of the collection, a pending upload included, leaves at once; returns versions moved."""
        self._policy.ensure_can_administer(principal, collection_id)
        moved = self._catalog.begin_delete_collection(principal.tenant_id, collection_id)
        return self._withdraw(principal.tenant_id, moved, collection_id=collection_id)

    def delete_file(self, principal: Principal, file_id: UUID) -> Deletion:
        self.writable_file(principal, file_id)
        moved = self._catalog.begin_delete_file(principal.tenant_id, file_id)
        if self._sessions is not None:
            try:
                self._sessions.end_with_file(principal.tenant_id, file_id)
            except Exception:
                # Recorded already: a session of a deleted file ends when next used, its parts by the lifecycle rule.
                logger.exception("the deleted file's upload sessions could not be aborted in the request")
        return self._withdraw(principal.tenant_id, moved, file_id=file_id)

    def _withdraw_page_images(self, tenant_id: str, file_ids: list[UUID]) -> None:
        """A drawing of a page is that page's content: a link to one issued before the deletion stops working
        as the original's does. One listing of each file's derived objects, bounded (files, objects listed and
        removed); the sweep removes the rest, within a link's 15 minutes."""
        drawings: list[tuple[str, str | None]] = []
        try:
            for file_id in file_ids[:MAX_FILES_WITHDRAWN_IN_REQUEST]:
                prefix = f"{DERIVED_PREFIX}{file_prefix(tenant_id, file_id)}"
                listed = islice(self._content.object_versions(prefix), MAX_DERIVED_LISTED_IN_REQUEST)
                drawings.extend(
                    (stored.key, stored.version_id) for stored in listed if parse_page_image_key(stored.key)
                )
                if len(drawings) >= MAX_WITHDRAWN_IN_REQUEST:
                    break
            self._content.withdraw(drawings[:MAX_WITHDRAWN_IN_REQUEST])
        except Exception:
            logger.exception("the deleted files' page images could not be removed in the request; the sweep will")

    def move_file(self, principal: Principal, file_id: UUID, collection_id: str) -> FileRecord:
        """The file, every version and every chunk, into `collection_id`, for an admin of both collections: once
        this returns, readers of the old collection no longer find it anywhere, and readers of the new one do.
        Moving it to the collection it is in changes nothing and answers as a move would (a retry is safe)."""
        record = self.get_file(principal, file_id)
        try:
            self._policy.ensure_can_read(principal, collection_id)
        except NotFound as error:
            raise NotFound("not found", field="collectionId") from error
        self._policy.ensure_can_administer(principal, record.collection_id)
        self._policy.ensure_can_administer(principal, collection_id)
        if any(version.export_id is not None for version in record.versions):
            # An export's file is found through its export, which stays in the collection it was made in.
            raise InvalidRequest(
                "this file is an export: it stays in the collection of the export that rendered it; download it"
                f" and upload it to {collection_id!r} instead"
            )
        if not self._catalog.move_file(
            principal.tenant_id, file_id, from_collection=record.collection_id, to_collection=collection_id
        ):
            raise Conflict("the file was moved or deleted while this request ran: read it again, then retry")
        moved = self._catalog.get_file(principal.tenant_id, file_id)
        if moved is None:  # deleted the moment after it moved
            raise NotFound("not found")
        return moved

    def _withdraw(
        self, tenant_id: str, moved: int, *, file_id: UUID | None = None, collection_id: str | None = None
    ) -> Deletion:
        """The deletion is recorded (the rows are `deleting`, the sweep finishes whatever this leaves): now end
        access to the bytes links may point at, up to a bound that keeps the request well inside the API's 29 s."""
        versions, with_bytes = self._catalog.deleting_versions_with_bytes(
            tenant_id, file_id=file_id, collection_id=collection_id, limit=MAX_WITHDRAWN_IN_REQUEST
        )
        try:
            withdrawn = self._content.withdraw([(v.storage_key, v.storage_version_id) for v in versions])
        except Exception:
            # Recorded already, so not an error to the caller: the sweep removes them, and the answer says so.
            logger.exception("the deleted bytes could not be removed in the request; the sweep will")
            withdrawn = 0
        files = {parts.file_id for v in versions if (parts := parse_storage_key(v.storage_key)) is not None}
        self._withdraw_page_images(tenant_id, [file_id] if file_id is not None else sorted(files))
        return Deletion(versions_deleting=moved, bytes_left_to_sweep=with_bytes - withdrawn)
