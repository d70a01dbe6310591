"""Webhook deliveries (issue 34). Wiring only, two ways in:

- the SQS queue's wake-ups, `{"tenantId", "deliveryIds"}` (the relay's, a retry's, a replay's or a test's): each
  message sends those deliveries and what they unblock. A message that fails is reported alone (partial batch
  response): the others are not sent again, and the failing one goes to the dead-letter queue after the queue's
  maxReceiveCount.
- EventBridge Scheduler, every minute: every tenant's due deliveries (a wake-up that was lost, or a retry due
  later than SQS can delay a message).
"""

import time
from typing import Any
from uuid import UUID

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field

from shared.bootstrap import container
from shared.observability import logger, tracer

processor = BatchProcessor(event_type=EventType.SQS)
MARGIN_SECONDS = 5


class WakeUp(BaseModel):
    """One message of the queue (shared/adapters/aws/sqs_delivery_queue.py writes them)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    tenant_id: str = Field(alias="tenantId", min_length=1, max_length=64)
    delivery_ids: list[UUID] = Field(alias="deliveryIds", min_length=1, max_length=100)


def deliver_woken(record: SQSRecord, deadline: float | None = None) -> int:
    wake = WakeUp.model_validate_json(record.body)
    return container().webhook_deliverer.deliver_due(wake.tenant_id, wake.delivery_ids, deadline=deadline)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # No batch of sends starts that could outlast the invocation (what is left stays due for the sweep).
    deadline = time.monotonic() + context.get_remaining_time_in_millis() / 1000 - MARGIN_SECONDS
    if "Records" in event:
        return dict(
            process_partial_response(
                event=event, record_handler=lambda record: deliver_woken(record, deadline), processor=processor
            )
        )
    return {"tried": container().webhook_deliverer.deliver_all(deadline=deadline)}
