"""The RenderQueue port on AWS: an asynchronous invocation of the render function (Lambda queues it, retries
a failed run twice, and the reconcile sweep re-submits anything still pending after that)."""

import json
from typing import Any

from shared.adapters.aws.retrying import LazyClient
from shared.domain.exports import RenderJob
from shared.ports import RenderQueue


class LambdaRenderQueue(RenderQueue):
    def __init__(self, lambda_client: object, function_name: str) -> None:
        self._client: LazyClient[Any] = LazyClient(lambda_client)
        self._function = function_name

    def submit(self, job: RenderJob) -> None:
        self._client.get().invoke(
            FunctionName=self._function,
            InvocationType="Event",
            Payload=json.dumps({"tenantId": job.tenant_id, "exportId": str(job.export_id)}).encode(),
        )
