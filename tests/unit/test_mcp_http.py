"""The MCP ASGI app (functions/mcp/server.py:create_app) in process, over HTTP semantics: the bearer check's 401
and its WWW-Authenticate, the RFC 9728 metadata document, the Host and Origin checks, the readiness path, and
calls made by the SDK's own Streamable HTTP client (both protocol eras) through httpx2's ASGI transport."""

from collections.abc import Iterator

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
from tests.fake_tools import FakeToolDispatcher

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


def token(principal: Principal | None = None, secret: bytes = SECRET) -> str:
    return LocalTokenIssuer(secret).issue(
        principal or Principal(tenant_id="acme", subject="ann", collections=frozenset({"hr"}))
    )


@pytest.fixture
def dispatcher() -> FakeToolDispatcher:
    return FakeToolDispatcher()


@pytest.fixture
def app(dispatcher: FakeToolDispatcher) -> Starlette:
    return create_app(dispatcher, LocalTokenVerifier(SECRET), ENDPOINT)


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
    http: TestClient, dispatcher: FakeToolDispatcher, authorization: str | None
) -> None:
    headers = {**ACCEPT, **({"Authorization": authorization} if authorization else {})}
    response = http.post("/mcp", json=LIST_TOOLS, headers=headers)
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{METADATA_URL}"' in challenge
    assert 'error="invalid_token"' in challenge
    assert dispatcher.calls == []


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
    app: Starlette, dispatcher: FakeToolDispatcher, mode: str
) -> None:
    seen: dict[str, object] = {}

    async def main() -> None:
        async with (
            app.router.lifespan_context(app),
            httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app),
                base_url=BASE,
                headers={"Authorization": f"Bearer {token()}"},
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
    assert (refusal.is_error, refusal.structured_content["error"]) == (True, "not_found")
    assert {call.surface for call in dispatcher.calls} == {"mcp"}
    assert (mode == "legacy") == (seen["protocol"] != "2026-07-28")


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
    with TestClient(create_app(dispatcher, LocalTokenVerifier(SECRET), scoped), base_url=BASE) as http:
        assert http.get("/.well-known/oauth-protected-resource/mcp").json()["scopes_supported"] == ["quire/api"]
        refused = http.post("/mcp", json=LIST_TOOLS, headers=bearer(token()))  # the local tokens carry no scope
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    assert dispatcher.calls == []
