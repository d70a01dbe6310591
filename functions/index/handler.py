"""Pipeline step `index` (a Step Functions task; the local runner calls the same service). Wiring only.

Chunks the extracted document, embeds the chunks and swaps them in; input and output are references.
"""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import Container
from shared.config import load_settings
from shared.domain.workflow import ProcessVersion
from shared.observability import logger, tracer

container = Container(load_settings())


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return container.pipeline.index(ProcessVersion.from_step_input(event))
