"""The MCP ASGI app (functions/mcp/server.py:create_app) in process, over HTTP semantics: the bearer check's 401
and its WWW-Authenticate, the RFC 9728 metadata document, the Host and Origin checks (before the bearer check),
POST as the one method of /mcp, the tenant's request rate, the 503 of a verifier that cannot read its keys, the
readiness path, and calls made by the SDK's own Streamable HTTP client (both protocol eras) through httpx2's ASGI
transport."""

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.testclient import TestClient

from functions.mcp.server import Endpoint, create_app, endpoint_of
from shared.adapters.local.jwt_tokens import LocalTokenIssuer, LocalTokenVerifier
from shared.bootstrap import ConfigurationError
from shared.config import Settings
from shared.domain.auth import Principal
from shared.domain.errors import InfrastructureUnavailable, LimitExceeded
from shared.domain.limits import request_rate_refusal
from shared.services.request_rate import RequestRateLimiter
from tests.fake_tools import FakeToolDispatcher
from tests.mcp_results import refusal_of

SECRET = b"mcp-http-secret-0123456789abcdef"
BASE = "http://testserver"
ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Example"
METADATA_URL = f"{BASE}/.well-known/oauth-protected-resource/mcp"
ENDPOINT = Endpoint(
    resource_url=f"{BASE}/mcp",
    issuer_url=ISSUER,
    allowed_hosts=("testserver", "127.0.0.1:*"),
    allowed_origins=("https://console.example",),
)
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ECHO = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "echo_file", "arguments": {"fileId": "f"}},
}


@dataclass
class CountingRate:
    """The request rate limiter's stand-in: every tenant it was asked about, in order; refuses past `allowed`."""

    allowed: int = 1000
    tenants: list[str] = field(default_factory=list)

    def refusal(self, tenant_id: str) -> LimitExceeded | None:
        self.tenants.append(tenant_id)
        return request_rate_refusal(5, 0.4) if len(self.tenants) > self.allowed else None


def token(principal: Principal | None = None, secret: bytes = SECRET) -> str:
    return LocalTokenIssuer(secret).issue(
        principal or Principal(tenant_id="acme", subject="ann", collections=frozenset({"hr"}))
    )


@pytest.fixture
def dispatcher() -> FakeToolDispatcher:
    return FakeToolDispatcher()


@pytest.fixture
def rate() -> CountingRate:
    return CountingRate()


@pytest.fixture
def app(dispatcher: FakeToolDispatcher, rate: CountingRate) -> Starlette:
    return create_app(dispatcher, LocalTokenVerifier(SECRET), ENDPOINT, request_rate=rate)


@pytest.fixture
def http(app: Starlette) -> Iterator[TestClient]:
    with TestClient(app, base_url=BASE) as client:  # runs the lifespan once, as uvicorn does
        yield client


def bearer(value: str) -> dict[str, str]:
    return {**ACCEPT, "Authorization": f"Bearer {value}"}


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer not-a-jwt", f"Bearer {token(secret=b'another-secret-0123456789abcdefg')}", "Basic YTpi"],
    ids=["none", "garbage", "forged", "not bearer"],
)
def test_a_request_without_a_valid_token_is_401_naming_the_resource_metadata(
    http: TestClient, dispatcher: FakeToolDispatcher, rate: CountingRate, authorization: str | None
) -> None:
    headers = {**ACCEPT, **({"Authorization": authorization} if authorization else {})}
    response = http.post("/mcp", json=LIST_TOOLS, headers=headers)
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{METADATA_URL}"' in challenge
    assert 'error="invalid_token"' in challenge
    assert dispatcher.calls == []
    assert rate.tenants == []  # no tenant to count it against


def test_a_verified_token_that_names_no_tenant_is_401_too(http: TestClient) -> None:
    import jwt

    from shared.adapters.local.jwt_tokens import LOCAL_AUDIENCE, LOCAL_ISSUER

    tenantless = jwt.encode(
        {"iss": LOCAL_ISSUER, "aud": LOCAL_AUDIENCE, "iat": 1, "exp": 4102444800, "sub": "ann"}, SECRET, "HS256"
    )
    response = http.post("/mcp", json=LIST_TOOLS, headers=bearer(tenantless))
    assert response.status_code == 401
    assert "resource_metadata=" in response.headers["www-authenticate"]


def test_the_protected_resource_metadata_names_the_endpoint_and_its_authorization_server(http: TestClient) -> None:
    response = http.get("/.well-known/oauth-protected-resource/mcp")
    assert response.status_code == 200
    document = response.json()
    assert document["resource"] == f"{BASE}/mcp"
    assert document["authorization_servers"] == [ISSUER]
    assert document["bearer_methods_supported"] == ["header"]


def test_a_configured_host_is_served_and_any_other_is_421(http: TestClient) -> None:
    good = bearer(token())
    assert http.post("/mcp", json=LIST_TOOLS, headers=good).status_code == 200
    assert http.post("/mcp", json=LIST_TOOLS, headers={**good, "Host": "127.0.0.1:8123"}).status_code == 200
    refused = http.post("/mcp", json=LIST_TOOLS, headers={**good, "Host": "attacker.example"})
    assert refused.status_code == 421
    assert refused.text == "Invalid Host header"


def test_a_browser_origin_is_served_only_when_configured(http: TestClient) -> None:
    good = bearer(token())
    assert http.post("/mcp", json=LIST_TOOLS, headers={**good, "Origin": "https://console.example"}).status_code == 200
    assert http.post("/mcp", json=LIST_TOOLS, headers={**good, "Origin": "https://evil.example"}).status_code == 403


@pytest.mark.parametrize(
    ("headers", "status", "text"),
    [
        ({"Host": "attacker.example"}, 421, "Invalid Host header"),
        ({"Origin": "https://evil.example"}, 403, "Invalid Origin header"),
    ],
    ids=["host", "origin"],
)
def test_the_host_and_origin_are_checked_before_the_bearer_token(
    http: TestClient, rate: CountingRate, headers: dict[str, str], status: int, text: str
) -> None:
    # A request to a name the endpoint does not serve is refused as such, with or without a token: no 401 (and
    # no pointer to the metadata document) for it
    for authorization in ({}, {"Authorization": "Bearer not-a-jwt"}, {"Authorization": f"Bearer {token()}"}):
        refused = http.post("/mcp", json=LIST_TOOLS, headers={**ACCEPT, **authorization, **headers})
        assert (refused.status_code, refused.text) == (status, text)
        assert "www-authenticate" not in refused.headers
    assert rate.tenants == []


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "HEAD"])
@pytest.mark.parametrize("authorization", [None, "valid"], ids=["no token", "token"])
def test_any_method_but_post_on_the_endpoint_is_405_allowing_post_at_once(
    app: Starlette, dispatcher: FakeToolDispatcher, rate: CountingRate, method: str, authorization: str | None
) -> None:
    # Given a client asking for the server-to-client event stream, which a stateless server never writes to (the
    # transport would hold the request open until the client gives up: on AWS, a sandbox for 29 s)
    headers = {"Accept": "text/event-stream", **({"Authorization": f"Bearer {token()}"} if authorization else {})}
    answered: list[httpx2.Response] = []

    async def main() -> None:
        async with (
            app.router.lifespan_context(app),
            httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE) as client,
        ):
            with anyio.fail_after(5):
                answered.append(await client.request(method, "/mcp", headers=headers))

    anyio.run(main)
    # Then it is answered at once: 405, POST the one method allowed (as the Streamable HTTP specification permits
    # a server that offers no stream), and nothing was counted or called
    (response,) = answered
    assert (response.status_code, response.headers["allow"]) == (405, "POST")
    assert "www-authenticate" not in response.headers
    assert (rate.tenants, dispatcher.calls) == ([], [])


def test_each_authenticated_request_counts_once_against_its_tenants_rate_whatever_its_method(
    http: TestClient, dispatcher: FakeToolDispatcher, rate: CountingRate
) -> None:
    acme, globex = (
        bearer(token()),
        bearer(token(Principal(tenant_id="globex", subject="gil", collections=frozenset({"hr"})))),
    )
    for message, expected in ((INITIALIZE, 200), (INITIALIZED, 202), (LIST_TOOLS, 200), (ECHO, 200)):
        assert http.post("/mcp", json=message, headers=acme).status_code == expected, message["method"]
    assert http.post("/mcp", json=LIST_TOOLS, headers=globex).status_code == 200
    assert rate.tenants == ["acme", "acme", "acme", "acme", "globex"]
    assert [call.name for call in dispatcher.calls] == ["echo_file"]


def test_a_request_past_the_tenants_rate_is_429_naming_the_limit_and_never_reaches_the_transport(
    dispatcher: FakeToolDispatcher,
) -> None:
    rate = CountingRate(allowed=1)
    with TestClient(
        create_app(dispatcher, LocalTokenVerifier(SECRET), ENDPOINT, request_rate=rate), base_url=BASE
    ) as http:
        assert http.post("/mcp", json=LIST_TOOLS, headers=bearer(token())).status_code == 200
        refused = http.post("/mcp", json=ECHO, headers=bearer(token()))
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    assert refused.headers["content-type"] == "application/json"
    assert refused.json() == {
        "error": "limit_exceeded",
        "limit": "requests_per_second",
        "message": "the tenant's limit of 5 requests per second (requests_per_second) is reached: retry in 1 s",
    }
    assert dispatcher.calls == []


def test_the_containers_request_rate_limiter_bounds_each_tenant_on_its_own(dispatcher: FakeToolDispatcher) -> None:
    limiter = RequestRateLimiter(1, burst=2, clock=lambda: 100.0)
    app = create_app(dispatcher, LocalTokenVerifier(SECRET), ENDPOINT, request_rate=limiter)
    with TestClient(app, base_url=BASE) as http:
        acme = [http.post("/mcp", json=LIST_TOOLS, headers=bearer(token())).status_code for _ in range(3)]
        globex = http.post(
            "/mcp",
            json=LIST_TOOLS,
            headers=bearer(token(Principal(tenant_id="globex", subject="gil", collections=frozenset({"hr"})))),
        )
    assert acme == [200, 200, 429]
    assert globex.status_code == 200


def test_without_a_rate_every_request_is_served(dispatcher: FakeToolDispatcher) -> None:
    with TestClient(
        create_app(dispatcher, LocalTokenVerifier(SECRET), ENDPOINT, request_rate=None), base_url=BASE
    ) as http:
        assert {http.post("/mcp", json=LIST_TOOLS, headers=bearer(token())).status_code for _ in range(5)} == {200}


class UnreachableKeys:
    """A verifier whose signing keys cannot be fetched (Cognito's JWKS endpoint unreachable)."""

    def verify(self, token: str) -> Mapping[str, object]:
        raise InfrastructureUnavailable("the user pool's signing keys are unreachable: timed out")


def test_a_verifier_that_cannot_read_its_signing_keys_is_a_503_to_retry_not_a_401_or_a_500(
    dispatcher: FakeToolDispatcher, rate: CountingRate
) -> None:
    app = create_app(dispatcher, UnreachableKeys(), ENDPOINT, request_rate=rate)
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as http:
        response = http.post("/mcp", json=LIST_TOOLS, headers=bearer(token()))
        # What needs no token still answers
        assert http.get("/mcp/healthz").status_code == 200
        assert http.get("/.well-known/oauth-protected-resource/mcp").status_code == 200
        # And a request without a token is still the caller's 401
        assert http.post("/mcp", json=LIST_TOOLS, headers=ACCEPT).status_code == 401
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert "www-authenticate" not in response.headers
    body = response.json()
    assert body["error"] == "signing_keys_unavailable"
    assert "sign-in keys could not be read" in body["message"] and "retry" in body["message"]
    assert "timed out" not in json.dumps(body)  # the cause is logged, not told
    assert (rate.tenants, dispatcher.calls) == ([], [])


def test_the_readiness_path_answers_without_a_token(http: TestClient) -> None:
    response = http.get("/mcp/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_a_json_rpc_call_is_answered_with_one_json_body(http: TestClient, dispatcher: FakeToolDispatcher) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "echo_file", "arguments": {"fileId": "f"}},
    }
    response = http.post("/mcp", json=call, headers=bearer(token()))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in response.headers  # stateless: no session to keep
    body = response.json()
    assert body["id"] == 7
    assert body["result"]["structuredContent"] == {"tenantId": "acme", "subject": "ann", "fileId": "f", "limit": 10}
    assert body["result"]["isError"] is False


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdks_streamable_http_client_lists_and_calls_with_a_bearer_token(
    app: Starlette, dispatcher: FakeToolDispatcher, rate: CountingRate, mode: str
) -> None:
    seen: dict[str, object] = {}
    methods: list[str] = []  # of each HTTP request the client made: "POST initialize", "GET", ...

    async def record(request: httpx2.Request) -> None:
        body = json.loads(request.content) if request.method == "POST" else {}
        methods.append(f"{request.method} {body.get('method', '')}".strip())

    async def main() -> None:
        async with (
            app.router.lifespan_context(app),
            httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app),
                base_url=BASE,
                headers={"Authorization": f"Bearer {token()}"},
                event_hooks={"request": [record]},
            ) as http_client,
            Client(streamable_http_client(f"{BASE}/mcp", http_client=http_client), mode=mode) as client,
        ):
            seen["protocol"] = client.protocol_version
            seen["tools"] = [tool.name for tool in (await client.list_tools()).tools]
            seen["echo"] = await client.call_tool("echo_file", {"fileId": "f-9"})
            seen["refusal"] = await client.call_tool("refuse_always", {"fileId": "f-9"})

    anyio.run(main)
    assert seen["tools"] == ["echo_file", "write_note", "refuse_always"]
    echo, refusal = seen["echo"], seen["refusal"]
    assert isinstance(echo, types.CallToolResult)
    assert isinstance(refusal, types.CallToolResult)
    assert echo.structured_content == {"tenantId": "acme", "subject": "ann", "fileId": "f-9", "limit": 10}
    assert refusal_of(refusal)["error"] == "not_found"
    assert {call.surface for call in dispatcher.calls} == {"mcp"}
    assert (mode == "legacy") == (seen["protocol"] != "2026-07-28")
    # Each POST the client made was one of the tenant's, the handshake and the listing as much as the calls
    posts = [method for method in methods if method.startswith("POST ")]
    assert {"POST tools/list", "POST tools/call"} <= set(posts)
    assert ("POST initialize" in posts, "POST server/discover" in posts) == (mode == "legacy", mode == "auto")
    assert rate.tenants == ["acme"] * len(posts)


def test_the_endpoint_comes_from_the_settings_and_is_refused_without_its_urls() -> None:
    settings = Settings(
        mcp_resource_url="https://api.example.com/mcp",
        mcp_issuer_url=ISSUER,
        mcp_allowed_hosts="api.example.com, abc123.execute-api.us-east-1.amazonaws.com,",
    )
    endpoint = endpoint_of(settings)
    assert endpoint.allowed_hosts == ("api.example.com", "abc123.execute-api.us-east-1.amazonaws.com")
    assert endpoint.allowed_origins == ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
    with pytest.raises(ConfigurationError, match="QUIRE_MCP_RESOURCE_URL"):
        endpoint_of(Settings(mcp_issuer_url=ISSUER))
    with pytest.raises(ConfigurationError, match="must end in /mcp"):
        endpoint_of(Settings(mcp_resource_url="https://api.example.com/", mcp_issuer_url=ISSUER))
    with pytest.raises(ConfigurationError, match="421"):
        endpoint_of(
            Settings(mcp_resource_url="https://api.example.com/mcp", mcp_issuer_url=ISSUER, mcp_allowed_hosts=",")
        )
    # On AWS the tokens are the user pool's, for the API's scope: the endpoint asks for it
    assert endpoint.scopes == ()
    assert endpoint_of(settings.model_copy(update={"runtime": "aws"})).scopes == ("quire/api",)


def test_a_scope_the_endpoint_requires_is_advertised_and_a_token_without_it_is_refused(
    dispatcher: FakeToolDispatcher,
) -> None:
    scoped = Endpoint(
        resource_url=f"{BASE}/mcp",
        issuer_url=ISSUER,
        allowed_hosts=("testserver",),
        allowed_origins=(),
        scopes=("quire/api",),
    )
    app = create_app(dispatcher, LocalTokenVerifier(SECRET), scoped, request_rate=None)
    with TestClient(app, base_url=BASE) as http:
        assert http.get("/.well-known/oauth-protected-resource/mcp").json()["scopes_supported"] == ["quire/api"]
        refused = http.post("/mcp", json=LIST_TOOLS, headers=bearer(token()))  # the local tokens carry no scope
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    assert dispatcher.calls == []
