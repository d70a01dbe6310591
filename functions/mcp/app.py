"""The MCP function's ASGI app, as uvicorn serves it (functions/mcp/run.sh, behind the Lambda Web Adapter).

The agent tools' dispatcher over this process's container, the bearer check the composition root builds for the
runtime (on AWS the user pool's access tokens with the JWT authorizer's checks, QUIRE_COGNITO_*), the endpoint
from QUIRE_MCP_*, and the container's per-tenant request rate (QUIRE_LIMIT_REQUESTS_PER_SECOND), which counts
every authenticated request to /mcp as the API function counts each of its own. Wiring only, built once at import
as a handler module is; uvicorn then runs its lifespan once for the sandbox's life. The local stack builds its
own (shared/local/mcp_server.py).
"""

from functions.mcp.server import create_app, endpoint_of
from functions.tools.dispatcher import ToolDispatcher
from shared.bootstrap import container

wired = container()
app = create_app(
    ToolDispatcher(wired),
    wired.token_verifier,
    endpoint_of(wired.settings),
    request_rate=wired.request_rate,
    # One call per pooled connection: more would only wait for one.
    max_concurrent_calls=wired.settings.database_pool_size,
)
