"""The state machine's Catch: record on the version that the infrastructure failed a step. Wiring only.

Input: the execution's references, `failedStep` (the state that failed) and `error` as Step Functions
catches it (`Error`, `Cause`). The execution then ends FAILED; the sweep starts a new attempt later.
"""

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import container, workflow_step
from shared.domain.steps import CaughtFailure, InterruptionRecorded
from shared.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@workflow_step(CaughtFailure)
def handler(request: CaughtFailure, context: LambdaContext) -> InterruptionRecorded:
    # `work` is present when publish failed: the index step's output, naming the work to remove.
    return container().pipeline.record_infrastructure_failure(request)
