"""The state machine's Catch: record on the version that the infrastructure failed a step. Wiring only.

Input: the execution's references, `failedStep` (the state that failed) and `error` as Step Functions
catches it (`Error`, `Cause`). The execution then ends FAILED; the sweep starts a new attempt later.
"""

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
    caught = event.get("error") or {}
    return container.pipeline.record_infrastructure_failure(
        ProcessVersion.from_step_input(event),
        step=str(event.get("failedStep", "unknown")),
        error=str(caught.get("Error", "unknown")),
        cause=str(caught.get("Cause", "")),
        # Present when publish failed: the index step's output, naming the work to remove.
        work=event.get("work"),
    )
