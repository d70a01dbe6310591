"""The MCP endpoint on the local stack: the ASGI app of functions/mcp, served by uvicorn in a thread on a loopback
port, and reached through the local API's base URL (LocalHttpApi forwards /mcp and its metadata document here),
as API Gateway routes /mcp to the MCP function on AWS.

uvicorn runs the app's lifespan once, when the stack starts, as it does for an AWS sandbox's life.
"""

import socket
import threading
import time
from typing import TYPE_CHECKING

import uvicorn

from shared.local.http_api import FORWARDED_KEEP_ALIVE_SECONDS, Forwarding

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from shared.bootstrap import Container
    from shared.config import Settings
    from shared.ports import TokenVerifier

START_TIMEOUT_SECONDS = 30
STOP_TIMEOUT_SECONDS = 15
# What the local API forwards: the endpoint (and the readiness path under it) and its RFC 9728 metadata document.
FORWARDED_PATHS = ("/mcp", "/.well-known/oauth-protected-resource/mcp")


def local_mcp_app(
    container: "Container", verifier: "TokenVerifier", api_base_url: str, settings: "Settings"
) -> "ASGIApp":
    """The MCP app for a local API at `api_base_url`: its resource URL is `<api>/mcp`, as a client reaches it.

    There is no local OAuth authorization server (tokens come from `quire token`); the metadata names the API
    itself unless QUIRE_MCP_ISSUER_URL says otherwise. Each request is one of its tenant's against the
    container's request rate, as on AWS."""
    from functions.mcp.server import Endpoint, create_app
    from functions.tools.dispatcher import ToolDispatcher

    endpoint = Endpoint(
        resource_url=f"{api_base_url}/mcp",
        issuer_url=settings.mcp_issuer_url or api_base_url,
        allowed_hosts=settings.mcp_allowed_hosts,
        allowed_origins=settings.mcp_allowed_origins,
    )
    return create_app(
        ToolDispatcher(container),
        verifier,
        endpoint,
        request_rate=container.request_rate,
        max_concurrent_calls=settings.database_pool_size,
    )


class LocalMcpServer:
    def __init__(self, app: "ASGIApp", *, port: int = 0) -> None:
        self._app = app
        self._port = port
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._socket is None:
            raise RuntimeError("the local MCP server is not started")
        port: int = self._socket.getsockname()[1]
        return port

    def forwarding(self) -> Forwarding:
        """What the local API hands to this server."""
        return Forwarding(paths=FORWARDED_PATHS, host="127.0.0.1", port=self.port)

    def start(self) -> None:
        # Bound here, so the port is known (and held) before uvicorn runs.
        # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without it each
        # answer's body waited about 40 ms for the client's delayed ACK of its headers (Nagle's algorithm).
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(("127.0.0.1", self._port))
        self._socket = listening
        config = uvicorn.Config(
            self._app,
            lifespan="on",
            # Leave the process's logging alone (uvicorn's default config would replace the supervisor's).
            log_config=None,
            access_log=False,
            # The local API in front adds the Date and Server headers, and forwards nothing else to trust.
            server_header=False,
            date_header=False,
            proxy_headers=False,
            timeout_graceful_shutdown=5,
            # The local API reuses its connections here for less than this (http_api.REUSE_IDLE_SECONDS).
            timeout_keep_alive=FORWARDED_KEEP_ALIVE_SECONDS,
        )
        server = uvicorn.Server(config)
        self._server = server
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [listening]}, name="quire-local-mcp", daemon=True
        )
        self._thread = thread
        thread.start()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the local MCP server did not start (its lifespan failed; see the log above)")
            time.sleep(0.02)

    def stop(self) -> None:
        server, thread, listening = self._server, self._thread, self._socket
        self._server = self._thread = self._socket = None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout=STOP_TIMEOUT_SECONDS)
        if listening is not None:
            listening.close()
