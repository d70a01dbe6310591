"""The render function: one export per invocation (asynchronous, from the API). Wiring only."""

from typing import Any
from uuid import UUID

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import acting_for_tenant, container
from shared.domain.exports import RenderJob
from shared.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    job = RenderJob(tenant_id=str(event["tenantId"]), export_id=UUID(str(event["exportId"])))
    with acting_for_tenant(job.tenant_id):
        outcome = container().exports.render(job)
    return {"exportId": str(job.export_id), "state": outcome.value if outcome else "already-done"}
