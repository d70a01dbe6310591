import json

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from shared.adapters.aws.step_functions_workflow import StepFunctionsWorkflow
from shared.domain.workflow import ProcessVersion, StartOutcome

ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:quire-dev-ingest"
REQUEST = ProcessVersion(tenant_id="acme", file_id="f-1", version_id="0b8e1c52-7d3f-4f5e-8f0a-1a2b3c4d5e6f")


def stubbed() -> tuple[StepFunctionsWorkflow, Stubber]:
    client = boto3.client("stepfunctions", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    return StepFunctionsWorkflow(lambda: client, ARN), Stubber(client)


def test_a_version_starts_one_execution_named_after_it_with_references_only() -> None:
    workflow, stub = stubbed()
    stub.add_response(
        "start_execution",
        {"executionArn": f"{ARN}:v-1", "startDate": "2026-11-29T00:00:00Z"},
        {
            "stateMachineArn": ARN,
            "name": "v-0b8e1c52-7d3f-4f5e-8f0a-1a2b3c4d5e6f-1",
            "input": json.dumps(
                {
                    "tenantId": "acme",
                    "fileId": "f-1",
                    "versionId": REQUEST.version_id,
                    "attempt": 1,
                    "rescan": False,
                    "reindex": False,
                }
            ),
        },
    )
    with stub:
        assert workflow.start(REQUEST) is StartOutcome.STARTED
    stub.assert_no_pending_responses()


def test_a_duplicate_start_is_success_not_an_error() -> None:
    workflow, stub = stubbed()
    stub.add_client_error("start_execution", service_error_code="ExecutionAlreadyExists", http_status_code=400)
    with stub:
        assert workflow.start(REQUEST) is StartOutcome.ALREADY_STARTED


def test_throttling_is_raised_for_the_caller_to_retry() -> None:
    workflow, stub = stubbed()
    stub.add_client_error("start_execution", service_error_code="ThrottlingException", http_status_code=400)
    with stub, pytest.raises(ClientError):
        workflow.start(REQUEST)
