"""What every route needs: the process's container, the caller, and ids parsed as the API promises."""

from typing import TYPE_CHECKING, Any
from uuid import UUID

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from shared.domain.auth import Principal, principal_from_claims
from shared.domain.errors import NotFound

if TYPE_CHECKING:
    from shared.bootstrap import Container


def container() -> "Container":
    # The handler module owns the process's container (built once per cold start; tests replace it there).
    from functions.api import handler

    return handler.container


def current_principal(router: APIGatewayHttpRouter) -> Principal:
    authorizer = router.current_event.request_context.authorizer
    return principal_from_claims(authorizer.jwt_claim if authorizer else None)


def parse_id(raw: str) -> UUID:
    """A malformed id is just another id that does not exist."""
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound("not found") from None


def json_response(status: int, body: Any) -> Response[Any]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)
