"""S3 "Object Created" (via EventBridge) → record the upload as stored or rejected. Wiring only."""

from typing import Any

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import S3EventNotificationEventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import acting_for_owner_of, container
from shared.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, str]:
    notification = parse(event=event, model=S3EventNotificationEventBridgeModel)
    created = notification.detail.object
    with acting_for_owner_of(created.key):
        outcome = container().upload_completion.object_created(created.key, created.version_id, int(created.size or 0))
    logger.info("object created handled", extra={"outcome": outcome.value, "bucket_event": notification.id})
    return {"outcome": outcome.value}
