"""One logger, one tracer, one metrics object for every function (AWS Lambda Powertools).

Structured JSON logs with the service name; the tracer is inert outside Lambda; metrics are written
as CloudWatch embedded metric format when a handler flushes them.
"""

import sys

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "quire"

# stderr: CloudWatch captures it just the same, and a CLI's stdout stays its answer (`--json`).
logger = Logger(service=SERVICE, stream=sys.stderr)
# Traced: AWS calls and SQL. Not the X-Ray SDK's default of every library it can patch, which imports each of
# them (requests, sqlite3, ...) into every cold start.
tracer = Tracer(service=SERVICE, patch_modules=("botocore", "psycopg"))
metrics = Metrics(namespace="Quire", service=SERVICE)
