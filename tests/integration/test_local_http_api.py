"""The API Lambda handler behind the local HTTP adapter, against the real database, over real HTTP."""

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from shared.adapters.local.jwt_tokens import LocalTokenIssuer, LocalTokenVerifier
from shared.adapters.postgres.database import Database
from shared.bootstrap import Container, adapters_for, overridden
from shared.config import Settings
from shared.domain.auth import Principal
from shared.local.http_api import LocalHttpApi
from tests.integration.conftest import MigratedDatabase

SECRET = b"integration-secret-0123456789abc"


@pytest.fixture
def api_url(migrated_database: MigratedDatabase) -> Iterator[str]:
    from functions.api import handler as api_handler

    container = Container(Settings(runtime="local", database_url=migrated_database.app_url))
    api = LocalHttpApi(
        api_handler.handler,
        LocalTokenVerifier(SECRET),
        public_routes=api_handler.UNAUTHENTICATED_ROUTES,
        port=0,
    )
    with overridden(container):
        api.start()
        try:
            yield api.base_url
        finally:
            api.stop()
            container.database.close()


def unreachable_database() -> Container:
    """A container whose database is nowhere (port 1 on loopback), giving up on a connection after 2 s."""
    settings = Settings(runtime="local", database_url="postgresql://quire_app:pw@127.0.0.1:1/quire")
    database = Database(settings.database_url.get_secret_value(), wait_seconds=2)  # type: ignore[union-attr]
    return Container(settings, adapters_for(settings, database=database))


def get(url: str, token: str | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_health_reaches_the_database_as_the_application_role(api_url: str) -> None:
    assert get(f"{api_url}/v1/health") == (200, {"status": "ok", "database": "ok"})


def test_health_reports_an_unreachable_database_without_leaking_its_url(api_url: str) -> None:
    with overridden(unreachable_database()):
        status, body = get(f"{api_url}/v1/health")
    assert (status, body) == (503, {"status": "degraded", "database": "unreachable"})


def test_a_route_whose_database_does_not_answer_is_a_503_to_retry_never_a_500(api_url: str) -> None:
    token = LocalTokenIssuer(SECRET).issue(Principal(tenant_id="acme", subject="ann", collections=frozenset({"hr"})))
    request = urllib.request.Request(f"{api_url}/v1/files", headers={"Authorization": f"Bearer {token}"})
    with overridden(unreachable_database()), pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 503 and refused.value.headers["Retry-After"] == "2"
    body = json.loads(refused.value.read())
    assert body["error"] == "unavailable" and "try again" in body["message"]
    assert "127.0.0.1:1" not in json.dumps(body) and "postgresql" not in json.dumps(body)


def test_protected_routes_need_a_valid_token(api_url: str) -> None:
    good = LocalTokenIssuer(SECRET).issue(Principal(tenant_id="acme", subject="ann", collections=frozenset({"hr"})))
    forged = LocalTokenIssuer(b"another-secret-0123456789abcdefg").issue(
        Principal(tenant_id="acme", subject="eve", collections=frozenset({"hr"}))
    )
    assert get(f"{api_url}/v1/me") == (401, {"message": "Unauthorized"})
    assert get(f"{api_url}/v1/me", forged) == (401, {"message": "Unauthorized"})
    assert get(f"{api_url}/v1/me", good) == (
        200,
        {"tenantId": "acme", "subject": "ann", "collections": ["hr"], "roles": {"hr": "read"}},
    )


def raw_exchange(base_url: str, request: bytes) -> bytes:
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


def test_a_chunked_body_is_refused_and_never_read_as_a_second_request(api_url: str) -> None:
    smuggled = b"GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n"
    request = (
        b"POST /v1/health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        + f"{len(smuggled):x}\r\n".encode()
        + smuggled
        + b"\r\n0\r\n\r\n"
    )
    response = raw_exchange(api_url, request)
    assert response.startswith(b"HTTP/1.1 411")
    assert response.count(b"HTTP/1.1 ") == 1


def test_a_negative_content_length_is_refused_without_waiting_for_the_stream_to_end(api_url: str) -> None:
    response = raw_exchange(api_url, b"POST /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\nabc")
    assert response.startswith(b"HTTP/1.1 400")


def test_control_bytes_in_a_request_line_reach_the_log_escaped_never_raw(
    api_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a request line carrying an ANSI escape sequence (it would recolour a terminal tailing the log)
    with caplog.at_level("INFO", logger="shared.local.http_api"):
        raw_exchange(api_url, b"GET /v1/health\x1b[31mX\x9b2J HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    # Then the request is logged, with every control character written as \xNN
    [line] = [record.getMessage() for record in caplog.records if "/v1/health" in record.getMessage()]
    assert "\\x1b[31mX\\x9b2J" in line
    assert not any(character in line for character in "\x1b\x9b\r\n")
