"""Deploy-time schema migrations: the on-event handler of a CloudFormation custom resource (CDK Provider
framework). Wiring only.

Create and Update bring the schema up to date as its owner, directly against the cluster writer over TLS that
verifies the writer's certificate (migrations/certificates/rds-ca-bundle.pem); Delete does nothing, because a
deploy never drops data. A MigrationError is not caught: the framework fails the deployment with its message.
"""

import time
from typing import Any

from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import CloudFormationCustomResourceBaseModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from migrations.runner import apply_migrations, owner_url
from shared.bootstrap import ConfigurationError
from shared.config import load_settings
from shared.observability import logger, tracer

settings = load_settings()
# One schema per database: the same id on every update, so CloudFormation never replaces (deletes) it.
PHYSICAL_RESOURCE_ID = "quire-schema"
# Left of the function's time when backfills stop: the migrations after them, the answer to CloudFormation.
BACKFILL_MARGIN_SECONDS = 120


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse(event=event, model=CloudFormationCustomResourceBaseModel)
    if request.request_type == "Delete":
        return {"PhysicalResourceId": event.get("PhysicalResourceId") or PHYSICAL_RESOURCE_ID}
    # Backfills stop in time for the call to answer: one cut short by the 15 minutes would fail the deployment, and
    # its rollback would run it again. What is left is resumed by the next run (docs/deployment.md#migrations).
    deadline = time.monotonic() + context.get_remaining_time_in_millis() / 1000 - BACKFILL_MARGIN_SECONDS
    report = apply_migrations(
        _owner_url(), embedding_dimension=settings.embedding_dimension, backfill_deadline=deadline
    )
    logger.info(
        "schema migrated",
        extra={
            "applied": report.applied,
            "already_applied": len(report.already_applied),
            "backfilled": report.backfilled,
            "unfinished_backfills": report.unfinished,
        },
    )
    return {"PhysicalResourceId": PHYSICAL_RESOURCE_ID, "Data": {"Applied": str(len(report.applied))}}


def _owner_url() -> str:
    secret_arn, host, name = settings.database_owner_secret_arn, settings.database_host, settings.database_name
    if secret_arn is None or host is None or name is None:
        raise ConfigurationError(
            "migrating needs QUIRE_DATABASE_OWNER_SECRET_ARN, QUIRE_DATABASE_HOST and QUIRE_DATABASE_NAME"
        )
    # Read on every run, never cached: RDS rotates the owner's password.
    owner: dict[str, str] = parameters.get_secret(secret_arn, transform="json", force_fetch=True)
    return owner_url(
        host=host, port=settings.database_port, dbname=name, user=owner["username"], password=owner["password"]
    )
