"""Domain errors → HTTP, in exactly one place: each error's `code` (shared/domain/errors.py) with its status."""

import json
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from functions.views.files import NothingToReadView
from shared.bootstrap import infrastructure_outage
from shared.domain.artifacts import VersionConflict
from shared.domain.errors import (
    INFRASTRUCTURE_UNAVAILABLE_SENTENCE,
    RETRY_AFTER_OUTAGE_SECONDS,
    CapabilityUnavailable,
    Conflict,
    DocumentNotReady,
    Forbidden,
    InvalidRequest,
    LimitExceeded,
    MetadataRevisionConflict,
    NotFound,
    NotReady,
    PayloadTooLarge,
    StoredBytesMissing,
    Unauthenticated,
    UnsupportedMediaType,
    VersionDeleted,
)
from shared.domain.exports import RenderFailed

UNAVAILABLE = INFRASTRUCTURE_UNAVAILABLE_SENTENCE
RETRY_AFTER_SECONDS = RETRY_AFTER_OUTAGE_SECONDS


def _json(status: int, body: dict[str, object]) -> Response[str]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=json.dumps(body))


# A validation error's limits that are safe to repeat (numbers the schema publishes anyway), and their sentence.
_LIMITS = {
    "max_length": "at most {} long",
    "min_length": "at least {} long",
    "le": "at most {}",
    "ge": "at least {}",
    "lt": "below {}",
    "gt": "above {}",
}


def _problem(error: Mapping[str, Any]) -> dict[str, object]:
    """One problem as powertools reports it (where and what kind), plus the limit it broke when it is a number."""
    problem: dict[str, object] = {"loc": list(error["loc"]), "type": error["type"]}
    context = error.get("ctx") or {}
    for name in _LIMITS:
        if isinstance(context.get(name), int | float):
            problem[name] = context[name]
    return problem


def _sentence(problem: Mapping[str, object]) -> str:
    where = ".".join(str(part) for part in problem["loc"] if part != "body") or "body"  # type: ignore[attr-defined]
    limits = [template.format(problem[name]) for name, template in _LIMITS.items() if name in problem]
    return f"{where}: {', '.join(limits) if limits else str(problem['type']).replace('_', ' ')}"


def register_error_handlers(app: APIGatewayHttpResolver) -> None:
    @app.exception_handler(RequestValidationError)
    def _unprocessable(error: RequestValidationError) -> Response[str]:
        # Powertools' own body (where and what kind, no Pydantic text), with the limit each problem broke.
        problems = [_problem(problem) for problem in error.errors()]
        return _json(
            422,
            {"statusCode": 422, "detail": problems, "message": "; ".join(_sentence(p) for p in problems)},
        )

    @app.exception_handler(Unauthenticated)
    def _unauthenticated(_: Unauthenticated) -> Response[str]:
        # The body API Gateway's JWT authorizer sends: no hint of what was wrong with the token.
        return _json(401, {"message": "Unauthorized"})

    @app.exception_handler(NotFound)
    def _not_found(error: NotFound) -> Response[str]:
        # One body for "does not exist" and "not yours", so a refusal never confirms an id.
        body: dict[str, object] = {"error": error.code, "message": "Not found"}
        if error.field:
            body["field"] = error.field
        return _json(404, body)

    @app.exception_handler(VersionDeleted)
    def _deleted(error: VersionDeleted) -> Response[str]:
        # Only for a caller entitled to the collection the file was in: anyone else gets the body above.
        return _json(404, {"error": error.code, "message": str(error)})

    @app.exception_handler(Forbidden)
    def _forbidden(error: Forbidden) -> Response[str]:
        return _json(403, {"error": error.code, "message": str(error)})

    @app.exception_handler(RenderFailed)
    def _unrenderable(error: RenderFailed) -> Response[str]:
        # Content that cannot be written in the format asked for (on the request path: a replacement).
        return _json(422, {"error": error.code, "message": error.sentence, "retryable": error.retryable})

    @app.exception_handler(Conflict)
    def _stale(error: Conflict) -> Response[str]:
        return _json(409, {"error": error.code, "message": str(error)})

    @app.exception_handler(MetadataRevisionConflict)
    def _stale_metadata(error: MetadataRevisionConflict) -> Response[str]:
        return _json(409, {"error": error.code, "message": str(error), "metadataRevision": error.current_revision})

    @app.exception_handler(VersionConflict)
    def _conflict(error: VersionConflict) -> Response[str]:
        return _json(409, {"error": error.code, "message": str(error), "latestVersion": error.latest_version})

    @app.exception_handler(InvalidRequest)
    def _invalid(error: InvalidRequest) -> Response[str]:
        return _json(400, {"error": error.code, "message": str(error)})

    @app.exception_handler(NotReady)
    def _not_ready(error: NotReady) -> Response[str]:
        if isinstance(error, DocumentNotReady):
            # Why there is no document, and whether trying again could change that.
            return _json(409, NothingToReadView.of(error).model_dump(mode="json", by_alias=True))
        return _json(409, {"error": error.code, "message": str(error)})

    @app.exception_handler(StoredBytesMissing)
    def _bytes_missing(error: StoredBytesMissing) -> Response[str]:
        # Gone from storage though a row says stored: the caller is told, never a 500 (and never the key).
        return _json(410, {"error": error.code, "message": StoredBytesMissing.SENTENCE})

    @app.exception_handler(PayloadTooLarge)
    def _too_large(error: PayloadTooLarge) -> Response[str]:
        return _json(413, {"error": error.code, "message": str(error)})

    @app.exception_handler(UnsupportedMediaType)
    def _unsupported(error: UnsupportedMediaType) -> Response[str]:
        return _json(415, {"error": error.code, "message": str(error)})

    @app.exception_handler(LimitExceeded)
    def _limited(error: LimitExceeded) -> Response[str]:
        body = {"error": error.code, "limit": error.limit, "message": str(error)}
        return Response(
            status_code=429,
            content_type=content_types.APPLICATION_JSON,
            body=json.dumps(body),
            headers={"Retry-After": str(error.retry_after_seconds)},
        )

    @app.exception_handler(CapabilityUnavailable)
    def _unavailable(error: CapabilityUnavailable) -> Response[str]:
        return _json(
            503,
            {"error": error.code, "capability": error.capability, "message": error.reason},
        )

    @app.exception_handler(Exception)
    def _infrastructure(error: Exception) -> Response[str]:
        # The database restarting, a connection dropped, a service throttling: the caller may try again shortly
        # (503 with Retry-After, as API Gateway says of a throttled function). Anything else is a bug: re-raised.
        if not infrastructure_outage(error):
            raise error
        return Response(
            status_code=503,
            content_type=content_types.APPLICATION_JSON,
            body=json.dumps({"error": "unavailable", "message": UNAVAILABLE}),
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )

    @app.not_found
    def _no_route(_: Exception) -> Response[str]:
        return _json(404, {"error": "not_found", "message": "Not found"})
