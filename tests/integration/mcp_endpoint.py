"""The MCP endpoint on the integration stack, wired as shared/local/supervisor.py wires it: the MCP app in uvicorn
over a container, and a local API of its own that forwards /mcp (and its metadata document) there."""

from collections.abc import Iterator
from contextlib import contextmanager

from functions.api import handler as api_handler
from shared.adapters.local.jwt_tokens import LocalTokenVerifier
from shared.bootstrap import Container
from shared.config import Settings
from shared.local.embedded_postgres import free_port
from shared.local.http_api import LocalHttpApi
from shared.local.mcp_server import LocalMcpServer, local_mcp_app
from tests.integration.files_stack import SECRET


@contextmanager
def mcp_endpoint(container: Container) -> Iterator[str]:
    """The local API's base URL: `<base>/mcp` is the MCP endpoint over `container`'s tools, `<base>/v1/...` the API
    (over whichever container the API handler is given), both checking the integration stack's tokens."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    verifier = LocalTokenVerifier(SECRET)
    mcp = LocalMcpServer(local_mcp_app(container, verifier, base, Settings()))
    mcp.start()
    try:
        api = LocalHttpApi(
            api_handler.handler,
            verifier,
            public_routes=api_handler.UNAUTHENTICATED_ROUTES,
            port=port,
            forwarding=mcp.forwarding(),
        )
        api.start()
        try:
            yield api.base_url
        finally:
            api.stop()
    finally:
        mcp.stop()
