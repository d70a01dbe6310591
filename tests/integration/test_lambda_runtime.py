"""Every Python handler the CDK app deploys, invoked once through `awslambdaric` (the runtime interface client
AWS's Python images run) against a fake of the Lambda Runtime API (tests/builders/lambda_runtime_api.py).

Handler resolution, the context object and the marshalling of results and errors are AWS's code, not a test's:
the handler strings, memory sizes, timeouts and Powertools settings come from the synthesized templates (prod,
and dev with malware scanning on, which adds the verdict function), and the process runs in the packaged code
(`infra.packaging.stage_code`), not the repository. Each handler does real work against the local stack (the
embedded PostgreSQL, the S3 server, QUIRE_RUNTIME=local) and must answer its normal result: a result Lambda
cannot marshal (`Runtime.MarshalError`) or an exception fails its test.

The runs start together (they are processes, most of the time spent importing); the pipeline's steps run one
after the other on one scanned image, each step's output the next one's input as the state machine passes it.
The MCP function is not a Python handler: Lambda runs `functions/mcp/run.sh` behind the Lambda Web Adapter
(an HTTP server, not the Runtime API's handler contract); tests/integration/test_mcp_end_to_end.py covers it.
"""

import compileall
import json
import secrets
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import psycopg
import pytest
import urllib3

from migrations.runner import apply_migrations
from shared.bootstrap import Container, adapters_for
from shared.config import Settings
from shared.domain.auth import Role, with_role
from shared.domain.files import ProcessingState, VersionState
from shared.domain.steps import EmbedInput, StepInput, wire_name
from shared.local import scan_corpus
from shared.local.paths import LOCAL_AWS_ENVIRONMENT
from shared.local.s3_server import object_created_event
from shared.local.supervisor import ensure_bucket
from tests.builders.lambda_runtime_api import (
    DeployedFunction,
    FinishedRun,
    LambdaRun,
    quire_functions,
    start_lambda_run,
)
from tests.conftest import load_event
from tests.fakes import RecordingWorkflow
from tests.fakes_writing import RecordingRenderQueue
from tests.infra.synthesis import stand_in_console, stand_in_package
from tests.integration.conftest import MigratedDatabase, with_database
from tests.webhook_receiver import Receiver, http_receiver

PRINCIPAL = with_role("acme", "ann", {"docs"}, Role.ADMIN)
MCP_HANDLER = "functions/mcp/run.sh"
# Each run's answer may take this long: a cold start with every other run importing beside it, on 2 cores.
RUN_TIMEOUT_SECONDS = 180


@dataclass(frozen=True)
class Deployment:
    code_dir: Path
    functions: dict[str, DeployedFunction]
    # Quire's handlers that are not Python handlers of the Runtime API (the MCP server's script).
    other_handlers: frozenset[str]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    import dataclasses

    from aws_cdk.assertions import Template

    from infra.app import build_app
    from infra.environments import settings_for

    root = tmp_path_factory.mktemp("lambda-runtime")
    code_dir, layer_dir = stand_in_package(root)
    functions: dict[str, DeployedFunction] = {}
    others: set[str] = set()
    # prod's settings, then dev with malware scanning on (its verdict function exists only then; no environment
    # turns it on yet). Every other function is in both.
    for name, settings in (
        ("prod", settings_for("prod")),
        ("scanning", dataclasses.replace(settings_for("dev"), malware_scanning="guardduty")),
    ):
        app, stack = build_app(
            settings.name,
            outdir=str(root / f"cdk-{name}"),
            code_dir=code_dir,
            layer_dir=layer_dir,
            console_dir=stand_in_console(root),
            settings=settings,
        )
        app.synth()
        found, not_python = quire_functions(Template.from_stack(stack).to_json())
        functions = {**found, **functions}
        others |= not_python
    # The package ships bytecode for Lambda's 3.12; compiled once here for this Python too, or every run started at
    # once would compile the same modules (then they differ from Lambda's cold start by that, and not by imports).
    compileall.compile_dir(code_dir, quiet=1, workers=0)
    return Deployment(code_dir=code_dir, functions=functions, other_handlers=frozenset(others))


@dataclass
class LocalStack:
    container: Container
    workflow: RecordingWorkflow
    renders: RecordingRenderQueue
    environment: dict[str, str]
    bucket: str
    endpoint: str
    # Where the local bus appends what the relay publishes (QUIRE_EVENT_ARCHIVE_FILE), and a webhook receiver.
    event_archive: Path
    receiver: Receiver

    def upload(self, filename: str, media_type: str, content: bytes) -> tuple[uuid.UUID, dict[str, Any]]:
        """A browser's upload through the presigned POST; the file id and the Object Created event S3 sends."""
        ticket = self.container.files.start_upload(
            PRINCIPAL, collection_id="docs", filename=filename, media_type=media_type, byte_size=len(content)
        )
        fields: dict[str, Any] = {**ticket.upload.fields, "file": ("upload", content, media_type)}
        response = urllib3.request("POST", ticket.upload.url, fields=fields, timeout=20)
        assert response.status in (200, 201, 204), response.data
        key = str(ticket.upload.fields["key"])
        s3 = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1")
        head = s3.head_object(Bucket=self.bucket, Key=key)
        event = object_created_event(self.bucket, key, head.get("VersionId"), head["ContentLength"], head["ETag"])
        return ticket.file_id, event

    def stored(self, filename: str, media_type: str, content: bytes) -> dict[str, Any]:
        """A file uploaded and recorded as stored (in this process): the state machine's input for its version."""
        file_id, event = self.upload(filename, media_type, content)
        obj = event["detail"]["object"]
        self.container.upload_completion.object_created(obj["key"], obj["version-id"], obj["size"])
        (started,) = [run for run in self.workflow.started if run.file_id == str(file_id)]
        return StepInput.model_validate(started.model_dump()).to_state()

    def version(self, file_id: object) -> Any:
        record = self.container.file_metadata.get_file("acme", uuid.UUID(str(file_id)), include_gone=True)
        assert record is not None
        return record.current


@pytest.fixture(scope="module")
def local_stack(
    migrated_database: MigratedDatabase,
    new_database: Callable[[], str],
    s3_endpoint: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LocalStack]:
    """A database and a bucket of this module's own (the reconcile run sweeps every tenant and every object), and a
    container here that prepares what the runs act on: its workflow and render queue record, never run."""
    owner_url = new_database()
    apply_migrations(owner_url, embedding_dimension=384, app_role=migrated_database.app_role)
    name = str(psycopg.conninfo.conninfo_to_dict(owner_url)["dbname"])
    app_url = with_database(migrated_database.app_url, name)
    bucket = f"quire-runtime-{secrets.token_hex(4)}"
    ensure_bucket(s3_endpoint, bucket)
    event_archive = tmp_path_factory.mktemp("events") / "bus.jsonl"
    settings = Settings(
        runtime="local",
        database_url=app_url,
        s3_endpoint_url=s3_endpoint,
        bucket=bucket,
        event_archive_file=event_archive,
    )
    workflow, renders = RecordingWorkflow(), RecordingRenderQueue()
    container = Container(settings, adapters_for(settings, workflow=workflow, render_queue=renders))
    environment = {
        **LOCAL_AWS_ENVIRONMENT,
        "QUIRE_RUNTIME": "local",
        "QUIRE_DATABASE_URL": app_url,
        "QUIRE_S3_ENDPOINT_URL": s3_endpoint,
        "QUIRE_BUCKET": bucket,
        "QUIRE_EVENT_ARCHIVE_FILE": str(event_archive),
    }
    try:
        with http_receiver() as receiver:
            yield LocalStack(container, workflow, renders, environment, bucket, s3_endpoint, event_archive, receiver)
    finally:
        container.database.close()
        with psycopg.connect(migrated_database.owner_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@dataclass(frozen=True)
class Case:
    """One invocation: its event, and what its result must show (`check` may read the stack too)."""

    event: dict[str, Any]
    check: Callable[[Any], None]


def token_claims_case(stack: LocalStack) -> Case:
    def check(result: Any) -> None:
        details = result["response"]["claimsAndScopeOverrideDetails"]["accessTokenGeneration"]
        assert details["claimsToAddOrOverride"]["custom:tenant_id"] == "acme"

    return Case(load_event("cognito_pre_token_generation.json"), check)


def api_case(stack: LocalStack) -> Case:
    event = load_event("apigw_http_v2_get_me.json")
    event["requestContext"]["authorizer"]["jwt"]["claims"]["custom:collections"] = "docs"

    def check(result: Any) -> None:
        assert result["statusCode"] == 200, result
        assert result["headers"]["Cache-Control"] == "no-store"
        caller = json.loads(result["body"])
        assert caller["tenantId"] == "acme" and caller["collections"] == ["docs"], caller

    return Case(event, check)


def custom_resource_delete(sample: str) -> dict[str, Any]:
    event = load_event(sample)
    return {**event, "RequestType": "Delete", "PhysicalResourceId": "resource-being-deleted"}


def cognito_keys_case(stack: LocalStack) -> Case:
    def check(result: Any) -> None:
        assert result == {"PhysicalResourceId": "resource-being-deleted"}

    return Case(custom_resource_delete("cfn_cognito_keys_create.json"), check)


def migrate_case(stack: LocalStack) -> Case:
    def check(result: Any) -> None:
        assert result == {"PhysicalResourceId": "resource-being-deleted"}

    return Case(custom_resource_delete("cfn_migrations_create.json"), check)


def render_case(stack: LocalStack) -> Case:
    from shared.domain.document import Block, BlockKind
    from shared.domain.exports import ExportFormat
    from shared.services.artifacts import ContentInput

    body = ContentInput(blocks=(Block(kind=BlockKind.HEADING, text="Runtime check", level=1),))
    artifact = stack.container.artifacts.create(PRINCIPAL, collection_id="docs", name="Q3", body=body, producer="test")
    record, _ = stack.container.exports.export_artifact(
        PRINCIPAL, artifact.artifact.artifact_id, version=1, export_format=ExportFormat.PDF
    )
    assert [job.export_id for job in stack.renders.submitted] == [record.export_id]

    def check(result: Any) -> None:
        assert result == {"exportId": str(record.export_id), "state": "rendered"}, result
        view = stack.container.exports.get(PRINCIPAL, record.export_id)
        assert view.download is not None, view

    return Case({"tenantId": "acme", "exportId": str(record.export_id)}, check)


def record_failure_case(stack: LocalStack) -> Case:
    state = stack.stored("notes.md", "text/markdown", b"# Notes\n\nThe kiln was serviced in March.\n")
    caught = load_event("pipeline_record_failure.json")
    event = {**state, "failedStep": caught["failedStep"], "error": caught["error"]}

    def check(result: Any) -> None:
        assert result["versionId"] == state["versionId"] and result["proceed"] is False, result
        assert stack.version(state["fileId"]).processing_state is not ProcessingState.INDEXED

    return Case(event, check)


def on_object_created_case(stack: LocalStack) -> Case:
    file_id, event = stack.upload("minutes.md", "text/markdown", b"# Minutes\n\nThe berth will be dredged.\n")

    def check(result: Any) -> None:
        assert result == {"outcome": "stored"}
        assert stack.version(file_id).state is VersionState.STORED

    return Case(event, check)


def malware_verdict_case(stack: LocalStack) -> Case:
    file_id, created = stack.upload("payload.md", "text/markdown", b"# Not really malware\n")
    event = load_event("guardduty_malware_scan_result.json")
    scanned = event["detail"]["s3ObjectDetails"]
    scanned["bucketName"], scanned["objectKey"] = stack.bucket, created["detail"]["object"]["key"]
    scanned["versionId"] = created["detail"]["object"]["version-id"]
    event["detail"]["scanResultDetails"]["scanResultStatus"] = "THREATS_FOUND"

    def check(result: Any) -> None:
        assert result == {"status": "THREATS_FOUND"}
        assert stack.version(file_id).state is VersionState.REJECTED

    return Case(event, check)


def reconcile_case(stack: LocalStack) -> Case:
    from functions.reconcile.handler import REPORTED_COUNTS

    def check(result: Any) -> None:
        assert set(REPORTED_COUNTS) - {"stuckVersions"} <= set(result), result
        assert result["objectsScanned"] >= 1, result

    return Case(load_event("scheduled_reconcile.json"), check)


def relay_case(stack: LocalStack) -> Case:
    """A file deleted before the run: its event is in the outbox, and the relay publishes it to the local bus (the
    archive file the local stack's bus appends to)."""
    state = stack.stored("leaving.md", "text/markdown", b"# Leaving\n")
    stack.container.files.delete_file(PRINCIPAL, uuid.UUID(state["fileId"]))

    def check(result: Any) -> None:
        assert result["published"] >= 1 and result["passes"] >= 1, result
        published = [json.loads(line) for line in stack.event_archive.read_text(encoding="utf-8").splitlines()]
        deleted = [entry for entry in published if entry["DetailType"] == "file.deleted"]
        assert [json.loads(entry["Detail"])["data"]["fileId"] for entry in deleted] == [state["fileId"]], published

    return Case(load_event("scheduled_relay.json"), check)


def deliver_webhooks_case(stack: LocalStack) -> Case:
    """A wake-up from the queue naming one delivery, sent to a receiver on 127.0.0.1 (the local rules allow plain
    http to loopback; AWS never does). The webhook watches a collection nothing else here changes."""
    from shared.domain.webhook_signing import new_secret
    from shared.domain.webhooks import NewWebhook

    webhook = stack.container.webhook_store.create(
        NewWebhook(
            tenant_id="acme",
            webhook_id=uuid.uuid4(),
            url=stack.receiver.url(),
            event_types=["*"],
            collection_ids=["quiet"],
            description="runtime check",
            secret=new_secret(),
            created_by="ann",
        ),
        at_most=50,
    )
    assert webhook is not None
    delivery = stack.container.webhook_store.add_delivery(
        "acme", webhook.webhook_id, message_id="msg_runtime", event_type="webhook.test", body={"hello": "acme"}
    )
    event = load_event("sqs_webhook_wake.json")
    event["Records"][0]["body"] = json.dumps({"tenantId": "acme", "deliveryIds": [str(delivery.delivery_id)]})

    def check(result: Any) -> None:
        assert result == {"batchItemFailures": []}, result
        (received,) = stack.receiver.received
        assert received.headers["webhook-id"] == "msg_runtime" and json.loads(received.body) == {"hello": "acme"}
        stored = stack.container.webhook_store.delivery("acme", webhook.webhook_id, delivery.delivery_id)
        assert stored is not None and stored.state.value == "delivered", stored

    return Case(event, check)


# The handlers invoked on their own, each with what prepares its case. A new function: one line here.
STANDALONE: dict[str, Callable[[LocalStack], Case]] = {
    "functions.token_claims.handler.handler": token_claims_case,
    "functions.api.handler.handler": api_case,
    "functions.cognito_keys.handler.handler": cognito_keys_case,
    "functions.migrate.handler.handler": migrate_case,
    "functions.render.handler.handler": render_case,
    "functions.record_failure.handler.handler": record_failure_case,
    "functions.on_object_created.handler.handler": on_object_created_case,
    "functions.malware_verdict.handler.handler": malware_verdict_case,
    "functions.reconcile.handler.handler": reconcile_case,
    "functions.relay.handler.handler": relay_case,
    "functions.deliver_webhooks.handler.handler": deliver_webhooks_case,
}
# The relay loops until STOP_MARGIN_SECONDS of its invocation remain (a minute on AWS): given a few seconds above
# that here, it makes a few passes and stops.
TIMEOUT_SECONDS = {"functions.relay.handler.handler": 62}
# The pipeline's steps, in the order the state machine runs them on a scanned image (the OCR branch).
PIPELINE_STEPS = ("inspect", "extract", "recognize", "chunk", "embed", "index", "publish")


def step_handler(step: str) -> str:
    return f"functions.{step}.handler.handler"


@dataclass
class Runs:
    finished: dict[str, FinishedRun]
    checks: dict[str, Callable[[Any], None]]
    # Why a step of the chain did not run (the step before it failed).
    not_run: dict[str, str]


@pytest.fixture(scope="module")
def runs(deployment: Deployment, local_stack: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("lambda-runs")
    # The layer's own packages (quire_fonts, quire_langid), and the local embedder's tokenizer package
    # QUIRE_RUNTIME=local needs; the layer's dependencies are this Python's (the real layer holds arm64 wheels
    # for 3.12).
    layer = root / "layer"
    layer.mkdir()
    repo = Path(__file__).resolve().parents[2]
    for package in ("quire_fonts", "quire_langid", "quire_minilm"):
        (layer / package).symlink_to(repo / package)

    def start(handler: str, event: dict[str, Any]) -> LambdaRun:
        function = deployment.functions[handler]
        return start_lambda_run(
            handler,
            event,
            task_root=deployment.code_dir,
            layers=[layer],
            environment={**function.environment, **local_stack.environment},
            log_dir=root,
            function_name=function.logical_id,
            memory_mb=function.memory_mb,
            timeout_seconds=TIMEOUT_SECONDS.get(handler, function.timeout_seconds),
        )

    # The chain first: its steps run one after the other, the longest part; the standalone runs start beside it.
    scan = scan_corpus.table_screenshot()
    chain_input = local_stack.stored(scan.filename, scan.media_type, scan.content)
    finished: dict[str, FinishedRun] = {}
    not_run: dict[str, str] = {}

    def run_chain() -> None:
        state = chain_input
        for step in PIPELINE_STEPS:
            handler = step_handler(step)
            event = state
            if step == "embed":
                # The Map's item selector: the references from the state, `batch` from the item.
                item = {wire_name(EmbedInput, name) for name in EmbedInput.model_fields} - {"batch"}
                event = {**{name: state[name] for name in item if name in state}, "batch": state["batches"][0]}
            run = start(handler, event).finish(RUN_TIMEOUT_SECONDS)
            finished[handler] = run
            if run.answer is None or run.answer.kind != "response":
                for later in PIPELINE_STEPS[PIPELINE_STEPS.index(step) + 1 :]:
                    not_run[step_handler(later)] = f"{step} did not answer a result"
                return
            if step != "embed":  # the Map's result is discarded: index reads chunk's output
                state = run.answer.json()

    chain = threading.Thread(target=run_chain, name="pipeline-chain")
    chain.start()
    started: dict[str, LambdaRun] = {}
    try:
        cases = {handler: prepare(local_stack) for handler, prepare in STANDALONE.items()}
        for handler, case in cases.items():
            started[handler] = start(handler, case.event)
    finally:  # what started is always stopped, whatever failed to start after it
        for handler, run in started.items():
            finished[handler] = run.finish(RUN_TIMEOUT_SECONDS)
        chain.join()
    checks = {handler: case.check for handler, case in cases.items()}
    checks.update(pipeline_checks(local_stack, chain_input))
    return Runs(finished=finished, checks=checks, not_run=not_run)


def pipeline_checks(stack: LocalStack, chain_input: dict[str, Any]) -> dict[str, Callable[[Any], None]]:
    def goes_on(result: Any) -> None:
        assert result["proceed"] is True and result["versionId"] == chain_input["versionId"], result

    def extracted(result: Any) -> None:
        goes_on(result)
        assert result["recognize"] is True, result  # an image: no text layer, OCR reads it

    def recognized(result: Any) -> None:
        goes_on(result)
        assert "ocrJob" not in result and result["blocks"] >= 1, result  # local OCR reads at once

    def chunked(result: Any) -> None:
        goes_on(result)
        assert result["batches"] and result["chunks"] >= 1, result

    def embedded(result: Any) -> None:
        assert result["embedded"] >= 1, result

    def indexed(result: Any) -> None:
        assert result["indexed"] is True and result["chunks"] >= 1, result

    def published(result: Any) -> None:
        assert result["versionId"] == chain_input["versionId"], result
        assert stack.version(chain_input["fileId"]).processing_state is ProcessingState.INDEXED

    checks = (goes_on, extracted, recognized, chunked, embedded, indexed, published)
    return {step_handler(step): check for step, check in zip(PIPELINE_STEPS, checks, strict=True)}


INVOKED = (*STANDALONE, *map(step_handler, PIPELINE_STEPS))


def test_every_python_handler_the_app_deploys_is_invoked(deployment: Deployment) -> None:
    missing = sorted(set(deployment.functions) - set(INVOKED))
    assert not missing, f"deployed but never invoked here (add each to STANDALONE): {missing}"
    assert sorted(deployment.functions) == sorted(INVOKED)
    # Not a handler of the Runtime API: the Lambda Web Adapter runs the MCP server's script (see the docstring).
    assert deployment.other_handlers == {MCP_HANDLER}


@pytest.mark.parametrize("handler", INVOKED)
def test_the_packaged_handler_answers_its_result_through_the_runtime_client(handler: str, runs: Runs) -> None:
    if handler in runs.not_run:
        pytest.fail(runs.not_run[handler])
    run = runs.finished[handler]
    assert run.unknown_requests == []
    runs.checks[handler](run.result())


# The harness itself: a handler of the test's own, beside the package, must fail where Lambda would fail it.
PROBE = """
import datetime


def context(event, context):
    import functions
    try:
        import shared.local
    except ImportError:
        local = None
    else:
        local = shared.local.__file__
    return {
        "functions": functions.__file__, "sharedLocal": local, "memory": context.memory_limit_in_mb,
        "arn": context.invoked_function_arn, "requestId": context.aws_request_id,
        "remainingMs": context.get_remaining_time_in_millis(), "event": event,
    }


def a_datetime(event, context):
    return {"at": datetime.datetime(2026, 1, 1)}


def raising(event, context):
    raise LookupError("no such tenant")
"""


@pytest.fixture(scope="module")
def probe_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("probe")
    (directory / "runtime_probe.py").write_text(PROBE)
    return directory


def probe(handler: str, probe_dir: Path, deployment: Deployment) -> FinishedRun:
    """The probe module's `handler`, with the packaged code as a layer (its first place is the probe's)."""
    run = start_lambda_run(
        f"runtime_probe.{handler}",
        {"tenantId": "acme"},
        task_root=probe_dir,
        layers=[deployment.code_dir],
        environment={},
        log_dir=probe_dir,
        function_name="Probe",
        memory_mb=256,
    )
    return run.finish(RUN_TIMEOUT_SECONDS)


def test_the_context_is_lambdas_and_modules_come_from_the_package(probe_dir: Path, deployment: Deployment) -> None:
    run = probe("context", probe_dir, deployment)
    answered = run.result()
    assert answered["functions"].startswith(str(deployment.code_dir))
    # Not packaged (infra/packaging.py NOT_PACKAGED): the repository's editable install must not lend it.
    assert answered["sharedLocal"] is None
    assert answered["memory"] == "256"  # a string, as Lambda's context gives it
    assert answered["arn"] == run.invocation.function_arn and answered["requestId"] == run.invocation.request_id
    assert 0 < answered["remainingMs"] <= 60_000 and answered["event"] == {"tenantId": "acme"}


def test_a_result_lambda_cannot_marshal_is_a_marshal_error(probe_dir: Path, deployment: Deployment) -> None:
    failure = probe("a_datetime", probe_dir, deployment).failure()
    assert failure.kind == "error" and failure.error_type == "Runtime.MarshalError"
    assert "datetime is not JSON serializable" in failure.json()["errorMessage"]
    with pytest.raises(AssertionError, match=r"answered error"):
        probe("a_datetime", probe_dir, deployment).result()


def test_an_exception_is_reported_with_its_type_and_stack(probe_dir: Path, deployment: Deployment) -> None:
    failure = probe("raising", probe_dir, deployment).failure()
    assert failure.kind == "error" and failure.error_type == "LookupError"
    assert failure.json()["errorMessage"] == "no such tenant"
    assert any("runtime_probe.py" in frame for frame in failure.json()["stackTrace"])


def test_a_handler_path_that_names_nothing_fails_at_init(probe_dir: Path, deployment: Deployment) -> None:
    failure = probe("missing", probe_dir, deployment).failure()
    assert failure.kind == "init-error" and failure.error_type == "Runtime.HandlerNotFound"
    assert failure.error_type_header == "Runtime.HandlerNotFound"


def test_migrate_create_runs_the_migrations_through_the_runtime_client() -> None:
    pytest.skip(
        "not locally: Create reads the owner's password from Secrets Manager and connects to the cluster writer"
        " with sslmode=verify-full against the packaged RDS CA bundle, which the embedded PostgreSQL (no TLS) cannot"
        " satisfy; the Delete request runs above, and tests/integration/test_migrations.py covers the migrations"
    )


def test_cognito_keys_create_snapshots_the_pools_keys_through_the_runtime_client() -> None:
    pytest.skip(
        "not locally: Create reads the JWKS from the user pool's issuer, which must be Cognito's HTTPS endpoint"
        " (cognito_tokens.jwks_url refuses any other); the Delete request runs above, and the snapshot itself is"
        " in process by tests/unit/test_cognito_keys_handler.py"
    )
