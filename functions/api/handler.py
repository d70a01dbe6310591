"""The HTTP API Lambda: the resolver with one router per resource (functions/api/routes/), the checks every
request gets before its route (functions/api/middleware.py), the security headers on every response, and the
routes about the API itself (health, the caller, the OpenAPI document). Wiring only."""

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api.errors import register_error_handlers
from functions.api.middleware import (
    act_for_the_callers_tenant,
    limit_request_rate,
    refuse_nul_anywhere,
    resolve_refusing_unreadable_bodies,
)
from functions.api.routes import (
    answers,
    artifacts,
    audit,
    events,
    exports,
    files,
    meta,
    pdf,
    search,
    tools,
    uploads,
    writing,
)
from functions.views.account import CallerView
from shared.bootstrap import container
from shared.domain.auth import Principal, principal_from_claims
from shared.observability import logger, tracer
from shared.services.health import Health, HealthReport, check_health

# On every response, errors included: JSON is never sniffed into HTML, and tenant data is never cached.
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
# Routes served without a bearer token. Every other route sits behind the JWT authorizer.
UNAUTHENTICATED_ROUTES = frozenset({("GET", "/v1/health"), ("GET", "/v1/openapi.json")})

app = APIGatewayHttpResolver(enable_validation=True)
register_error_handlers(app)


app.use(middlewares=[limit_request_rate, refuse_nul_anywhere, act_for_the_callers_tenant])
for resource in (files, uploads, search, answers, artifacts, exports, pdf, writing, tools, audit, events, meta):
    app.include_router(resource.router)


def current_principal() -> Principal:
    authorizer = app.current_event.request_context.authorizer
    return principal_from_claims(authorizer.jwt_claim if authorizer else None)


@app.get("/v1/health")
def health() -> Response[HealthReport]:
    report = check_health(container().file_metadata)
    return Response(
        status_code=200 if report.status is Health.OK else 503,
        content_type=content_types.APPLICATION_JSON,
        body=report,
    )


@app.get("/v1/me")
def me() -> CallerView:
    principal = current_principal()
    return CallerView(
        tenant_id=principal.tenant_id,
        subject=principal.subject,
        collections=sorted(container().authorization.readable_collections(principal)),
        roles=principal.roles(),
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
    response = resolve_refusing_unreadable_bodies(app, event, context)
    response.setdefault("headers", {}).update(SECURITY_HEADERS)
    return response
