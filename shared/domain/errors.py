"""Domain exceptions. Each carries its `code`, the word both surfaces send (the HTTP API's `error`, an agent
tool's refusal); `functions/api/errors.py` adds the status and `functions/tools/dispatcher.py` the next tool.

Document problems are not exceptions (they are values recorded on the file version); these are the
caller's mistakes and the platform's refusals.
"""

import re


class QuireError(Exception):
    """Base for every error the API knows how to turn into a response."""

    code = "internal_error"


class Unauthenticated(QuireError):
    """No caller identity, or one the edge did not vouch for."""

    code = "unauthenticated"


class NotFound(QuireError):
    """The resource does not exist *or* the caller is not entitled to it: deliberately the same error.

    `field` names the request field whose id was not found (an id in a body rather than the path): it says
    where, never whether the id exists."""

    code = "not_found"

    def __init__(self, message: str = "not found", *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class VersionDeleted(NotFound):
    """The version asked for (or the whole file) was deleted, and the caller may read the collection it was in:
    told plainly, so that a citation whose source is gone says so (still a 404). Raised only after entitlement
    is checked; an unentitled caller gets the plain NotFound, as for an id that never existed."""

    code = "deleted"

    def __init__(self, message: str, *, collection_id: str | None = None) -> None:
        super().__init__(message)
        # The collection the caller was entitled in: where an audit records the refused call.
        self.collection_id = collection_id


class Forbidden(QuireError):
    """The caller may see the resource but its role there does not allow this: the message names the role
    needed. Raised only where the resource is visible to the caller; elsewhere a refusal is NotFound."""

    code = "forbidden"


class Conflict(QuireError):
    """The request was made against a state that has moved on (a stale version): nothing was written."""

    code = "conflict"


class MetadataRevisionConflict(Conflict):
    """A metadata change named a revision that is no longer the file's: nothing was written; the current one is
    given, to read again and retry."""

    def __init__(self, message: str, *, current_revision: int) -> None:
        super().__init__(message)
        self.current_revision = current_revision


class InvalidRequest(QuireError):
    """The request is well-formed JSON but asks for something the contract refuses; the message says why."""

    code = "invalid_request"


class NotReady(QuireError):
    """The caller may see the resource, but it cannot do this yet (no stored bytes, say)."""

    code = "not_ready"


class DocumentNotReady(NotReady):
    """A version has no extracted document to read (yet, or ever): `code` says which (`not_ready`,
    `extraction_failed`, `not_extracted`), `retryable` whether trying again could change the answer, `reason` the
    failure reason when extraction failed. Built by `shared.domain.files.unreadable`, the one rule."""

    def __init__(
        self, code: str, message: str, *, retryable: bool, processing_state: str, reason: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.retryable = retryable
        self.processing_state = processing_state
        self.reason = reason


# What a caller is told when the infrastructure did not answer (never which part, nor its address): the HTTP
# API's 503 `unavailable` with Retry-After, and the agent tools' refusal of the same name.
INFRASTRUCTURE_UNAVAILABLE_SENTENCE = (
    "Quire's storage or database did not answer, so this request may not have been carried out: try again shortly"
)
RETRY_AFTER_OUTAGE_SECONDS = 2


class StoredBytesMissing(QuireError, FileNotFoundError):
    """Bytes a row says are stored are not in storage (removed outside Quire: a lifecycle rule, a hand-deleted
    object). A FileNotFoundError, so that a deletion racing a read is still told apart where it matters; the API
    answers 410 with `SENTENCE`, never the storage key (`key` is for the log). Reconciliation reports the row."""

    code = "content_missing"

    SENTENCE = (
        "the stored bytes of this file version are missing from storage (removed outside Quire); reconciliation"
        " reports it: upload the file again"
    )

    def __init__(self, key: str, version_id: str | None = None) -> None:
        super().__init__(self.SENTENCE)
        self.key = key
        self.version_id = version_id


class PayloadTooLarge(QuireError):
    """A declared size over a limit; the message names the limit."""

    code = "too_large"


class LimitExceeded(QuireError):
    """A tenant's spend or capacity limit would be passed: refused before anything is spent (a 429). `limit`
    names the setting, the message says its value and when it resets, `retry_after_seconds` when to try again."""

    code = "limit_exceeded"

    def __init__(self, limit: str, message: str, *, retry_after_seconds: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.retry_after_seconds = max(1, retry_after_seconds)


class UnsupportedMediaType(QuireError):
    """A media type or extension outside the exact allow-list; the message names what is accepted."""

    code = "unsupported_media_type"


class CapabilityUnavailable(QuireError):
    """A capability (OCR, vision, embedding, transcription, generation) is not configured here.

    Raised instead of fabricating a result: a missing description is honest, an invented one is not.
    """

    code = "capability_unavailable"

    def __init__(self, capability: str, reason: str) -> None:
        super().__init__(f"{capability} is unavailable: {reason}")
        self.capability = capability
        self.reason = reason


class GenerationFailed(CapabilityUnavailable):
    """The model answered, but not with something usable (cut off, withheld, not the requested structure): the
    tokens it spent are carried so they are metered all the same."""

    def __init__(self, capability: str, reason: str, *, model: str, input_tokens: int, output_tokens: int) -> None:
        super().__init__(capability, reason)
        self.model = model
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens


class EmbeddingFailed(QuireError):
    """The embedding model was there but did not answer (throttled past the retries, timed out, refused)."""


class RecognitionFailed(Exception):
    """The OCR engine refused this document or failed on it (not the service being busy): a document
    problem, recorded on the version with `detail`, never retried into the same answer."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class TranscriptionFailed(Exception):
    """The speech engine refused this recording or failed on it (not the service being busy): a document problem,
    recorded on the version with `detail` (a sentence its owner can act on), never retried into the same answer."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class VisionFailed(Exception):
    """The vision model refused this image (too large, unsupported, filtered): recorded, not retried."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InfrastructureUnavailable(Exception):
    """A managed service did not answer (the database resuming, throttling, a dropped connection): the
    workflow retries the step with back-off. Its class name is the error name the state machine matches."""


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def refuse_nul(value: object, where: str) -> None:
    """NUL is not text (PostgreSQL refuses it in a text parameter; no reader shows it), and neither is half of
    a UTF-16 surrogate pair (JSON can spell one, UTF-8 cannot hold it): a caller's value that holds either, at
    any depth of a JSON-like tree, is refused naming where, before it reaches anything."""
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidRequest(f"{where} contains a NUL character (U+0000), which is not text: remove it")
        if _LONE_SURROGATE.search(value):
            raise InvalidRequest(
                f"{where} contains half of a UTF-16 surrogate pair (\\ud800-\\udfff alone), which is not text:"
                " send the whole character"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            refuse_nul(key, f"{where}: a field name")
            refuse_nul(item, f"{where}.{key}" if isinstance(key, str) else where)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            refuse_nul(item, f"{where}[{index}]")
