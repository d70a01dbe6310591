#!/bin/sh
# The MCP function's handler under the Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap runs this): one
# uvicorn process serving functions/mcp/app.py for the sandbox's life, so the app's lifespan runs once per sandbox
# (never per invocation: python-sdk#3121), and LWA forwards each API Gateway request to it as plain HTTP.
# LWA polls AWS_LWA_READINESS_CHECK_PATH (set it to /mcp/healthz) on AWS_LWA_PORT before the first request.
set -eu
cd "$(dirname "$0")/../.."
# The code asset is the working directory; the dependency layer is /opt/python (the runtime's own sys.path has
# both, a child process only what PYTHONPATH names).
export PYTHONPATH="$(pwd):/opt/python${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" -m uvicorn functions.mcp.app:app \
    --host 0.0.0.0 --port "${AWS_LWA_PORT:-8080}" \
    --workers 1 --lifespan on --no-access-log --timeout-graceful-shutdown 5
