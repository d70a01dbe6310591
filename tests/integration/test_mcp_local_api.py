"""The MCP endpoint on the local stack, over real sockets: uvicorn serving the MCP app in a thread
(shared/local/mcp_server.py), reached through the local API's base URL, which forwards /mcp and the metadata
document to it untouched (no JWT check of its own) and keeps every other path as it was. Tools are a fake
dispatcher's here; tests/integration/test_mcp_end_to_end.py runs the real ones."""

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from functions.mcp.server import Endpoint, create_app
from shared.adapters.local.jwt_tokens import LocalTokenIssuer, LocalTokenVerifier
from shared.domain.auth import Principal
from shared.local.embedded_postgres import free_port
from shared.local.http_api import LocalHttpApi
from shared.local.mcp_server import LocalMcpServer
from shared.services.request_rate import RequestRateLimiter
from tests.fake_tools import FakeToolDispatcher
from tests.mcp_results import refusal_of

SECRET = b"mcp-local-api-secret-0123456789ab"
BURST = 10


@dataclass
class RecordingHandler:
    """The API function's stand-in: what reached it, answered with its path."""

    events: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, event: dict[str, Any], _context: Any) -> dict[str, Any]:
        self.events.append(event)
        return {
            "statusCode": 200,
            "headers": {"content-type": "application/json"},
            "body": json.dumps(event["rawPath"]),
        }


@dataclass
class LocalEndpoint:
    api: str
    handler: RecordingHandler
    dispatcher: FakeToolDispatcher
    mcp: LocalMcpServer


@pytest.fixture
def local() -> Iterator[LocalEndpoint]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    dispatcher = FakeToolDispatcher()
    endpoint = Endpoint(
        resource_url=f"{base}/mcp", issuer_url=base, allowed_hosts=("127.0.0.1:*", "localhost:*"), allowed_origins=()
    )
    # A burst of BURST requests per tenant, then (at a hundredth of a request a second) no more for this test
    rate = RequestRateLimiter(0.01, burst=BURST)
    mcp = LocalMcpServer(create_app(dispatcher, LocalTokenVerifier(SECRET), endpoint, request_rate=rate))
    mcp.start()
    handler = RecordingHandler()
    api = LocalHttpApi(
        handler,
        LocalTokenVerifier(SECRET),
        public_routes=frozenset({("GET", "/v1/health")}),
        port=port,
        forwarding=mcp.forwarding(),
    )
    api.start()
    try:
        yield LocalEndpoint(api=api.base_url, handler=handler, dispatcher=dispatcher, mcp=mcp)
    finally:
        api.stop()
        mcp.stop()


def token(tenant: str = "acme") -> str:
    return LocalTokenIssuer(SECRET).issue(Principal(tenant_id=tenant, subject="ann", collections=frozenset({"hr"})))


def request(
    method: str, url: str, headers: dict[str, str] | None = None, body: Any = None, *, timeout: float = 20
) -> tuple[int, dict[str, str], bytes]:
    data = json.dumps(body).encode() if body is not None else None
    sent = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(sent, timeout=timeout) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


MCP_POST = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdks_client_calls_the_tools_at_the_local_apis_base_url_with_a_bearer_token(
    local: LocalEndpoint, mode: str
) -> None:
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token()}"}, timeout=20) as http_client,
            Client(streamable_http_client(f"{local.api}/mcp", http_client=http_client), mode=mode) as client,
        ):
            seen["tools"] = [tool.name for tool in (await client.list_tools()).tools]
            seen["echo"] = await client.call_tool("echo_file", {"fileId": "f-1", "limit": 2})
            seen["refusal"] = await client.call_tool("refuse_always", {"fileId": "f-2"})

    anyio.run(main)
    assert seen["tools"] == ["echo_file", "write_note", "refuse_always"]
    echo: types.CallToolResult = seen["echo"]
    refusal: types.CallToolResult = seen["refusal"]
    assert echo.structured_content == {"tenantId": "acme", "subject": "ann", "fileId": "f-1", "limit": 2}
    assert refusal_of(refusal)["error"] == "not_found"
    # Forwarded, not handled: the API function never saw an MCP request.
    assert local.handler.events == []
    assert [call.name for call in local.dispatcher.calls] == ["echo_file", "refuse_always"]


def test_without_a_token_the_endpoint_itself_answers_401_naming_its_metadata(local: LocalEndpoint) -> None:
    status, headers, _ = request("POST", f"{local.api}/mcp", MCP_POST, LIST_TOOLS)
    assert status == 401
    assert f'resource_metadata="{local.api}/.well-known/oauth-protected-resource/mcp"' in headers["www-authenticate"]
    status, headers, body = request("GET", f"{local.api}/.well-known/oauth-protected-resource/mcp")
    assert status == 200
    assert json.loads(body)["resource"] == f"{local.api}/mcp"
    assert json.loads(body)["authorization_servers"] == [local.api]
    assert local.handler.events == []


def test_a_host_the_endpoint_does_not_serve_is_421_through_the_api_token_or_not(local: LocalEndpoint) -> None:
    headers = {**MCP_POST, "Authorization": f"Bearer {token()}"}
    assert request("POST", f"{local.api}/mcp", headers, LIST_TOOLS)[0] == 200
    assert request("POST", f"{local.api}/mcp", {**headers, "Host": "rebound.example"}, LIST_TOOLS)[0] == 421
    assert request("POST", f"{local.api}/mcp", {**MCP_POST, "Host": "rebound.example"}, LIST_TOOLS)[0] == 421


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_get_or_delete_of_the_endpoint_is_405_through_the_api_at_once(local: LocalEndpoint, method: str) -> None:
    # A GET asking for the event stream a stateless server never writes to would otherwise hang until the timeout
    headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {token()}"}
    status, answered, _ = request(method, f"{local.api}/mcp", headers, timeout=5)
    assert (status, answered["allow"]) == (405, "POST")
    assert local.handler.events == [] and local.dispatcher.calls == []


def test_a_tenant_past_its_request_rate_is_429_with_retry_after_through_the_api(local: LocalEndpoint) -> None:
    acme = {**MCP_POST, "Authorization": f"Bearer {token()}"}
    assert {request("POST", f"{local.api}/mcp", acme, LIST_TOOLS)[0] for _ in range(BURST)} == {200}
    status, headers, body = request("POST", f"{local.api}/mcp", acme, LIST_TOOLS)
    assert (status, json.loads(body)["error"], json.loads(body)["limit"]) == (
        429,
        "limit_exceeded",
        "requests_per_second",
    )
    assert int(headers["retry-after"]) >= 1
    # Another tenant's bucket is its own
    assert (
        request("POST", f"{local.api}/mcp", {**acme, "Authorization": f"Bearer {token('globex')}"}, LIST_TOOLS)[0]
        == 200
    )


def test_every_other_path_is_still_the_api_functions_behind_the_jwt_check(local: LocalEndpoint) -> None:
    # Not forwarded, and refused before the handler as before: the 401 is the API's own, byte for byte
    status, headers, body = request("GET", f"{local.api}/mcpx")
    assert (status, headers["www-authenticate"], body) == (401, "Bearer", b'{"message": "Unauthorized"}')
    assert request("GET", f"{local.api}/v1/health")[::2] == (200, b'"/v1/health"')
    status, _, body = request("GET", f"{local.api}/v1/me", {"Authorization": f"Bearer {token()}"})
    assert (status, body) == (200, b'"/v1/me"')
    assert [event["rawPath"] for event in local.handler.events] == ["/v1/health", "/v1/me"]
    assert local.handler.events[1]["requestContext"]["authorizer"]["jwt"]["claims"]["custom:tenant_id"] == "acme"


def test_the_readiness_path_is_forwarded_and_a_stopped_endpoint_is_a_bad_gateway(local: LocalEndpoint) -> None:
    assert request("GET", f"{local.api}/mcp/healthz")[::2] == (200, b'{"status":"ok"}')
    local.mcp.stop()
    status, _, body = request("GET", f"{local.api}/mcp/healthz")
    assert (status, body) == (502, b'{"message":"Bad Gateway"}')
