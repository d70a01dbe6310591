"""The ingestion pipeline run from the deployed dev template under IAM enforcement.

The template is deployed into moto's CloudFormation (tests/builders/moto_stack.py); the state machine runs the
definition CloudFormation resolved, each function runs with its resolved environment and its own role's session
(tests/builders/deployed_functions.py), and every call to AWS is authorized against the policies CloudFormation
created (tests/builders/iam_judge.py). A grant the stack forgot is an AccessDenied here: the second half takes one
grant away from each function and shows the run failing on it.
"""

import json
import secrets
import tempfile
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
from botocore.exceptions import ClientError

from functions.tools.dispatcher import ToolDispatcher, ToolOutcome
from shared.domain.auth import Role, with_role
from shared.domain.files import FileVersionRecord, ProcessingState
from shared.local import scan_corpus
from tests.builders.deployed_functions import client
from tests.builders.enforced_stack import TEXT_DOCUMENT_STEPS, EnforcedStack
from tests.builders.iam_judge import grant_removed
from tests.builders.pdf import pdf_of
from tests.builders.recordings import Recording, write_recording
from tests.builders.transcribe_worker import TranscribeWorker
from tests.conftest import load_event


def test_a_text_pdf_is_indexed_with_every_call_allowed_by_the_deployed_policies(enforced_stack: EnforcedStack) -> None:
    content = pdf_of("Ballast water. The Oresund ferry exchanges ballast water only beyond the shelf edge.")
    version, execution = enforced_stack.run("ballast.pdf", "application/pdf", content)
    assert execution["status"] == "SUCCEEDED", execution
    assert enforced_stack.judge.refused() == []
    assert version.processing_state is ProcessingState.INDEXED
    assert enforced_stack.functions.steps(str(version.version_id)) == TEXT_DOCUMENT_STEPS
    judged = {(d.action, d.principal.split("/")[1]) for d in enforced_stack.judge.decisions}
    assert any(action == "states:StartExecution" for action, _ in judged)
    assert any(action == "lambda:InvokeFunction" for action, _ in judged)
    assert any(action == "bedrock:InvokeModel" for action, _ in judged)
    assert any(action in {"s3:GetObjectVersion", "s3:GetObject"} for action, _ in judged)


def test_an_export_is_rendered_by_the_render_function_the_api_invokes(enforced_stack: EnforcedStack) -> None:
    """POST an export: the API function invokes the render function through Lambda (its lambda:InvokeFunction),
    which renders with its own roles and stores the PDF under the tenant's exports; then a signed link to it."""
    before = len(enforced_stack.judge.decisions)
    status, artifact = enforced_stack.api(
        "POST",
        "/v1/artifacts",
        {"collectionId": "docs", "name": "Harbour notes", "markdown": "# Harbour notes\n\nThe ferry sails at nine."},
    )
    assert status == 201, artifact
    status, export = enforced_stack.api(
        "POST", f"/v1/artifacts/{artifact['artifactId']}/versions/1/exports", {"format": "pdf"}
    )
    assert status in (200, 202), export
    rendered = [i for i in enforced_stack.functions.invocations if i.step == "render"]
    assert rendered and rendered[-1].error is None
    status, ready = enforced_stack.api("GET", f"/v1/exports/{export['exportId']}")
    assert status == 200 and ready["state"] == "rendered" and ready["url"], ready
    assert [d for d in enforced_stack.judge.decisions[before:] if not d.allowed] == []
    judged = {(d.principal.split("/")[1], d.action) for d in enforced_stack.judge.decisions[before:]}
    assert any("RenderingTenantDataRole" in role and action == "s3:PutObject" for role, action in judged), judged


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


def _recording_falls_short(stack: EnforcedStack) -> None:
    with tempfile.TemporaryDirectory() as folder:
        recording = Recording("untranscribed", "wav", "wav", "pcm_s16le", rate=16_000, channels=1, seconds=1.0)
        content = write_recording(recording, Path(folder)).read_bytes()
    with TranscribeWorker(["Never heard."]).working():
        version, execution = stack.run("untranscribed.wav", "audio/wav", content)
    assert not _fully_indexed(version, execution), (version, execution["status"])


def _reconcile_fails(stack: EnforcedStack) -> None:
    payload, error = stack.invoked(stack.handler("reconcile"), load_event("scheduled_reconcile.json"))
    assert error is not None, payload


def _render_fails(stack: EnforcedStack) -> None:
    event = {"tenantId": "acme", "exportId": str(uuid.uuid4())}
    payload, error = stack.invoked(stack.handler("render"), event)
    assert error is not None, payload


def _agent_reads(stack: EnforcedStack) -> ToolOutcome:
    """An agent's extract_text through the MCP function's tools, as that function (its role, its container)."""
    version, execution = stack.run("agent.pdf", "application/pdf", _document("read by an agent"))
    assert _fully_indexed(version, execution)
    found = stack.container("api").file_metadata.find_version("acme", version.version_id)
    assert found is not None
    principal = with_role("acme", "ann", {"docs"}, Role.ADMIN)
    with stack.acting("mcp") as container:
        return ToolDispatcher(container).call(
            principal, "extract_text", {"fileId": str(found[0].file_id)}, surface="mcp"
        )


def _agent_read_fails(stack: EnforcedStack) -> None:
    outcome = _agent_reads(stack)
    # Storage refusing the function is Quire's failure, not the caller's: logged, and said as such.
    assert outcome.is_error and outcome.content["error"] == "internal_error", outcome


def test_an_agent_reads_a_document_through_the_mcp_function_with_its_own_roles(enforced_stack: EnforcedStack) -> None:
    outcome = _agent_reads(enforced_stack)
    assert not outcome.is_error, outcome
    assert "read by an agent" in json.dumps(outcome.content)


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
    TakenAway("recognize", "tenant", "transcribe:StartTranscriptionJob", _recording_falls_short),
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
    TakenAway("mcp", "tenant", "s3:GetObject", _agent_read_fails),
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
    for function, _role, _action in removals:  # and a sandbox refused keeps its failed pool: the next is new
        enforced_stack.functions.cold_start(enforced_stack.handler(function))
    refused = {(d.principal.split("/")[1], d.action) for d in enforced_stack.judge.decisions[before:] if not d.allowed}
    assert {(role_of(function, role), action) for function, role, action in removals} <= refused, refused


def _tenant_session(stack: EnforcedStack, name: str) -> boto3.Session:
    """Function `name`'s session for tenant acme, assumed as the function assumes it (session tag tenant)."""
    function = stack.handler(name)
    assumed = client(stack.functions.session(function), "sts").assume_role(
        RoleArn=function.environment["QUIRE_TENANT_DATA_ROLE_ARN"],
        RoleSessionName=f"probe-{name}",
        Tags=[{"Key": "tenant", "Value": "acme"}],
    )["Credentials"]
    return boto3.Session(
        aws_access_key_id=assumed["AccessKeyId"],
        aws_secret_access_key=assumed["SecretAccessKey"],
        aws_session_token=assumed["SessionToken"],
        region_name="us-east-1",
    )


def test_a_browser_upload_over_its_tickets_size_or_to_another_key_is_refused(enforced_stack: EnforcedStack) -> None:
    """What S3 enforces of the presigned POST's policy: the byte range and the exact key it was signed for."""
    status, ticket = enforced_stack.api(
        "POST",
        "/v1/uploads",
        {"collectionId": "docs", "filename": "small.pdf", "mediaType": "application/pdf", "byteSize": 10},
    )
    assert status == 201, ticket
    upload = ticket["upload"]
    larger = requests.post(upload["url"], data=upload["fields"], files={"file": ("f", b"%PDF" * 1000)}, timeout=30)
    assert larger.status_code == 403
    elsewhere = {**upload["fields"], "key": upload["fields"]["key"] + "-elsewhere"}
    moved = requests.post(upload["url"], data=elsewhere, files={"file": ("f", b"%PDF-1.7\n")}, timeout=30)
    assert moved.status_code == 403
    refusals = [d.resource for d in enforced_stack.judge.refused() if d.action == "s3:PutObject"]
    assert any("outside 1..10" in refusal for refusal in refusals), refusals
    assert any("key is" in refusal for refusal in refusals), refusals


def test_a_missing_key_is_a_404_only_to_a_role_that_may_list_the_bucket(enforced_stack: EnforcedStack) -> None:
    missing = f"derived/tenants/acme/files/{uuid.uuid4()}/document-1.json"
    # Inspect may list (it asks whether a re-index's document is still stored): 404, "not there".
    with pytest.raises(ClientError) as not_there:
        client(_tenant_session(enforced_stack, "inspect"), "s3").head_object(Bucket=enforced_stack.bucket, Key=missing)
    assert not_there.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # Chunk may read derived objects but not list: S3 will not say whether the key exists.
    with pytest.raises(ClientError) as refused:
        client(_tenant_session(enforced_stack, "chunk"), "s3").head_object(Bucket=enforced_stack.bucket, Key=missing)
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_a_version_tagged_deleted_is_refused_to_every_role_by_the_bucket_policy(enforced_stack: EnforcedStack) -> None:
    key = f"tenants/acme/files/{uuid.uuid4()}/versions/{uuid.uuid4()}"
    s3 = client(enforced_stack.admin, "s3")
    s3.put_object(Bucket=enforced_stack.bucket, Key=key, Body=b"%PDF-1.7\n")
    api = client(_tenant_session(enforced_stack, "api"), "s3")
    assert api.get_object(Bucket=enforced_stack.bucket, Key=key)["Body"].read() == b"%PDF-1.7\n"
    s3.put_object_tagging(
        Bucket=enforced_stack.bucket, Key=key, Tagging={"TagSet": [{"Key": "quire:deleted", "Value": "true"}]}
    )
    for reader in (api, s3):  # the tenant's session, and even an administrator of the account
        with pytest.raises(ClientError) as refused:
            reader.get_object(Bucket=enforced_stack.bucket, Key=key)
        assert refused.value.response["Error"]["Code"] == "AccessDenied"
    # Nor can the tag be taken off again.
    with pytest.raises(ClientError):
        s3.put_object_tagging(Bucket=enforced_stack.bucket, Key=key, Tagging={"TagSet": []})
