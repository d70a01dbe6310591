"""Files, versions and their states: the vocabulary the file lifecycle and the pipeline share."""

import re
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from shared.domain.errors import DocumentNotReady, InvalidRequest, NotFound, VersionDeleted
from shared.domain.recognition import LOW_CONFIDENCE_THRESHOLD


class VersionState(StrEnum):
    """Storage lifecycle of one file version.

    pending → stored (compare-and-set after the bytes landed) or rejected (sniffing disagreed);
    stored → deleting (one statement, invisible to search at once) → deleted (after the bytes are swept).
    """

    PENDING = "pending"
    STORED = "stored"
    REJECTED = "rejected"
    DELETING = "deleting"
    DELETED = "deleted"


class ProcessingState(StrEnum):
    """Where the ingestion pipeline is with a stored version."""

    NOT_STARTED = "not_started"
    QUEUED = "queued"
    EXTRACTING = "extracting"
    # The text layer is stored; OCR (and, for an image, vision) is reading the rest.
    RECOGNIZING = "recognizing"
    EXTRACTED = "extracted"
    INDEXING = "indexing"
    INDEXED = "indexed"
    FAILED = "failed"
    # The infrastructure failed the attempt after its retries (not the document): the sweep tries again.
    INTERRUPTED = "interrupted"
    # A file Quire rendered (an export): its content is already known, so it is never extracted.
    SKIPPED = "skipped"


# The processing states in which a version's extracted document exists and may be read.
DOCUMENT_READY = frozenset({ProcessingState.EXTRACTED, ProcessingState.INDEXING, ProcessingState.INDEXED})


# The sweep retries a version automatically (a new attempt) at most this many times after it stalled or the
# infrastructure interrupted it, and this many after an extraction timed out; a rescan starts the count again.
MAX_STALLED_RETRIES = 4
MAX_TIMEOUT_RETRIES = 2


def interruption_notice(detail: str | None, retries: int) -> str:
    """What an owner is told of an interrupted attempt: which step, and what happens next. Never the
    infrastructure's own message (host names, addresses, ARNs), which stays in the logs and the sweep's report."""
    step = "a processing step"
    if detail and detail.startswith("the ") and " step failed" in detail:
        step = detail[: detail.index(" step failed")].removeprefix("the ") + " step"
    if retries < MAX_STALLED_RETRIES:
        return f"the {step} could not reach a service it depends on; it is retried automatically"
    return (
        f"the {step} could not reach a service it depends on, and its automatic retries are spent: the operator "
        "is alerted; uploading the file again starts it over"
    )


class FailureReason(StrEnum):
    """Closed set of document problems. Each exists because what the user should do differs."""

    UNSUPPORTED_TYPE = "unsupported-type"
    TOO_LARGE = "too-large"
    TOO_MANY_PAGES = "too-many-pages"
    TIMED_OUT = "timed-out"
    ENCRYPTED = "encrypted"
    NO_TEXT_LAYER = "no-text-layer"
    MALFORMED = "malformed"
    OCR_FAILED = "ocr-failed"
    NO_TEXT_FOUND = "no-text-found"
    SPEND_LIMIT = "spend-limit"
    BYTES_MISSING = "bytes-missing"
    # Recordings (issue 35): the container refused (no audio track, damaged, past the duration limit), the speech
    # engine heard nothing, failed, or there is none here.
    NOT_TRANSCRIBABLE = "not-transcribable"
    NO_SPEECH_FOUND = "no-speech-found"
    TRANSCRIPTION_FAILED = "transcription-failed"
    NO_TRANSCRIPTION = "no-transcription"

    @property
    def user_sentence(self) -> str:
        return _USER_SENTENCES[self]


_USER_SENTENCES: dict[FailureReason, str] = {
    FailureReason.UNSUPPORTED_TYPE: "This file type is not extracted; nothing to do.",
    FailureReason.TOO_LARGE: "The document is too large: split it, or upload the part that matters.",
    FailureReason.TOO_MANY_PAGES: "The document has too many pages: split it, or upload the part that matters.",
    FailureReason.TIMED_OUT: "Extraction took too long: retry, or simplify the document.",
    FailureReason.ENCRYPTED: "The document is password-protected: remove the protection and upload it again.",
    FailureReason.NO_TEXT_LAYER: "The document is a scan with no text layer: it needs OCR, not a re-export.",
    FailureReason.MALFORMED: "The document is damaged or not what its type says: re-export it and upload again.",
    FailureReason.OCR_FAILED: (
        "Text recognition could not read this document: scan it again at a higher resolution, or upload a text version."
    ),
    FailureReason.NO_TEXT_FOUND: (
        "Text recognition found no words in this document: a picture without text has nothing to search. If it"
        " does show text, scan it again at a higher resolution."
    ),
    FailureReason.SPEND_LIMIT: (
        "A daily limit of the tenant's (text recognition, or for a recording transcription; the detail names it) was"
        " spent before this file was read: scan or process it again after 00:00 UTC."
    ),
    FailureReason.BYTES_MISSING: (
        "The uploaded bytes are missing from storage (removed outside Quire), so there is nothing to read: upload"
        " the file again."
    ),
    FailureReason.NOT_TRANSCRIBABLE: (
        "The recording cannot be transcribed as it is (the detail says why: no audio track, damaged, or too long):"
        " fix it, or upload the part that matters."
    ),
    FailureReason.NO_SPEECH_FOUND: (
        "The speech engine heard no words in this recording: a recording of silence or music has nothing to search."
    ),
    FailureReason.TRANSCRIPTION_FAILED: (
        "Speech recognition could not transcribe this recording: retry, or upload it in another format."
    ),
    FailureReason.NO_TRANSCRIPTION: (
        "This recording needs a speech engine, and none is available here: the detail says why."
    ),
}


class OcrState(StrEnum):
    """What happened to the pages that had no text layer (nothing, when every page had one)."""

    RECOGNIZED = "recognized"
    UNAVAILABLE = "unavailable"
    FAILED = "failed"


class VisionState(StrEnum):
    """Whether an image was described by a vision model (nothing, for a document that is not an image)."""

    DESCRIBED = "described"
    UNAVAILABLE = "unavailable"
    FAILED = "failed"


class Recognition(BaseModel):
    """What OCR and vision did for a version: kept on its record so a listing can flag a low-confidence
    extraction, or a missing description, without fetching the document."""

    model_config = ConfigDict(frozen=True)

    ocr_state: OcrState | None = None
    ocr_engine: str | None = None
    ocr_detail: str | None = None
    recognized_pages: tuple[int, ...] = ()
    # None when nothing was recognised: a text layer is read, not guessed.
    ocr_confidence: float | None = None
    vision_state: VisionState | None = None
    vision_model: str | None = None
    vision_detail: str | None = None
    # A recording: what the speech engine did (RECOGNIZED: it transcribed), its confidence and the language it heard.
    transcription_state: OcrState | None = None
    transcription_engine: str | None = None
    transcription_detail: str | None = None
    transcription_confidence: float | None = None
    transcription_language: str | None = None
    duration_seconds: float | None = None

    @property
    def low_confidence(self) -> bool:
        return any(
            confidence is not None and confidence < LOW_CONFIDENCE_THRESHOLD
            for confidence in (self.ocr_confidence, self.transcription_confidence)
        )


class StoredObject(BaseModel):
    """What the content store reports about bytes it holds. Keys stay inside the platform."""

    model_config = ConfigDict(frozen=True)

    key: str
    version_id: str | None
    byte_size: int
    content_type: str | None = None


class SignedRead(BaseModel):
    """A short-lived URL a client may GET; lifetime is clamped by the service, never by the caller."""

    model_config = ConfigDict(frozen=True)

    url: str
    expires_at: datetime


class PresignedUpload(BaseModel):
    """A browser POST target: the URL and the form fields that carry the signed policy."""

    model_config = ConfigDict(frozen=True)

    url: str
    fields: dict[str, str]
    expires_at: datetime


# A SHA-256 as hex: what an upload may declare of its bytes, and what the extract step records of them.
SHA256_HEX = r"^[0-9a-f]{64}$"


def declared_sha256(value: str | None) -> str | None:
    """An upload's declared SHA-256 as stored (lower-case hex), or a 400 saying what it must be."""
    if value is None:
        return None
    if re.fullmatch(SHA256_HEX, value.lower()) is None:
        raise InvalidRequest("sha256: must be the SHA-256 of the file's bytes as 64 hexadecimal digits")
    return value.lower()


class SameBytes(BaseModel):
    """An earlier version in the same collection whose bytes have the same SHA-256 (`duplicateOf`): an upload of
    bytes already there is taken, and says so."""

    model_config = ConfigDict(frozen=True)

    file_id: UUID
    version_id: UUID
    filename: str


class NewVersion(BaseModel):
    """A version about to be uploaded: everything the metadata row needs before any byte exists."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    file_id: UUID
    version_id: UUID
    collection_id: str
    filename: str
    media_type: str
    declared_byte_size: int
    storage_key: str
    created_by: str
    # Set when Quire rendered the bytes (an export): processing is skipped from the start.
    export_id: UUID | None = None
    # The product's metadata the upload sets (validated; shared/domain/metadata.py): a new file's whole metadata,
    # or, for a new version, the keys it sets on what the file has. None keeps the file's.
    metadata: dict[str, Any] | None = None
    # The language the uploader declares its text is in (ISO 639-1), which the indexer takes instead of detecting.
    declared_language: str | None = None
    # The SHA-256 the uploader declares of the bytes (S3 checks it against them on AWS), lower-case hex.
    declared_sha256: str | None = Field(default=None, pattern=SHA256_HEX)


class MalwareScan(StrEnum):
    """A malware scanner's verdict on one stored object (GuardDuty Malware Protection for S3's
    GuardDutyMalwareScanStatus values). Only NO_THREATS_FOUND lets the version be processed."""

    NO_THREATS_FOUND = "NO_THREATS_FOUND"
    THREATS_FOUND = "THREATS_FOUND"
    UNSUPPORTED = "UNSUPPORTED"
    ACCESS_DENIED = "ACCESS_DENIED"
    FAILED = "FAILED"

    def rejection(self) -> str | None:
        """The reason a version with this verdict is rejected, or None when it may be processed. A scan that
        could not finish rejects too: with scanning on, only a file found clean is ever processed."""
        if self is MalwareScan.NO_THREATS_FOUND:
            return None
        if self is MalwareScan.THREATS_FOUND:
            return "malware: the malware scan found a threat in this file, so it was removed and is not processed"
        return (
            f"malware: the malware scan could not check this file ({self.value}), so it is not processed:"
            " upload it again, or as a format the scanner reads (not encrypted, not password-protected)"
        )


class FileVersionRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    version_id: UUID
    state: VersionState
    processing_state: ProcessingState
    filename: str
    media_type: str
    declared_byte_size: int
    byte_size: int | None
    storage_key: str
    storage_version_id: str | None
    rejection_reason: str | None
    failure_reason: FailureReason | None
    failure_detail: str | None
    created_at: datetime
    updated_at: datetime
    stored_at: datetime | None
    processing_requested_at: datetime | None
    processing_attempt: int = 0
    processing_retries: int = 0
    page_count: int | None = None
    block_count: int | None = None
    pages_without_text: tuple[int, ...] = ()
    extraction_warnings: tuple[str, ...] = ()
    extraction_truncated: bool = False
    document_key: str | None = None
    document_version_id: str | None = None  # the storage version of that document (None: not known)
    chunk_count: int = 0
    embedded_chunk_count: int = 0
    embedding_model: str | None = None
    embedding_gap: str | None = None
    context_gap: str | None = None
    context_model: str | None = None
    indexed_at: datetime | None = None
    ocr_state: OcrState | None = None
    ocr_engine: str | None = None
    ocr_detail: str | None = None
    recognized_pages: tuple[int, ...] = ()
    ocr_confidence: float | None = None
    vision_state: VisionState | None = None
    vision_model: str | None = None
    vision_detail: str | None = None
    transcription_state: OcrState | None = None
    transcription_engine: str | None = None
    transcription_detail: str | None = None
    transcription_confidence: float | None = None
    transcription_language: str | None = None
    duration_seconds: float | None = None
    export_id: UUID | None = None  # the export that rendered these bytes
    # None: not scanned (no scanner in this deployment, or its verdict has not arrived yet).
    malware_scan: MalwareScan | None = None
    # The storage object version that verdict was for (None: the store keeps no versions).
    malware_scan_object: str | None = None
    # The language its uploader declared (ISO 639-1): every chunk's, none detected.
    declared_language: str | None = None
    # The languages its chunks are in as indexed (declared or detected), the most chunks first.
    languages: tuple[str, ...] = ()
    # The bytes' SHA-256 as the extract step read them (None: not read yet, a recording, or stored before it was
    # kept), and as the upload declared it.
    content_sha256: str | None = None
    declared_sha256: str | None = None
    # The earliest other stored version in the file's collection with the same bytes (content_sha256), if any.
    duplicate_of: SameBytes | None = None

    @property
    def found_clean(self) -> bool:
        """The scanner found these very bytes clean: the verdict is NO_THREATS_FOUND and for the stored object
        (a verdict for another object posted under the key says nothing of this one)."""
        return self.malware_scan is MalwareScan.NO_THREATS_FOUND and (
            self.malware_scan_object is None
            or self.storage_version_id is None
            or self.malware_scan_object == self.storage_version_id
        )

    @property
    def recognition(self) -> Recognition:
        return Recognition.model_validate(self.model_dump(include=set(Recognition.model_fields)))


class FileRecord(BaseModel):
    """A file with its versions, newest first. Only files with a live version exist for callers."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    file_id: UUID
    collection_id: str
    filename: str
    created_at: datetime
    versions: tuple[FileVersionRecord, ...]
    # The product's own metadata (shared/domain/metadata.py) and how many times it has changed.
    metadata: dict[str, Any] = Field(default_factory=dict)
    metadata_revision: int = 0

    @property
    def current(self) -> FileVersionRecord:
        """The newest stored version, else the newest live one."""
        live = [v for v in self.versions if v.state in LIVE_STATES]
        stored = [v for v in live if v.state is VersionState.STORED]
        return (stored or live or list(self.versions))[0]

    def version(self, version_id: UUID | None) -> FileVersionRecord:
        """The version named, or the current one: the one picker of a version. An id the file never had is
        NotFound; a version deleted since is VersionDeleted (the record was found for a caller entitled to its
        collection, so saying so confirms nothing to anyone else)."""
        if version_id is None:
            version = self.current
        else:
            found = next((v for v in self.versions if v.version_id == version_id), None)
            if found is None:
                raise NotFound("not found", field="versionId")
            version = found
        if version.state in (VersionState.DELETING, VersionState.DELETED):
            raise VersionDeleted(VERSION_DELETED, collection_id=self.collection_id)
        return version


VERSION_DELETED = (
    "this version of the file was deleted: its bytes, pages and document are gone (a citation of it can no longer"
    " be shown)"
)


def unreadable(version: FileVersionRecord) -> DocumentNotReady | None:
    """Why `version` has no extracted document to read, and whether trying again could change that; None when it
    has one. The one rule behind GET /v1/files/{id}/document's 409, the agent tools' refusals and exports."""
    state = version.processing_state
    if state in DOCUMENT_READY and version.document_key is not None:
        return None
    if state is ProcessingState.FAILED and version.failure_reason is not None:
        return DocumentNotReady(
            "extraction_failed",
            version.failure_reason.user_sentence,
            reason=version.failure_reason.value,
            # Only a timeout may go differently next time; the same bytes give the same answer otherwise.
            retryable=version.failure_reason is FailureReason.TIMED_OUT,
            processing_state=state.value,
        )
    if state is ProcessingState.SKIPPED:
        return DocumentNotReady(
            "not_extracted",
            "this file is an export Quire rendered: it is never extracted, so read what it was rendered from (its"
            " export's source file or artifact) instead",
            retryable=False,
            processing_state=state.value,
        )
    if state is ProcessingState.INTERRUPTED:
        message = interruption_notice(version.failure_detail, version.processing_retries)
    else:
        message = f"the document is {state.value.replace('_', ' ')}; try again shortly"
    return DocumentNotReady("not_ready", message, retryable=True, processing_state=state.value)


def ensure_readable(version: FileVersionRecord) -> FileVersionRecord:
    """`version`, if its extracted document can be read; else the refusal `unreadable` gives."""
    refusal = unreadable(version)
    if refusal is not None:
        raise refusal
    return version


LIVE_STATES = frozenset({VersionState.PENDING, VersionState.STORED, VersionState.REJECTED})


class FilePage(BaseModel):
    model_config = ConfigDict(frozen=True)

    files: tuple[FileRecord, ...]
    next_cursor: str | None


class ExtractionSummary(BaseModel):
    """What the version row keeps of an extraction; the document itself is a derived object."""

    model_config = ConfigDict(frozen=True)

    page_count: int | None
    block_count: int
    pages_without_text: tuple[int, ...]
    warnings: tuple[str, ...]
    truncated: bool
    document_key: str
    document_version_id: str | None = None
    recognition: Recognition = Recognition()
