"""The ingestion pipeline run from the deployed dev template under IAM enforcement.

The template is deployed into moto's CloudFormation (tests/builders/moto_stack.py); the state machine runs the
definition CloudFormation resolved, each function runs with its resolved environment and its own role's session
(tests/builders/deployed_functions.py), and every call to AWS is authorized against the policies CloudFormation
created (tests/builders/iam_judge.py). A grant the stack forgot is an AccessDenied here: the second half takes one
grant away from each function and shows the run failing on it.
"""

import json
import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
from moto import mock_aws
from moto.cloudformation.parsing import get_model_map
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction

from migrations.runner import apply_migrations
from shared.adapters.local.onnx_embeddings import OnnxMiniLmEmbedder
from shared.adapters.local.rapid_ocr import RapidOcr
from shared.domain.files import FileVersionRecord, ProcessingState
from shared.local import scan_corpus
from shared.local.http_api import build_http_v2_event
from shared.local.s3_server import object_created_event
from shared.local.supervisor import app_url_from_owner, set_app_role_password
from tests.builders.deployed_functions import DeployedFunctions, bedrock_answered_by, client, invoked_through_moto
from tests.builders.iam_judge import IamJudge, enforced, grant_removed
from tests.builders.moto_stack import REGION, DeployedStack, deploy
from tests.builders.pdf import pdf_of
from tests.conftest import load_event
from tests.integration.conftest import drop_role

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

    @property
    def bucket(self) -> str:
        return self.stack.outputs["OriginalsBucketName"]

    def handler(self, name: str) -> Any:
        return self.stack.function(f"functions.{name}.handler.handler")

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
        sfn = client(self.admin, "stepfunctions")
        (execution,) = [
            e
            for e in sfn.list_executions(stateMachineArn=self.stack.state_machine_arn)["executions"]
            if version_id in e["name"]
        ]
        deadline = time.monotonic() + 240
        while (described := sfn.describe_execution(executionArn=execution["executionArn"]))["status"] == "RUNNING":
            assert time.monotonic() < deadline, f"{version_id} still running"
            time.sleep(0.2)
        found = self.functions.container(self.handler("api")).file_metadata.find_version("acme", uuid.UUID(version_id))
        assert found is not None
        return found[1], described


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


@pytest.fixture(scope="module")
def enforced_stack(
    dev_assembly: Path,
    aws_credentials: None,
    postgres_owner_url: str,
    new_database: Callable[[], str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[EnforcedStack]:
    owner_url = new_database()
    role = f"quire_app_iam_{secrets.token_hex(4)}"
    # The dimension the deployed functions embed at (QUIRE_EMBEDDING_DIMENSION, resolved from the template).
    apply_migrations(owner_url, embedding_dimension=1024, app_role=role)
    password = secrets.token_urlsafe(16)
    set_app_role_password(owner_url, password, role=role)
    app_url = app_url_from_owner(owner_url, password, role=role)
    mock = mock_aws(config={"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}})
    mock.start(reset=False)
    functions, stack = None, None
    try:
        admin = _admin(boto3.Session(region_name=REGION))
        stack = deploy(
            dev_assembly,
            tmp_path_factory.mktemp("assets"),
            supported=lambda kind: kind in get_model_map(),
            stack_name="Quire-dev-iam",
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
        sfn = client(admin, "stepfunctions")
        sfn.create_state_machine(
            name=stack.state_machine_arn.rsplit(":", 1)[-1],
            definition=json.dumps(stack.definition),
            roleArn=stack.state_machine_role_arn,
        )
        recognize = stack.function("functions.recognize.handler.handler")
        judge = IamJudge(bucket_policies=bucket_policies)
        functions = DeployedFunctions(stack, app_url, admin, judge, given={recognize.logical_id: {"ocr": RapidOcr()}})
        functions.prepare()
        credentials = client(admin, "sts").assume_role(RoleArn=stack.state_machine_role_arn, RoleSessionName="states")[
            "Credentials"
        ]
        state_machine = boto3.Session(
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
            region_name=REGION,
        )
        embedder = OnnxMiniLmEmbedder(dimension=384)
        with (
            pytest.MonkeyPatch.context() as patch,
            invoked_through_moto(functions, state_machine),
            bedrock_answered_by(embedder.embed),
            enforced(judge),
        ):
            patch.setattr(retrier_decl, "time", _NoSleep())
            patch.setattr(WaitFunction, "_wait_interval", lambda self, env, wait_seconds: None)
            yield EnforcedStack(stack, functions, judge, admin)
    finally:
        if functions is not None:
            functions.close()
        if stack is not None:
            stack.release_names(client(boto3.Session(), "logs"))
        mock.stop(remove_data=False)
        drop_role(owner_url, role)


def test_a_text_pdf_is_indexed_with_every_call_allowed_by_the_deployed_policies(enforced_stack: EnforcedStack) -> None:
    content = pdf_of("Ballast water. The Oresund ferry exchanges ballast water only beyond the shelf edge.")
    version, execution = enforced_stack.run("ballast.pdf", "application/pdf", content)
    assert execution["status"] == "SUCCEEDED", execution
    assert enforced_stack.judge.refused() == []
    assert version.processing_state is ProcessingState.INDEXED
    assert enforced_stack.functions.steps(str(version.version_id)) == [
        "inspect",
        "extract",
        "chunk",
        "embed",
        "index",
        "publish",
    ]
    judged = {(d.action, d.principal.split("/")[1]) for d in enforced_stack.judge.decisions}
    assert any(action == "states:StartExecution" for action, _ in judged)
    assert any(action == "lambda:InvokeFunction" for action, _ in judged)
    assert any(action == "bedrock:InvokeModel" for action, _ in judged)
    assert any(action in {"s3:GetObjectVersion", "s3:GetObject"} for action, _ in judged)


def _fully_indexed(version: FileVersionRecord, execution: dict[str, Any]) -> bool:
    return (
        execution["status"] == "SUCCEEDED"
        and version.processing_state is ProcessingState.INDEXED
        and version.embedded_chunk_count == version.chunk_count
    )


def _upload_refused(stack: EnforcedStack) -> None:
    _ticket, posted = stack.post("refused.pdf", "application/pdf", _document("refused upload"))
    assert posted.status_code == 403, posted.text


def _no_execution_starts(stack: EnforcedStack) -> None:
    """The upload is stored, but its processing does not start (the sweep asks again: docs/files.md)."""
    version_id, event = stack.upload("unstarted.pdf", "application/pdf", _document("unstarted"))
    stack.deliver(event)
    sfn = client(stack.admin, "stepfunctions")
    executions = sfn.list_executions(stateMachineArn=stack.stack.state_machine_arn)["executions"]
    assert [e for e in executions if version_id in e["name"]] == []


def _pipeline_falls_short(stack: EnforcedStack) -> None:
    version, execution = stack.run("short.pdf", "application/pdf", _document("falls short"))
    assert not _fully_indexed(version, execution), (version, execution["status"])


def _scan_falls_short(stack: EnforcedStack) -> None:
    scan = scan_corpus.scanned_pdf()
    version, execution = stack.run(scan.filename, scan.media_type, scan.content)
    assert not _fully_indexed(version, execution), (version, execution["status"])


def _reconcile_fails(stack: EnforcedStack) -> None:
    payload, error = stack.invoked(stack.handler("reconcile"), load_event("scheduled_reconcile.json"))
    assert error is not None, payload


def _render_fails(stack: EnforcedStack) -> None:
    event = {"tenantId": "acme", "exportId": str(uuid.uuid4())}
    payload, error = stack.invoked(stack.handler("render"), event)
    assert error is not None, payload


def _document(words: str) -> bytes:
    return pdf_of(f"{words} {secrets.token_hex(4)}: the ferry exchanges ballast water beyond the shelf edge.")


@dataclass(frozen=True)
class TakenAway:
    """A grant a function needs, taken from its own role or from its tenant data role, and what then fails."""

    function: str
    role: str  # "own" or "tenant"
    action: str
    fails: Callable[[EnforcedStack], None]
    # Grants taken from other functions at the same time, to reach this one's (record_failure runs on a failure).
    also: tuple[tuple[str, str, str], ...] = ()


# One per function with a grant to take; `inspect` is record_failure's companion (docs/testing.md lists the
# functions that have none and why).
TAKEN_AWAY = [
    TakenAway("api", "tenant", "s3:PutObject", _upload_refused),
    TakenAway("on_object_created", "own", "states:StartExecution", _no_execution_starts),
    TakenAway("extract", "tenant", "s3:GetObject", _pipeline_falls_short),
    TakenAway("recognize", "tenant", "s3:GetObject", _scan_falls_short),
    TakenAway("chunk", "tenant", "s3:PutObject", _pipeline_falls_short),
    TakenAway("embed", "own", "bedrock:InvokeModel", _pipeline_falls_short),
    TakenAway("index", "tenant", "s3:GetObject", _pipeline_falls_short),
    TakenAway("publish", "tenant", "s3:DeleteObjectVersion", _pipeline_falls_short),
    # Inspect's grant and record_failure's at once: record_failure runs when a step has failed for good.
    TakenAway(
        "record_failure", "own", "rds-db:connect", _pipeline_falls_short, also=(("inspect", "own", "rds-db:connect"),)
    ),
    TakenAway("reconcile", "own", "s3:ListBucketVersions", _reconcile_fails),
    TakenAway("render", "own", "rds-db:connect", _render_fails),
]


@pytest.mark.parametrize("taken", TAKEN_AWAY, ids=lambda taken: f"{taken.function}-{taken.action}")
def test_a_grant_taken_from_a_function_is_refused_and_its_work_fails(
    enforced_stack: EnforcedStack, taken: TakenAway
) -> None:
    iam = client(enforced_stack.admin, "iam")

    def role_of(function: str, role: str) -> str:
        deployed = enforced_stack.handler(function)
        arn = deployed.role_arn if role == "own" else deployed.environment["QUIRE_TENANT_DATA_ROLE_ARN"]
        return str(arn).rsplit("/", 1)[-1]

    removals = [(taken.function, taken.role, taken.action), *taken.also]
    before = len(enforced_stack.judge.decisions)
    with ExitStack() as removed:
        for function, role, action in removals:
            removed.enter_context(grant_removed(iam, role_of(function, role), action))
            # A warm sandbox keeps what it was granted (an open database connection, a tenant session).
            enforced_stack.functions.cold_start(enforced_stack.handler(function))
        taken.fails(enforced_stack)
    refused = {(d.principal.split("/")[1], d.action) for d in enforced_stack.judge.decisions[before:] if not d.allowed}
    assert {(role_of(function, role), action) for function, role, action in removals} <= refused, refused
