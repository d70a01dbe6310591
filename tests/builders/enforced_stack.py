"""The dev stack deployed into moto and run under IAM enforcement, as one harness for the tests that run the
pipeline from what CloudFormation resolved (docs/testing.md, "Handlers under IAM enforcement").

`enforced_deployment(...)` deploys the cloud assembly (tests/builders/moto_stack.py), runs each function with its
resolved environment and its own role's session (tests/builders/deployed_functions.py), and authorizes every call
against the deployed policies (tests/builders/iam_judge.py); `EnforcedStack` is what a test drives: API Gateway's and
EventBridge's invocations, the browser's upload, the executions and the versions as they end.
"""

import json
import secrets
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import psycopg
import pytest
import requests
from moto import mock_aws
from moto.cloudformation.parsing import get_model_map
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction

from shared.adapters.local.onnx_embeddings import OnnxMiniLmEmbedder
from shared.adapters.local.rapid_ocr import RapidOcr
from shared.bootstrap import Container
from shared.domain.files import FileVersionRecord
from shared.local.http_api import build_http_v2_event
from shared.local.s3_server import object_created_event
from tests.builders.deployed_functions import DeployedFunctions, bedrock_answered_by, client, invoked_through_moto
from tests.builders.iam_judge import IamJudge, enforced
from tests.builders.moto_stack import REGION, DeployedFunction, DeployedStack, deploy

# The steps a document with a text layer runs through, in order.
TEXT_DOCUMENT_STEPS = ["inspect", "extract", "chunk", "embed", "index", "publish"]
# What API Gateway's JWT authorizer hands the API function from a Cognito token (shared/domain/auth.py).
CLAIMS = {
    "sub": "ann",
    "custom:tenant_id": "acme",
    "custom:collections": "docs",
    "custom:write_collections": "docs",
    "custom:admin_collections": "docs",
}


@dataclass
class EnforcedStack:
    stack: DeployedStack
    functions: DeployedFunctions
    judge: IamJudge
    admin: boto3.Session
    # The database's owner connection, for a test that moves time (set by the fixture).
    owner_url: str = ""

    @property
    def bucket(self) -> str:
        return self.stack.outputs["OriginalsBucketName"]

    def handler(self, name: str) -> DeployedFunction:
        """The function whose handler is functions/<name>/handler.py (`mcp`: the MCP server's function, whose
        handler is its run.sh behind the Lambda Web Adapter)."""
        return self.stack.function("functions/mcp/run.sh" if name == "mcp" else f"functions.{name}.handler.handler")

    def container(self, name: str) -> Container:
        """The container function `name` runs with (a test patches a part of one function's)."""
        return self.functions.container(self.handler(name))

    @contextmanager
    def acting(self, name: str) -> Iterator[Container]:
        """Code of the test's own run as function `name` would: its role's credentials, its container."""
        with self.functions.acting(self.handler(name)) as container:
            yield container

    def executions(self, version_id: str) -> list[dict[str, Any]]:
        sfn = client(self.admin, "stepfunctions")
        listed = sfn.list_executions(stateMachineArn=self.stack.state_machine_arn)["executions"]
        return [e for e in listed if version_id in e["name"]]

    def wait(self, execution_arn: str, timeout: float = 240) -> dict[str, Any]:
        """The execution once it has ended."""
        sfn = client(self.admin, "stepfunctions")
        deadline = time.monotonic() + timeout
        while (described := sfn.describe_execution(executionArn=execution_arn))["status"] == "RUNNING":
            assert time.monotonic() < deadline, f"{execution_arn} still running after {timeout} s"
            time.sleep(0.2)
        result: dict[str, Any] = described
        return result

    def history_errors(self, execution_arn: str) -> list[str]:
        history = client(self.admin, "stepfunctions").get_execution_history(executionArn=execution_arn, maxResults=1000)
        # A task whose Resource is the function's ARN reports LambdaFunctionFailed; an SDK integration TaskFailed.
        details = ("lambdaFunctionFailedEventDetails", "taskFailedEventDetails")
        return [event[key]["error"] for event in history["events"] for key in details if key in event]

    def version(self, version_id: uuid.UUID | str) -> FileVersionRecord:
        found = self.container("api").file_metadata.find_version("acme", uuid.UUID(str(version_id)))
        assert found is not None
        return found[1]

    def age(self, version_id: uuid.UUID, seconds: float) -> None:
        """Move a version's last change into the past, as if that much time had gone by."""
        with psycopg.connect(self.owner_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE file_versions SET updated_at = updated_at - make_interval(secs => %s),"
                " processing_requested_at = processing_requested_at - make_interval(secs => %s)"
                " WHERE version_id = %s",
                (seconds, seconds, version_id),
            )

    def wait_until_no_execution_runs(self, timeout: float = 120) -> None:
        """A test that failed early may leave an execution running: let it end before the stack does."""
        sfn = client(self.admin, "stepfunctions")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = sfn.list_executions(stateMachineArn=self.stack.state_machine_arn, statusFilter="RUNNING")
            if not running["executions"]:
                return
            time.sleep(0.5)

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        """API Gateway invoking the API function with an HTTP API event, the JWT authorizer's claims in it."""
        event = build_http_v2_event(
            method=method,
            target=path,
            headers=[("content-type", "application/json"), ("host", "api.quire.example.com")],
            body=json.dumps(body).encode() if body is not None else b"",
            source_ip="203.0.113.15",
            claims=CLAIMS,
        )
        answer = self.invoke(self.handler("api"), event)
        return answer["statusCode"], json.loads(answer.get("body") or "{}")

    def invoke(self, function: Any, event: dict[str, Any]) -> dict[str, Any]:
        """A service (API Gateway, EventBridge) invoking `function` through Lambda's API; it must not fail."""
        payload, error = self.invoked(function, event)
        assert error is None, payload
        return payload

    def invoked(self, function: Any, event: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The function's answer, and the error Lambda reported ("Unhandled") when it raised."""
        answer = client(self.admin, "lambda").invoke(FunctionName=function.name, Payload=json.dumps(event))
        payload: dict[str, Any] = json.loads(answer["Payload"].read())
        return payload, answer.get("FunctionError")

    def upload(self, filename: str, media_type: str, content: bytes) -> tuple[str, dict[str, Any]]:
        """POST /v1/uploads, then the presigned POST as a browser sends it; S3's Object Created event for it."""
        ticket, posted = self.post(filename, media_type, content)
        assert posted.status_code in (200, 201, 204), posted.text
        key = ticket["upload"]["fields"]["key"]
        head = client(self.admin, "s3").head_object(Bucket=self.bucket, Key=key)
        event = object_created_event(self.bucket, key, head.get("VersionId"), len(content), head["ETag"].strip('"'))
        return ticket["versionId"], event

    def post(self, filename: str, media_type: str, content: bytes) -> tuple[dict[str, Any], requests.Response]:
        """The upload's ticket from the API, and S3's answer to the browser's form POST."""
        status, ticket = self.api(
            "POST",
            "/v1/uploads",
            {"collectionId": "docs", "filename": filename, "mediaType": media_type, "byteSize": len(content)},
        )
        assert status == 201, ticket
        upload = ticket["upload"]
        posted = requests.post(upload["url"], data=upload["fields"], files={"file": ("upload", content)}, timeout=30)
        return ticket, posted

    def deliver(self, event: dict[str, Any]) -> dict[str, Any]:
        """EventBridge invoking on_object_created, its rule's target."""
        return self.invoke(self.handler("on_object_created"), event)

    def run(self, filename: str, media_type: str, content: bytes) -> tuple[FileVersionRecord, dict[str, Any]]:
        version_id, event = self.upload(filename, media_type, content)
        assert self.deliver(event) == {"outcome": "stored"}
        return self.finished(version_id)

    def finished(self, version_id: str) -> tuple[FileVersionRecord, dict[str, Any]]:
        """The version's one execution, once it has ended, and the version as it ended."""
        (execution,) = self.executions(version_id)
        ended = self.wait(execution["executionArn"])
        return self.version(version_id), ended


def _admin(session: boto3.Session) -> boto3.Session:
    """An IAM user allowed everything: the test's own hand (and EventBridge's) once enforcement is on."""
    iam = client(session, "iam")
    name = f"quire-test-admin-{secrets.token_hex(3)}"
    iam.create_user(UserName=name)
    iam.put_user_policy(
        UserName=name,
        PolicyName="everything",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        ),
    )
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return boto3.Session(
        aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"], region_name=REGION
    )


class _NoSleep:
    @staticmethod
    def sleep(seconds: float) -> None:
        return None


@contextmanager
def enforced_deployment(assembly: Path, app_url: str, work: Path, *, stack_name: str) -> Iterator[EnforcedStack]:
    """The assembly deployed into moto as `stack_name` and run under IAM enforcement, over the database at
    `app_url` (migrated at the dimension the functions embed at, QUIRE_EMBEDDING_DIMENSION)."""
    # Other modules' S3 servers keep their data in moto's process-wide backend: nothing is reset or removed.
    mock = mock_aws(config={"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}})
    mock.start(reset=False)
    functions, stack = None, None
    try:
        admin = _admin(boto3.Session(region_name=REGION))
        stack = deploy(
            assembly,
            work,
            supported=lambda kind: kind in get_model_map(),
            stack_name=stack_name,
            clients=lambda service: client(admin, service),
        )
        # The bucket policies are the judge's to apply: moto's S3 reads any condition (aws:SecureTransport
        # among them) as an explicit Deny, so they are not put into moto's buckets.
        bucket_policies = {
            bucket: policy.document["Statement"]
            for policy in stack.resource_policies
            if policy.resource_type == "AWS::S3::BucketPolicy"
            for bucket in policy.targets
        }
        client(admin, "stepfunctions").create_state_machine(
            name=stack.state_machine_arn.rsplit(":", 1)[-1],
            definition=json.dumps(stack.definition),
            roleArn=stack.state_machine_role_arn,
        )
        recognize = stack.function("functions.recognize.handler.handler")
        judge = IamJudge(bucket_policies=bucket_policies)
        functions = DeployedFunctions(stack, app_url, admin, judge, given={recognize.logical_id: {"ocr": RapidOcr()}})
        functions.prepare()
        # Step Functions assumes the state machine's role to invoke the tasks.
        credentials = client(admin, "sts").assume_role(RoleArn=stack.state_machine_role_arn, RoleSessionName="states")
        state_machine = boto3.Session(
            aws_access_key_id=credentials["Credentials"]["AccessKeyId"],
            aws_secret_access_key=credentials["Credentials"]["SecretAccessKey"],
            aws_session_token=credentials["Credentials"]["SessionToken"],
            region_name=REGION,
        )
        embedder = OnnxMiniLmEmbedder(dimension=384)
        with (
            pytest.MonkeyPatch.context() as patch,
            invoked_through_moto(functions, state_machine),
            bedrock_answered_by(embedder.embed),
            enforced(judge),
        ):
            # Time only: no back-off sleeps between retries, no Waits between OCR polls.
            patch.setattr(retrier_decl, "time", _NoSleep())
            patch.setattr(WaitFunction, "_wait_interval", lambda self, env, wait_seconds: None)
            enforced_stack = EnforcedStack(stack, functions, judge, admin)
            try:
                yield enforced_stack
            finally:
                enforced_stack.wait_until_no_execution_runs()
    finally:
        if functions is not None:
            functions.close()
        if stack is not None:
            stack.release_names(client(boto3.Session(), "logs"))
        mock.stop(remove_data=False)
