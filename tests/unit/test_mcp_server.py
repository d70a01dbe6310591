"""The MCP server (functions/mcp/server.py) against a fake dispatcher, through the SDK's in-process client.

The in-process client has no HTTP and so no bearer middleware: each test puts the verified caller where the
middleware would (the SDK's auth context), as ClaimsTokenVerifier would have built it. The HTTP side (401, 421, the
metadata document) is tests/unit/test_mcp_http.py."""

import json
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.shared.exceptions import MCPError

from functions.mcp.server import ClaimsTokenVerifier, SigningKeysUnavailable, build_server
from shared.domain.auth import COLLECTIONS_CLAIM, SUBJECT_CLAIM, TENANT_CLAIM
from shared.domain.errors import InfrastructureUnavailable, Unauthenticated
from tests.fake_tools import FAKE_TOOLS, NOT_FOUND_REFUSAL, FakeToolDispatcher
from tests.mcp_results import refusal_of

MODES = ("auto", "legacy")  # 2026-07-28 (direct, no handshake) and the initialize handshake
ACME_ANN = {
    "iss": "quire-local",
    "aud": "quire-api",
    SUBJECT_CLAIM: "ann",
    TENANT_CLAIM: "acme",
    COLLECTIONS_CLAIM: "hr",
}


@contextmanager
def caller(claims: Mapping[str, object] | None) -> Iterator[None]:
    """Requests served within this block come from the token these claims were verified from."""
    user = (
        AuthenticatedUser(AccessToken(token="t", client_id="quire-api", scopes=[], claims=dict(claims)))
        if claims is not None
        else None
    )
    token = auth_context_var.set(user)
    try:
        yield
    finally:
        auth_context_var.reset(token)


def run(session: Callable[[Client], Awaitable[None]], dispatcher: FakeToolDispatcher, mode: str = "auto") -> None:
    async def main() -> None:
        async with Client(build_server(dispatcher), mode=mode) as client:
            await session(client)

    anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_the_tool_list_is_the_dispatchers_with_its_schemas_titles_and_annotations(mode: str) -> None:
    listed: list[types.Tool] = []

    async def session(client: Client) -> None:
        listed.extend((await client.list_tools()).tools)

    with caller(ACME_ANN):
        run(session, FakeToolDispatcher(), mode)
    assert [tool.name for tool in listed] == [tool.name for tool in FAKE_TOOLS]
    for tool, fake in zip(listed, FAKE_TOOLS, strict=True):
        assert tool.title == fake.title
        assert tool.description == fake.description
        assert tool.input_schema == fake.input_schema()
        assert tool.output_schema == fake.output_schema()
        assert tool.annotations == types.ToolAnnotations(
            title=fake.title, read_only_hint=fake.read_only, destructive_hint=False
        )
    # camelCase on the wire, exactly as the parameter model's schema has it
    assert set(listed[0].input_schema["properties"]) == {"fileId", "limit"}
    assert [tool.annotations.read_only_hint for tool in listed if tool.annotations] == [True, False, True]


@pytest.mark.parametrize("mode", MODES)
def test_a_call_is_the_dispatchers_result_as_structured_content_and_as_its_json_text(mode: str) -> None:
    dispatcher = FakeToolDispatcher()
    results: list[types.CallToolResult] = []

    async def session(client: Client) -> None:
        results.append(await client.call_tool("echo_file", {"fileId": "f-1", "limit": 3}))

    with caller(ACME_ANN):
        run(session, dispatcher, mode)
    (result,) = results
    expected = {"tenantId": "acme", "subject": "ann", "fileId": "f-1", "limit": 3}
    assert result.is_error is False
    assert result.structured_content == expected
    assert result.content == [
        types.TextContent(type="text", text='{"tenantId":"acme","subject":"ann","fileId":"f-1","limit":3}')
    ]
    (call,) = dispatcher.calls
    assert (call.principal.tenant_id, call.principal.subject, call.principal.collections) == (
        "acme",
        "ann",
        frozenset({"hr"}),
    )
    assert (call.name, call.arguments, call.surface) == ("echo_file", {"fileId": "f-1", "limit": 3}, "mcp")


@pytest.mark.parametrize("mode", MODES)
def test_a_refusal_is_its_sentence_and_its_json_with_is_error_and_no_structured_content(mode: str) -> None:
    results: list[types.CallToolResult] = []

    async def session(client: Client) -> None:
        # The client checks structured content against the output schema: a refusal is not the result it declares.
        results.append(await client.call_tool("refuse_always", {"fileId": "someone-elses"}))
        results.append(await client.call_tool("echo_file", {"limit": 1000}))

    with caller(ACME_ANN):
        run(session, FakeToolDispatcher(), mode)
    not_found, invalid = results
    assert not_found.structured_content is None
    assert not_found.content == [
        types.TextContent(type="text", text=NOT_FOUND_REFUSAL["message"]),
        types.TextContent(type="text", text=json.dumps(NOT_FOUND_REFUSAL, separators=(",", ":"))),
    ]
    assert refusal_of(not_found) == NOT_FOUND_REFUSAL
    # Arguments outside the schema are the dispatcher's to refuse, as a result the model can correct itself from.
    assert refusal_of(invalid)["error"] == "invalid_arguments"


@pytest.mark.parametrize("mode", MODES)
def test_an_unknown_tool_is_a_protocol_error_and_never_reaches_the_dispatcher(mode: str) -> None:
    dispatcher = FakeToolDispatcher()
    errors: list[MCPError] = []

    async def session(client: Client) -> None:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("drop_tables", {})
        errors.append(raised.value)

    with caller(ACME_ANN):
        run(session, dispatcher, mode)
    assert (errors[0].code, errors[0].message) == (types.INVALID_PARAMS, "Unknown tool: drop_tables")
    assert dispatcher.calls == []


@pytest.mark.parametrize("claims", [None, {"iss": "quire-local", SUBJECT_CLAIM: "ann"}], ids=["no token", "no tenant"])
def test_a_call_without_a_verified_tenant_is_refused_and_never_reaches_the_dispatcher(
    claims: Mapping[str, object] | None,
) -> None:
    dispatcher = FakeToolDispatcher()

    async def session(client: Client) -> None:
        with pytest.raises(MCPError, match="no verified caller"):
            await client.call_tool("echo_file", {"fileId": "f-1"})

    with caller(claims):
        run(session, dispatcher)
    assert dispatcher.calls == []


def test_calls_run_side_by_side_in_worker_threads_each_as_its_own_caller() -> None:
    # Given a dispatcher whose calls each wait until two are waiting at once (a call made on the event loop would
    # block it, and the second call would never start: the barrier would time out)
    barrier = threading.Barrier(2, timeout=10)
    dispatcher = FakeToolDispatcher(hold=barrier.wait)
    results: dict[str, types.CallToolResult] = {}

    async def call_as(client: Client, claims: Mapping[str, object]) -> None:
        with caller(claims):
            results[str(claims[TENANT_CLAIM])] = await client.call_tool("echo_file", {"fileId": "f"})

    async def main() -> None:
        async with Client(build_server(dispatcher)) as client, anyio.create_task_group() as group:
            group.start_soon(call_as, client, ACME_ANN)
            group.start_soon(call_as, client, {**ACME_ANN, TENANT_CLAIM: "globex", SUBJECT_CLAIM: "gil"})

    anyio.run(main)
    # Then both ran at once, off the event loop's thread, and each answered its own caller
    assert {call.thread for call in dispatcher.calls}.isdisjoint({threading.current_thread().name})
    assert {tenant: result.structured_content["tenantId"] for tenant, result in results.items()} == {
        "acme": "acme",
        "globex": "globex",
    }
    assert {call.principal.subject for call in dispatcher.calls} == {"ann", "gil"}


class _Port:
    def __init__(self, claims: Mapping[str, object] | None) -> None:
        self._claims = claims

    def verify(self, token: str) -> Mapping[str, object]:
        if token == "keys-unreachable":
            raise InfrastructureUnavailable("the user pool's signing keys are unreachable: timed out")
        if self._claims is None or token != "good":
            raise Unauthenticated("invalid token: signature")
        return self._claims


def verify(claims: Mapping[str, object] | None, presented: str = "good") -> AccessToken | None:
    async def main() -> AccessToken | None:
        return await ClaimsTokenVerifier(_Port(claims)).verify_token(presented)

    return anyio.run(main)


def test_the_token_verifier_keeps_the_ports_claims_on_the_access_token() -> None:
    claims = {**ACME_ANN, "exp": "1767225600", "scope": "quire/api openid", "client_id": "app-client"}
    access = verify(claims)
    assert access is not None
    assert access.claims == claims
    assert (access.subject, access.client_id, access.scopes, access.expires_at) == (
        "ann",
        "app-client",
        ["quire/api", "openid"],
        1767225600,
    )
    # A local token names its audience rather than an app client.
    local = verify(ACME_ANN)
    assert local is not None
    assert local.client_id == "quire-api"


def test_the_token_verifier_refuses_what_the_port_refuses_and_claims_that_name_no_tenant() -> None:
    assert verify(ACME_ANN, presented="forged") is None
    assert verify({k: v for k, v in ACME_ANN.items() if k != TENANT_CLAIM}) is None
    assert verify({**ACME_ANN, TENANT_CLAIM: "../other"}) is None


def test_the_token_verifier_tells_keys_it_could_not_read_from_a_refused_token() -> None:
    # Not None (a 401: the caller's fault) but the authentication middleware's error, which the app answers 503
    with pytest.raises(SigningKeysUnavailable, match="signing keys are unreachable") as raised:
        verify(ACME_ANN, presented="keys-unreachable")
    assert isinstance(raised.value.__cause__, InfrastructureUnavailable)


def test_a_calls_input_schema_is_resolved_from_the_catalog_without_a_listing() -> None:
    server = build_server(FakeToolDispatcher())
    assert server.get_tool_input_schema is not None
    schema: Any = server.get_tool_input_schema("echo_file")
    assert schema == FAKE_TOOLS[0].input_schema()
    assert server.get_tool_input_schema("drop_tables") is None
