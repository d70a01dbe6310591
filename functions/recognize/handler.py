"""Pipeline step `recognize` (a Step Functions task; the local runner calls the same service). Wiring only.

OCR reads the pages without a text layer (and a vision model describes an image). Without `ocrJob` in its
input it starts the read; with one (a job the engine is still running) it polls it once. Output carries
`ocrJob` while the job runs, so the state machine waits and calls again; never the document's content.
"""

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import container, workflow_step
from shared.domain.steps import RecognitionInput, Recognized
from shared.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@workflow_step(RecognitionInput)
def handler(request: RecognitionInput, context: LambdaContext) -> Recognized:
    return container().pipeline.recognize(request)
