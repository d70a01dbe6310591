"""The Workflow port on AWS: one Standard Step Functions execution per processing attempt of a file version,
named after both (`v-{version}-{attempt}`)."""

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from shared.adapters.aws.retrying import LazyClient, error_code
from shared.domain.workflow import ProcessVersion, StartOutcome
from shared.ports import Workflow


class StepFunctionsWorkflow(Workflow):
    def __init__(self, client_factory: Callable[[], Any], state_machine_arn: str) -> None:
        self._client: LazyClient[Any] = LazyClient(client_factory)
        self._arn = state_machine_arn

    def start(self, request: ProcessVersion) -> StartOutcome:
        try:
            self._client.get().start_execution(
                stateMachineArn=self._arn,
                # The name makes duplicate and out-of-order events start at most one execution.
                name=request.execution_name,
                input=json.dumps(request.step_input()),
            )
        except ClientError as error:
            if error_code(error) == "ExecutionAlreadyExists":
                return StartOutcome.ALREADY_STARTED
            raise
        return StartOutcome.STARTED
