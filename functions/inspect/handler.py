"""Pipeline step `inspect` (a Step Functions task; the local runner calls the same service). Wiring only.

Input and output are references (tenant, file, version ids), never document content.
"""

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import container, workflow_step
from shared.domain.steps import Claimed, StepInput
from shared.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@workflow_step(StepInput)
def handler(request: StepInput, context: LambdaContext) -> Claimed:
    return container().pipeline.inspect(request)
