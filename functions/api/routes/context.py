"""What every route needs: the process's container (`shared.bootstrap.container`), the caller, and ids parsed as the
API promises."""

import base64
from typing import Any
from uuid import UUID

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from shared.domain.auth import Principal, principal_from_claims
from shared.domain.errors import NotFound


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


def binary_response(content: bytes, *, content_type: str, headers: dict[str, str]) -> Response[str]:
    """Bytes as the body of a 200, base64-encoded for API Gateway here: the route's response validation would
    otherwise serialize them as JSON text, which bytes that are not UTF-8 (a PNG, a PDF) cannot be."""
    response: Response[str] = Response(
        status_code=200, content_type=content_type, body=base64.b64encode(content).decode(), headers=headers
    )
    response.base64_encoded = True
    return response
