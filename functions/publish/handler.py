"""Pipeline step `publish`, the last of an attempt: removes its intermediate work. Wiring only."""

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import container, workflow_step
from shared.domain.steps import Published, PublishInput
from shared.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@workflow_step(PublishInput)
def handler(request: PublishInput, context: LambdaContext) -> Published:
    # `work`: what the index step read, from its output (the state machine passes it on).
    return container().pipeline.publish(request, work=request.work)
