"""The HTTP API Lambda: the resolver with one router per resource (functions/api/routes/), the checks every
request gets before its route (NUL anywhere, a body that is not UTF-8, JSON nested too deeply), the security
headers on every response, and the routes about the API itself (health, the caller, the OpenAPI document)."""

import base64
import json
import re
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.api.errors import register_error_handlers
from functions.api.routes import artifacts, exports, files, pdf, search, writing
from shared.bootstrap import Container
from shared.config import load_settings
from shared.domain.auth import Principal, principal_from_claims
from shared.domain.errors import refuse_nul
from shared.observability import logger, tracer
from shared.services.health import Health, HealthReport, check_health

# On every response, errors included: JSON is never sniffed into HTML, and tenant data is never cached.
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
# Routes served without a bearer token. Every other route sits behind the JWT authorizer.
UNAUTHENTICATED_ROUTES = frozenset({("GET", "/v1/health"), ("GET", "/v1/openapi.json")})

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
app = APIGatewayHttpResolver(enable_validation=True)
register_error_handlers(app)
container = Container(load_settings())


def refuse_nul_anywhere(resolver: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Every route: a NUL in the path, the query string or the JSON body is the caller's 400, naming where."""
    event = resolver.current_event
    for name, value in (event.path_parameters or {}).items():
        refuse_nul(value, f"the path parameter {name}")
    for name, value in (event.query_string_parameters or {}).items():
        refuse_nul(value, f"the query parameter {name}")
    body = event.decoded_body or ""
    # JSON spells NUL and lone surrogates only as escapes (raw ones are not JSON, or not UTF-8): parsed a second
    # time only when such an escape is there.
    if "\\u0000" in body or "\x00" in body or _SURROGATE_ESCAPE.search(body):
        try:
            parsed = json.loads(body)
        except ValueError:
            refuse_nul(body, "the body")
        else:
            refuse_nul(parsed, "the body")
    return next_middleware(resolver)


app.use(middlewares=[refuse_nul_anywhere])
for resource in (files, search, artifacts, exports, pdf, writing):
    app.include_router(resource.router)


class CallerView(BaseModel):
    tenantId: str  # noqa: N815 - the API speaks camelCase
    subject: str
    collections: list[str]


def current_principal() -> Principal:
    authorizer = app.current_event.request_context.authorizer
    return principal_from_claims(authorizer.jwt_claim if authorizer else None)


@app.get("/v1/health")
def health() -> Response[HealthReport]:
    report = check_health(container.file_metadata)
    return Response(
        status_code=200 if report.status is Health.OK else 503,
        content_type=content_types.APPLICATION_JSON,
        body=report,
    )


@app.get("/v1/me")
def me() -> CallerView:
    principal = current_principal()
    return CallerView(
        tenantId=principal.tenant_id,
        subject=principal.subject,
        collections=sorted(container.authorization.readable_collections(principal)),
    )


@app.get("/v1/openapi.json")
def openapi() -> Response[str]:
    return Response(
        status_code=200,
        content_type=content_types.APPLICATION_JSON,
        body=app.get_openapi_json_schema(title="Quire API", version="0.1.0"),
    )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        response = _undecodable_body(event) or app.resolve(event, context)
    except RecursionError:
        # JSON nested past the parser's recursion limit (the resolver's own body parsing hits it first).
        body = {"error": "invalid_request", "message": "the body nests too deeply to be read: flatten it"}
        response = {"statusCode": 400, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}
    response.setdefault("headers", {}).update(SECURITY_HEADERS)
    return response


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
