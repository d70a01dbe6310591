"""Every API route touches tenant data on behalf of the verified caller's tenant, and of nobody without one:
the middleware the API handler installs, on a resolver of its own with the sample HTTP API events."""

import copy
from typing import Any, cast

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api import handler as api
from functions.api.middleware import act_for_the_callers_tenant
from shared.bootstrap import acting_tenant
from shared.local.http_api import LocalLambdaContext
from tests.conftest import load_event

# The attributes of Lambda's context that powertools reads.
CONTEXT = cast(LambdaContext, LocalLambdaContext())


def resolver() -> tuple[APIGatewayHttpResolver, list[str | None]]:
    app = APIGatewayHttpResolver()
    app.use(middlewares=[act_for_the_callers_tenant])
    seen: list[str | None] = []

    @app.get("/v1/me")
    def me() -> dict[str, Any]:
        seen.append(acting_tenant())
        return {}

    return app, seen


def test_a_route_acts_for_the_tenant_in_the_callers_verified_claims_and_nobody_after() -> None:
    app, seen = resolver()
    app.resolve(load_event("apigw_http_v2_get_me.json"), CONTEXT)
    assert seen == ["acme"] and acting_tenant() is None


def test_a_request_without_verified_claims_acts_for_nobody() -> None:
    app, seen = resolver()
    event = copy.deepcopy(load_event("apigw_http_v2_get_me.json"))
    del event["requestContext"]["authorizer"]
    app.resolve(event, CONTEXT)
    assert seen == [None]


def test_the_api_handler_installs_it() -> None:
    assert act_for_the_callers_tenant in api.app._router_middlewares
