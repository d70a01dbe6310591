"""What every request passes through before its route: the tenant's request rate (a 429 past it), NULs and lone
surrogates refused as the caller's 400, and bodies no route could read (not UTF-8, nested past the parser's
limit) refused before the resolver."""

import base64
import json
import re
import sys
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import acting_for_tenant, container
from shared.domain.auth import TENANT_CLAIM, principal_from_claims
from shared.domain.errors import InvalidRequest, Unauthenticated, refuse_nul

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def limit_request_rate(resolver: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Every authenticated route: one token from the tenant's bucket, or a 429 with Retry-After. A request
    without a tenant (a public route, or one the route refuses as 401) is not counted here."""
    limiter = container().request_rate
    authorizer = resolver.current_event.request_context.authorizer
    claims = authorizer.jwt_claim if authorizer else None
    tenant = claims.get(TENANT_CLAIM) if claims else None
    if limiter is not None and isinstance(tenant, str) and tenant:
        refusal = limiter.refusal(tenant)
        if refusal is not None:
            raise refusal
    return next_middleware(resolver)


def refuse_nul_anywhere(resolver: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Every route: a NUL in the path, the query string or the JSON body is the caller's 400, naming where."""
    event = resolver.current_event
    for name, value in (event.path_parameters or {}).items():
        refuse_nul(value, f"the path parameter {name}")
    for name, value in (event.query_string_parameters or {}).items():
        refuse_nul(value, f"the query parameter {name}")
    _refuse_nul_in_body(event.decoded_body or "")
    return next_middleware(resolver)


def _refuse_nul_in_body(body: str) -> None:
    # JSON spells NUL and lone surrogates only as escapes (raw ones are not JSON, or not UTF-8): parsed a second
    # time only when such an escape is there.
    if "\\u0000" in body or "\x00" in body or _SURROGATE_ESCAPE.search(body):
        try:
            parsed = json.loads(body)
        except ValueError:
            refuse_nul(body, "the body")
        else:
            refuse_nul(parsed, "the body")


def act_for_the_callers_tenant(resolver: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Every route: tenant data is touched on behalf of the verified caller's tenant only (on AWS, with that
    tenant's session). A request without verified claims acts for nobody; its route refuses it."""
    authorizer = resolver.current_event.request_context.authorizer
    try:
        tenant_id = principal_from_claims(authorizer.jwt_claim if authorizer else None).tenant_id
    except Unauthenticated:
        return next_middleware(resolver)
    with acting_for_tenant(tenant_id):
        return next_middleware(resolver)


def resolve_refusing_unreadable_bodies(
    app: APIGatewayHttpResolver, event: dict[str, Any], context: LambdaContext
) -> dict[str, Any]:
    """The resolver's response, or a 400 for a body it would fail on (as a 500) before any route runs."""
    try:
        return _undecodable_body(event) or _body_that_is_not_text(event) or app.resolve(event, context)
    except RecursionError:
        # JSON nested past the parser's recursion limit (the resolver's own body parsing hits it first).
        return _refused("the body nests too deeply to be read: flatten it")
    except ValueError as error:
        # An integer of more digits than Python converts (4,300), met as the resolver parses the body.
        if "integer string conversion" not in str(error):
            raise
        return _refused(
            f"the body holds a number of more than {sys.get_int_max_str_digits()} digits: send it as a string"
        )


def _refused(message: str) -> dict[str, Any]:
    body = {"error": "invalid_request", "message": message}
    return {"statusCode": 400, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}


def _undecodable_body(event: dict[str, Any]) -> dict[str, Any] | None:
    """A base64 body that is not UTF-8 text, refused before the resolver (whose request validation runs first
    on every route and would fail decoding it, as a 500)."""
    if not event.get("isBase64Encoded") or not event.get("body"):
        return None
    try:
        base64.b64decode(event["body"]).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        body = {"error": "invalid_request", "message": "the body is not UTF-8 text: send JSON"}
        return {"statusCode": 400, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}
    return None


def _body_that_is_not_text(event: dict[str, Any]) -> dict[str, Any] | None:
    """A body holding NUL or half a surrogate pair, refused naming where before the resolver: its request
    validation runs before any middleware, and answers a lone surrogate with a bare 422 naming neither."""
    raw = event.get("body") or ""
    body = base64.b64decode(raw).decode("utf-8") if event.get("isBase64Encoded") else raw
    try:
        _refuse_nul_in_body(body)
    except InvalidRequest as refusal:
        answer = {"error": "invalid_request", "message": str(refusal)}
        return {"statusCode": 400, "headers": {"Content-Type": "application/json"}, "body": json.dumps(answer)}
    return None
