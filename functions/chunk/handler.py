"""Pipeline step `chunk` (a Step Functions task; the local runner calls the same service). Wiring only.
Cuts the extracted document into chunks stored in batches; the output lists batch numbers for the embed Map.
"""

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import container, workflow_step
from shared.domain.steps import Chunked, StepInput
from shared.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@workflow_step(StepInput)
def handler(request: StepInput, context: LambdaContext) -> Chunked:
    return container().pipeline.chunk(request)
