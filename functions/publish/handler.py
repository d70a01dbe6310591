"""Pipeline step `publish`, the last of an attempt: removes its intermediate work. Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import Container, workflow_step
from shared.config import load_settings
from shared.domain.workflow import ProcessVersion
from shared.observability import logger, tracer

container = Container(load_settings())


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@workflow_step
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # `work`: what the index step read, from its output (the state machine passes it on).
    return container.pipeline.publish(ProcessVersion.from_step_input(event), work=event.get("work"))
