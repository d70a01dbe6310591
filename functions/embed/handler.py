"""Pipeline step `embed`: one task of the state machine's Map, embedding one batch of chunks. Wiring only.
Input: the version's references and `batch` (a number); the vectors go to storage, never into the state.
"""

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import container, workflow_step
from shared.domain.steps import Embedded, EmbedInput
from shared.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@workflow_step(EmbedInput)
def handler(request: EmbedInput, context: LambdaContext) -> Embedded:
    return container().pipeline.embed(request, request.batch)
