"""Scheduled reconciliation (EventBridge Scheduler). Wiring only."""

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import Container
from shared.config import load_settings
from shared.observability import logger, tracer

container = Container(load_settings())


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return container.reconciler.run(datetime.now(UTC)).as_dict()
