"""What a call can fail with: the API's refusal (status, code and sentence, one class per status), no answer at all,
a wait that ran out, a presigned POST or part that storage refused, an upload by parts interrupted or whose session
ended, and a webhook whose signature does not hold."""

from collections.abc import Mapping
from typing import Any


class QuireError(Exception):
    """Anything this client raises."""


class ApiError(QuireError):
    """The API answered with an error: `status`, `code` (the body's `error`, such as `not_found`), `message` (the
    API's sentence), and the whole `body` (a dict when the answer was JSON, else its text)."""

    def __init__(self, status: int, body: Any, retry_after: float | None = None) -> None:
        self.status = status
        self.body = body
        self.retry_after = retry_after
        fields: Mapping[str, Any] = body if isinstance(body, dict) else {}
        self.code: str | None = fields.get("error") if isinstance(fields.get("error"), str) else None
        self.message: str = str(fields.get("message", body)) if isinstance(body, dict) else str(body)
        super().__init__(f"HTTP {status}: {self.message}")


class BadRequest(ApiError):
    """400: the request breaks a rule the API names."""


class Unauthorized(ApiError):
    """401: no token, or one the API does not accept."""


class Forbidden(ApiError):
    """403: the caller's role does not allow this."""


class NotFound(ApiError):
    """404: no such resource for this caller (the same answer as one that is not theirs), or no such route."""


class Conflict(ApiError):
    """409: the resource is not in a state for this (a stale revision, a version not ready...)."""


class Gone(ApiError):
    """410: the stored bytes are gone."""


class PayloadTooLarge(ApiError):
    """413."""


class UnsupportedMediaType(ApiError):
    """415."""


class Unprocessable(ApiError):
    """422: the request does not validate; `message` names each field and its problem."""


class RateLimited(ApiError):
    """429: a limit was reached; `retry_after` says when to try again (the client has retried already)."""


class Unavailable(ApiError):
    """503: the API or a capability it needs is unavailable for now (the client has retried already)."""


class ServerError(ApiError):
    """Any other 5xx."""


class StorageRefused(ApiError):
    """Storage refused the presigned POST of an upload, or a part's PUT (its answer, S3's XML, is the body)."""


class UploadInterrupted(QuireError):
    """An upload by parts stopped before it was complete (a part kept failing): its session, `upload_id`, stays open
    for a day, and `Quire.resume(upload_id, source)` sends only the parts storage does not hold. `held` of
    `part_count` parts were confirmed stored when it stopped (storage may hold more: a part whose bytes had all been
    sent may arrive after the client gave up on it; resuming asks); `cause` is what stopped it."""

    def __init__(self, upload_id: str, held: int, part_count: int, cause: BaseException) -> None:
        self.upload_id = upload_id
        self.held = held
        self.part_count = part_count
        self.cause = cause
        super().__init__(
            f"the upload stopped with {held} of {part_count} parts confirmed stored ({cause}); its session"
            f" {upload_id} stays open for a day: resume it to send the rest"
        )


class UploadSessionEnded(QuireError):
    """The upload session cannot take parts any more (`state`: aborted, expired): upload the file again."""

    def __init__(self, upload_id: str, state: str, message: str) -> None:
        self.upload_id = upload_id
        self.state = state
        super().__init__(message)


class TransportFailed(QuireError, ConnectionError):
    """No answer: the connection could not be made or was lost."""


class TimedOut(QuireError, TimeoutError):
    """No answer within the client's timeout, or a wait that ran out (`last` is what was seen last)."""

    def __init__(self, message: str, last: Any = None) -> None:
        super().__init__(message)
        self.last = last


class WebhookVerificationError(QuireError, ValueError):
    """A webhook delivery whose signature or timestamp must not be accepted; the message says which."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: Unprocessable,
    429: RateLimited,
    503: Unavailable,
}


def error_for(status: int, body: Any, retry_after: float | None = None) -> ApiError:
    """The error class of `status` (ServerError for another 5xx, ApiError for another 4xx)."""
    kind = _BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    return kind(status, body, retry_after)
