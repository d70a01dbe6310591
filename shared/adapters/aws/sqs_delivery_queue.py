"""The DeliveryQueue port on AWS: one SQS message per wake-up, `{"tenantId", "deliveryIds"}`, delayed up to SQS's
15 minutes for a retry (a longer wait is found by the delivery function's scheduled sweep). The queue's redrive
policy moves a message the function failed on repeatedly to its dead-letter queue."""

import json
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from shared.adapters.aws.retrying import LazyClient
from shared.ports import DeliveryQueue

MAX_DELAY_SECONDS = 900


class SqsDeliveryQueue(DeliveryQueue):
    def __init__(self, sqs_client: object, queue_url: str) -> None:
        self._client: LazyClient[Any] = LazyClient(sqs_client)
        self._queue_url = queue_url

    def wake(self, tenant_id: str, delivery_ids: Sequence[UUID], *, delay_seconds: int = 0) -> None:
        if delay_seconds > MAX_DELAY_SECONDS:
            return  # the scheduled sweep sends it when it is due
        for start in range(0, len(delivery_ids), 100):
            self._client.get().send_message(
                QueueUrl=self._queue_url,
                MessageBody=json.dumps(
                    {"tenantId": tenant_id, "deliveryIds": [str(i) for i in delivery_ids[start : start + 100]]}
                ),
                DelaySeconds=max(0, delay_seconds),
            )
