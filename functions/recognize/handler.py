"""Pipeline step `recognize` (a Step Functions task; the local runner calls the same service). Wiring only.

OCR reads the pages without a text layer (and a vision model describes an image). Without `ocrJob` in its
input it starts the read; with one (a job the engine is still running) it polls it once. Output carries
`ocrJob` while the job runs, so the state machine waits and calls again; never the document's content.
"""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import Container, workflow_step
from shared.config import load_settings
from shared.domain.recognition import RecognitionJob
from shared.domain.workflow import ProcessVersion
from shared.observability import logger, tracer

container = Container(load_settings())


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@workflow_step
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = ProcessVersion.from_step_input(event)
    job = event.get("ocrJob")
    if job:
        return container.pipeline.collect_recognition(
            request, RecognitionJob.model_validate(job), polls=int(event.get("ocrPolls", 0))
        )
    return container.pipeline.recognize(request)
