"""Pipeline step `index` (a Step Functions task; the local runner calls the same service). Wiring only.

Swaps the chunks and vectors the chunk and embed steps stored into the index, in one transaction.
"""

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import container, workflow_step
from shared.domain.steps import Indexed, StepInput
from shared.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@workflow_step(StepInput)
def handler(request: StepInput, context: LambdaContext) -> Indexed:
    return container().pipeline.index(request)
