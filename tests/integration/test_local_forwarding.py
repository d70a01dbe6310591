"""The local API's forwarding to the MCP server (shared/local/http_api.py:Forwarding) over real loopback sockets: a
thread's requests share one kept-alive connection while it is fresh, a stale one is never reused, and the MCP
server's sockets are TCP ones asyncio sets TCP_NODELAY on (without it, each answer's body waited for a delayed
ACK)."""

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from shared.local import http_api
from shared.local.http_api import Forwarding
from shared.local.mcp_server import LocalMcpServer


class _ClientPorts(BaseHTTPRequestHandler):
    """Answers each POST with the port of the connection it came on."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = str(self.client_address[1]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def behind() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ClientPorts)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _port_used(forwarding: Forwarding) -> bytes:
    status, _, body = forwarding.send("POST", "/mcp", [("Host", "127.0.0.1")], b"{}")
    assert status == 200
    return body


def test_a_thread_s_forwarded_requests_share_one_connection_while_it_is_fresh(behind: int) -> None:
    forwarding = Forwarding(paths=("/mcp",), host="127.0.0.1", port=behind)
    first, second = _port_used(forwarding), _port_used(forwarding)
    assert first == second
    # Another thread (another client connection of the API) has a connection of its own.
    other: list[bytes] = []
    thread = threading.Thread(target=lambda: other.append(_port_used(forwarding)))
    thread.start()
    thread.join()
    assert other and other[0] != first


def test_a_connection_idle_past_the_reuse_window_is_closed_and_a_new_one_opened(
    behind: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_api, "REUSE_IDLE_SECONDS", 0.0)
    forwarding = Forwarding(paths=("/mcp",), host="127.0.0.1", port=behind)
    assert _port_used(forwarding) != _port_used(forwarding)


def test_the_mcp_server_listens_on_a_socket_asyncio_reads_as_tcp() -> None:
    async def app(scope: dict[str, object], receive: object, send: object) -> None:
        return None

    server = LocalMcpServer(app)  # type: ignore[arg-type]  # no lifespan or request is served here
    server.start()
    try:
        listening = server._socket
        assert listening is not None and listening.proto == socket.IPPROTO_TCP
    finally:
        server.stop()
