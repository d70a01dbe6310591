"""The synthesized state machine, executed by moto's Step Functions interpreter, with its Lambda tasks routed
to the real handlers in process against the embedded PostgreSQL and moto's S3 server.

What is executed is the definition `cdk synth` deploys (tests/infra/synthesis.py reads it from the
template, function ARNs and handlers included): Choice branches, the OCR Wait loop, the embed Map, every
Retry and Catch. Only time is shortened: moto's retry back-off and Wait states do not sleep here.
"""

import functools
import importlib
import io
import json
import secrets
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import psycopg
import pytest
import urllib3
from moto import mock_aws
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction

from functions.views.files import VersionView
from migrations.runner import apply_migrations
from shared.adapters.aws.step_functions_workflow import StepFunctionsWorkflow
from shared.adapters.local.rapid_ocr import RapidOcr
from shared.adapters.local.unavailable import UnavailableEmbedder
from shared.bootstrap import Container, adapters_for, overridden
from shared.config import Settings
from shared.domain.auth import Role, with_role
from shared.domain.files import FailureReason, FileVersionRecord, ProcessingState
from shared.domain.recognition import RecognitionJob, RecognitionResult
from shared.domain.search import SearchQuery
from shared.domain.workflow import ProcessVersion, StartOutcome
from shared.local import scan_corpus
from shared.local.embedded_postgres import free_port
from shared.local.http_api import LocalLambdaContext
from shared.local.s3_server import LocalS3Server, object_created_event
from shared.local.supervisor import app_url_from_owner, ensure_bucket, set_app_role_password
from shared.ports import OcrSource
from shared.services.indexing import Indexer, IndexTarget
from tests.infra.synthesis import stand_in_package, state_machine_definition, synthesize
from tests.integration.conftest import drop_role

REGION = "us-east-1"
ACCOUNT = "123456789012"
PRINCIPAL = with_role("acme", "ann", {"docs"}, Role.ADMIN)
OBJECT_CREATED = "functions.on_object_created.handler"


def function_arn(logical_id: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{logical_id}"


@dataclass
class HandlerRouter:
    """Lambda as the state machine invokes it, answered by the real handler modules in process. A handler
    that raises is reported as Lambda reports it: FunctionError, with errorType the exception's class name."""

    handlers: dict[str, str]
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # The size of every answer a task gave the state machine, in bytes of JSON.
    answered: list[tuple[str, int]] = field(default_factory=list)

    def invoke(self, FunctionName: str, Payload: bytes, **_: Any) -> dict[str, Any]:  # noqa: N803 - boto3's names
        logical_id = FunctionName.rsplit(":", 1)[-1]
        module, _dot, name = self.handlers[logical_id].rpartition(".")
        event = json.loads(Payload)
        self.calls.append((module.split(".")[1], event))
        try:
            result = getattr(importlib.import_module(module), name)(event, LocalLambdaContext(logical_id))
        except Exception as error:
            failure = {"errorType": type(error).__name__, "errorMessage": str(error)}
            return {
                "StatusCode": 200,
                "FunctionError": "Unhandled",
                "Payload": io.BytesIO(json.dumps(failure).encode()),
            }
        answer = json.dumps(result).encode()
        self.answered.append((module.split(".")[1], len(answer)))
        return {"StatusCode": 200, "Payload": io.BytesIO(answer)}

    def steps(self, version_id: str) -> list[str]:
        return [step for step, event in self.calls if event.get("versionId") == version_id]


@dataclass
class Deployment:
    container: Container
    router: HandlerRouter
    sfn: Any
    state_machine_arn: str
    owner_url: str
    announced: list[dict[str, Any]]

    def upload(self, filename: str, media_type: str, content: bytes) -> tuple[uuid.UUID, dict[str, Any]]:
        """A browser upload through the presigned POST; returns the file id and S3's Object Created event."""
        ticket = self.container.files.start_upload(
            PRINCIPAL, collection_id="docs", filename=filename, media_type=media_type, byte_size=len(content)
        )
        upload = ticket.upload
        fields: dict[str, Any] = {**upload.fields, "file": ("upload", content, media_type)}
        response = urllib3.request("POST", upload.url, fields=fields, timeout=20)
        assert response.status in (200, 201, 204), response.data
        events = [e for e in self.announced if e["detail"]["object"]["key"].endswith(str(ticket.version_id))]
        assert len(events) == 1
        return ticket.file_id, events[0]

    def deliver(self, event: dict[str, Any]) -> dict[str, str]:
        """EventBridge delivering S3's event to on_object_created, as the rule does."""
        handler = importlib.import_module(OBJECT_CREATED).handler
        result: dict[str, str] = handler(event, LocalLambdaContext("OnObjectCreated"))
        return result

    def executions(self, version_id: str) -> list[dict[str, Any]]:
        listed = self.sfn.list_executions(stateMachineArn=self.state_machine_arn)["executions"]
        return [e for e in listed if version_id in e["name"]]

    def finished(self, execution_arn: str, timeout: float = 240) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            described: dict[str, Any] = self.sfn.describe_execution(executionArn=execution_arn)
            if described["status"] != "RUNNING":
                return described
            time.sleep(0.2)
        raise AssertionError(f"{execution_arn} still running after {timeout} s")

    def run(self, filename: str, media_type: str, content: bytes) -> tuple[FileVersionRecord, dict[str, Any]]:
        """Upload, deliver the event, wait for the one execution; the version as it ends, and the execution."""
        file_id, event = self.upload(filename, media_type, content)
        assert self.deliver(event) == {"outcome": "stored"}
        record = self.container.file_metadata.get_file("acme", file_id)
        assert record is not None
        (execution,) = self.executions(str(record.current.version_id))
        finished = self.finished(execution["executionArn"])
        return self.version(record.current.version_id), finished

    def age(self, version_id: uuid.UUID, by: timedelta) -> None:
        """Move a version's last change into the past, as if that much time had gone by."""
        with psycopg.connect(self.owner_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE file_versions SET updated_at = updated_at - %s, processing_requested_at ="
                " processing_requested_at - %s WHERE version_id = %s",
                (by, by, version_id),
            )

    def version(self, version_id: uuid.UUID) -> FileVersionRecord:
        found = self.container.file_metadata.find_version("acme", version_id)
        assert found is not None
        return found[1]


@pytest.fixture(scope="module")
def own_database(postgres_owner_url: str, new_database: Callable[[], str]) -> Iterator[tuple[str, str]]:
    """A database of its own (owner and application URLs): other modules' S3 listeners must never find
    these versions."""
    owner_url = new_database()
    role = f"quire_app_sfn_{secrets.token_hex(4)}"
    apply_migrations(owner_url, embedding_dimension=384, app_role=role)
    password = secrets.token_urlsafe(16)
    set_app_role_password(owner_url, password, role=role)
    yield owner_url, app_url_from_owner(owner_url, password, role=role)
    drop_role(owner_url, role)


@pytest.fixture(scope="module")
def deployment(
    own_database: tuple[str, str], aws_credentials: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    owner_url, app_url = own_database
    root = tmp_path_factory.mktemp("sfn")
    template = synthesize("dev", root, stand_in_package(root / "package"))
    definition, handlers = state_machine_definition(template, arn_of=_ArnOf())
    port = free_port()
    bucket = f"quire-sfn-{port}"
    s3 = LocalS3Server(root / "s3", port=port)
    s3.start()
    ensure_bucket(s3.endpoint, bucket)
    announced = _announce_only_to_this_module(bucket)
    # moto's Step Functions only; S3 stays the server's, whose data must survive this mock (no reset).
    mock = mock_aws(config={"stepfunctions": {"execute_state_machine": True}})
    mock.start(reset=False)
    router = HandlerRouter(handlers)
    sfn = boto3.client("stepfunctions", region_name=REGION)
    try:
        arn = sfn.create_state_machine(
            name=f"quire-ingestion-{port}",
            definition=json.dumps(definition),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/quire-ingestion",
            type="STANDARD",
        )["stateMachineArn"]
        settings = Settings(
            runtime="local", database_url=app_url, s3_endpoint_url=s3.endpoint, bucket=bucket, state_machine_arn=arn
        )
        # Starting processing is Step Functions' here, through the same adapter Lambda uses.
        workflow = StepFunctionsWorkflow(lambda: boto3.client("stepfunctions", region_name=REGION), arn)
        container = Container(settings, adapters_for(settings, workflow=workflow))
        with pytest.MonkeyPatch.context() as patch, overridden(container):
            patch.setattr(lambda_eval_utils, "boto_client_for", lambda **_: router)
            # Time only: no back-off sleeps between retries, no 10-second Waits between OCR polls.
            patch.setattr(retrier_decl, "time", _NoSleep())
            patch.setattr(WaitFunction, "_wait_interval", lambda self, env, wait_seconds: None)
            yield Deployment(container, router, sfn, arn, owner_url, announced)
            container.database.close()
    finally:
        _wait_until_no_execution_runs(sfn)
        mock.stop(remove_data=False)
        _restore_announcements()
        s3.stop()


_MODULE_ANNOUNCER: dict[str, Any] = {}


def _announce_only_to_this_module(bucket: str) -> list[dict[str, Any]]:
    """S3's "Object Created" for this module's bucket goes to this module alone. Another module's local S3
    server may have left its listener on moto's (process-wide) S3 backend; it keeps every other bucket."""
    backend = LocalS3Server._backend()
    others = backend.__dict__.get("put_object")
    store = functools.partial(type(backend).put_object, backend)
    announced: list[dict[str, Any]] = []

    def put_object(bucket_name: str, key_name: str, *args: Any, **kwargs: Any) -> Any:
        if bucket_name != bucket:
            return (others or store)(bucket_name, key_name, *args, **kwargs)
        stored = store(bucket_name, key_name, *args, **kwargs)
        announced.append(object_created_event(bucket_name, key_name, stored.version_id, stored.size, stored.etag))
        return stored

    _MODULE_ANNOUNCER.update(backend=backend, others=others)
    backend.put_object = put_object
    return announced


def _restore_announcements() -> None:
    backend, others = _MODULE_ANNOUNCER.pop("backend"), _MODULE_ANNOUNCER.pop("others")
    if others is None:
        del backend.put_object
    else:
        backend.put_object = others


def _wait_until_no_execution_runs(sfn: Any, timeout: float = 120) -> None:
    """A test that failed early may leave an execution running: let it end before its S3 server does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = [
            execution
            for machine in sfn.list_state_machines()["stateMachines"]
            for execution in sfn.list_executions(stateMachineArn=machine["stateMachineArn"], statusFilter="RUNNING")[
                "executions"
            ]
        ]
        if not running:
            return
        time.sleep(0.5)


class _ArnOf(dict[str, str]):
    def __missing__(self, logical_id: str) -> str:
        return function_arn(logical_id)


class _NoSleep:
    @staticmethod
    def sleep(seconds: float) -> None:
        return None


def history_errors(deployment: Deployment, execution_arn: str) -> list[str]:
    events = deployment.sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    # A task whose Resource is the function's ARN reports LambdaFunctionFailed; an SDK integration TaskFailed.
    details = ("lambdaFunctionFailedEventDetails", "taskFailedEventDetails")
    return [event[key]["error"] for event in events for key in details if key in event]


def text_pdf(heading: str, paragraph: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.multi_cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 7, paragraph, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def found(deployment: Deployment, words: str) -> list[str]:
    outcome = deployment.container.retrieval.search(PRINCIPAL, SearchQuery(text=words, limit=5))
    return [hit.citation.filename for hit in getattr(outcome, "hits", [])]


def test_a_text_pdf_runs_inspect_extract_chunk_embed_index_publish_and_is_found(deployment: Deployment) -> None:
    content = text_pdf("Ballast water", "The Oresund ferry exchanges ballast water only beyond the shelf edge.")
    version, execution = deployment.run("ballast.pdf", "application/pdf", content)
    assert execution["status"] == "SUCCEEDED"
    assert version.processing_state is ProcessingState.INDEXED and version.chunk_count >= 1
    assert version.embedded_chunk_count == version.chunk_count
    assert deployment.router.steps(str(version.version_id)) == [
        "inspect",
        "extract",
        "chunk",
        "embed",
        "index",
        "publish",
    ]
    assert "ballast.pdf" in found(deployment, "Oresund ballast water shelf edge")
    # The attempt's intermediate work is gone once published.
    work = f"derived/{version.storage_key}/work-"
    assert list(deployment.container.content.object_versions(work)) == []


def test_a_scanned_pdf_takes_the_ocr_branch_and_is_found_on_words_only_in_pixels(deployment: Deployment) -> None:
    scan = scan_corpus.scanned_pdf()
    version, execution = deployment.run(scan.filename, scan.media_type, scan.content)
    assert execution["status"] == "SUCCEEDED"
    assert "recognize" in deployment.router.steps(str(version.version_id))
    assert version.processing_state is ProcessingState.INDEXED
    assert version.recognized_pages == (1, 2) and version.ocr_confidence is not None
    assert scan.filename in found(deployment, "Marguerite Okonkwo certified the vessel")


def test_an_image_is_recognized_and_indexed(deployment: Deployment) -> None:
    screenshot = scan_corpus.table_screenshot()
    version, execution = deployment.run(screenshot.filename, screenshot.media_type, screenshot.content)
    assert execution["status"] == "SUCCEEDED"
    assert deployment.router.steps(str(version.version_id))[:3] == ["inspect", "extract", "recognize"]
    assert version.processing_state is ProcessingState.INDEXED and version.recognized_pages == (1,)
    assert screenshot.filename in found(deployment, "Kamchatka returns")


class PolledOcr:
    """Named fake of an asynchronous engine (Textract's shape) around the real RapidOCR: `start` hands back
    a job, `collect` answers "still running" twice, then RapidOCR's own reading of the pages."""

    def __init__(self) -> None:
        self.engine = RapidOcr()
        self.polls: Counter[str] = Counter()
        self.sources: dict[str, OcrSource] = {}

    def capability(self) -> Any:
        return self.engine.capability()

    def start(self, source: OcrSource) -> RecognitionJob:
        job = RecognitionJob(job_id=source.run_id, pages=source.pages, engine="polled-rapidocr", analysis=False)
        self.sources[job.job_id] = source
        return job

    def collect(self, job: RecognitionJob) -> RecognitionResult | None:
        self.polls[job.job_id] += 1
        if self.polls[job.job_id] <= 2:
            return None
        result = self.engine.start(self.sources[job.job_id])
        assert isinstance(result, RecognitionResult)
        return result

    def discard(self, job: RecognitionJob) -> None:
        self.sources.pop(job.job_id, None)


def test_a_running_ocr_job_is_polled_through_the_wait_loop_until_it_answers(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = PolledOcr()
    monkeypatch.setattr(deployment.container.pipeline.recognition, "_ocr", engine)
    scan = scan_corpus.mixed_pdf()
    version, execution = deployment.run(scan.filename, scan.media_type, scan.content)
    assert execution["status"] == "SUCCEEDED"
    steps = deployment.router.steps(str(version.version_id))
    # Started once, polled until it answered: each poll is a Wait state and a Recognize task again.
    assert steps.count("recognize") == 4 and list(engine.polls.values()) == [3]
    polled = [event for step, event in deployment.router.calls if step == "recognize" and "ocrJob" in event]
    assert [event.get("ocrPolls", 0) for event in polled] == [0, 1, 2]
    assert version.processing_state is ProcessingState.INDEXED and version.recognized_pages == (2,)


def test_a_malformed_file_succeeds_with_the_failure_recorded(deployment: Deployment) -> None:
    damaged = b"%PDF-1.7\n" + secrets.token_bytes(4096) + b"\n%%EOF\n"
    version, execution = deployment.run("damaged.pdf", "application/pdf", damaged)
    # A document problem is not the infrastructure's: the execution succeeds, the version says why.
    assert execution["status"] == "SUCCEEDED"
    assert version.processing_state is ProcessingState.FAILED
    assert version.failure_reason is FailureReason.MALFORMED
    assert deployment.router.steps(str(version.version_id)) == ["inspect", "extract"]


def test_a_transient_database_error_is_retried_and_the_version_indexed(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = deployment.container.pipeline
    real_index = pipeline.index
    failures = iter([psycopg.OperationalError("the database system is starting up")] * 2)

    def index_while_the_database_resumes(request: Any) -> Any:
        error = next(failures, None)
        if error is not None:
            raise error
        return real_index(request)

    monkeypatch.setattr(pipeline, "index", index_while_the_database_resumes)
    content = text_pdf("Tide tables", "Spring tides at Saint-Malo reach twelve metres.")
    version, execution = deployment.run("tides.pdf", "application/pdf", content)
    assert execution["status"] == "SUCCEEDED"
    assert history_errors(deployment, execution["executionArn"]) == ["InfrastructureUnavailable"] * 2
    assert deployment.router.steps(str(version.version_id)).count("index") == 3
    assert version.processing_state is ProcessingState.INDEXED


def test_an_outage_past_its_retries_fails_the_execution_and_the_sweep_finds_it(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = deployment.container.pipeline
    real_extract = pipeline.extract

    def extract_during_an_outage(request: Any) -> dict[str, Any]:
        raise psycopg.OperationalError("connection to server at 10.0.3.7, port 5432 failed: Connection refused")

    monkeypatch.setattr(pipeline, "extract", extract_during_an_outage)
    content = text_pdf("Lighthouses", "The Fastnet light flashes white every five seconds.")
    version, execution = deployment.run("fastnet.pdf", "application/pdf", content)
    # Retried with back-off (1 call and 6 retries), then caught: recorded on the version, execution FAILED.
    assert execution["status"] == "FAILED"
    assert execution["error"] == "InfrastructureUnavailable"
    steps = deployment.router.steps(str(version.version_id))
    assert steps == ["inspect", *["extract"] * 7, "record_failure"]
    assert version.processing_state is ProcessingState.INTERRUPTED
    assert version.failure_reason is None
    assert version.failure_detail is not None and version.failure_detail.startswith("the extract step failed")
    assert "Connection refused" in version.failure_detail
    # The owner is told which step and what happens next, never the infrastructure's own message.
    shown = VersionView.of(version).interruption
    assert shown == "the extract step could not reach a service it depends on; it is retried automatically"

    # The outage is over; the sweep finds the interrupted version and starts attempt 2, which succeeds.
    monkeypatch.setattr(pipeline, "extract", real_extract)
    deployment.age(
        version.version_id, timedelta(seconds=deployment.container.settings.reconcile_stuck_after_seconds + 60)
    )
    report = deployment.container.reconciler.run(datetime.now(UTC))
    requested = [r for r in report.processing_requested if r["versionId"] == str(version.version_id)]
    assert requested == [
        {
            "tenantId": "acme",
            "fileId": requested[0]["fileId"],
            "versionId": str(version.version_id),
            "outcome": "started",
        }
    ]
    second = [e for e in deployment.executions(str(version.version_id)) if e["name"].endswith("-2")]
    assert len(second) == 1
    assert deployment.finished(second[0]["executionArn"])["status"] == "SUCCEEDED"
    assert deployment.version(version.version_id).processing_state is ProcessingState.INDEXED


def test_a_bug_fails_at_once_without_retries(deployment: Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    def chunk_with_a_bug(request: Any) -> dict[str, Any]:
        raise KeyError("batches")

    monkeypatch.setattr(deployment.container.pipeline, "chunk", chunk_with_a_bug)
    content = text_pdf("Knots", "A bowline makes a fixed loop at the end of a line.")
    version, execution = deployment.run("knots.pdf", "application/pdf", content)
    assert execution["status"] == "FAILED" and execution["error"] == "KeyError"
    assert deployment.router.steps(str(version.version_id)).count("chunk") == 1
    assert version.processing_state is ProcessingState.INTERRUPTED


def test_the_same_s3_event_delivered_three_times_starts_one_execution(deployment: Deployment) -> None:
    content = text_pdf("Moorings", "Harbour moorings are inspected every spring.")
    file_id, event = deployment.upload("moorings.pdf", "application/pdf", content)
    outcomes = [deployment.deliver(event) for _ in range(3)]
    assert outcomes[0] == {"outcome": "stored"} and outcomes[1:] == [{"outcome": "duplicate"}] * 2
    record = deployment.container.file_metadata.get_file("acme", file_id)
    assert record is not None
    executions = deployment.executions(str(record.current.version_id))
    assert len(executions) == 1
    assert deployment.finished(executions[0]["executionArn"])["status"] == "SUCCEEDED"
    # And a start for the same version and attempt again (a redelivered start) is absorbed by its name.
    again = ProcessVersion(tenant_id="acme", file_id=str(file_id), version_id=str(record.current.version_id))
    assert deployment.container.workflow.start(again) is StartOutcome.ALREADY_STARTED
    assert len(deployment.executions(str(record.current.version_id))) == 1


def sectioned_pdf(sections: int) -> bytes:
    """Sections long enough to be chunks of their own."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    for number in range(sections):
        pdf.set_font("Helvetica", "B", 16)
        pdf.multi_cell(0, 10, f"Section {number + 1}: harbour log {number}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=11)
        words = " ".join(f"vessel{number}x{i} moored at berth {i % 17} under pilot {number}" for i in range(40))
        pdf.multi_cell(0, 6, words, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def test_a_long_document_is_embedded_by_several_map_tasks_and_swapped_in_at_once(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.services import attempt_work

    monkeypatch.setattr(attempt_work, "CHUNKS_PER_BATCH", 2)
    version, execution = deployment.run("harbour-log.pdf", "application/pdf", sectioned_pdf(6))
    assert execution["status"] == "SUCCEEDED"
    steps = deployment.router.steps(str(version.version_id))
    assert version.chunk_count >= 5 and steps.count("embed") == -(-version.chunk_count // 2)
    assert version.embedded_chunk_count == version.chunk_count and version.embedding_gap is None
    # Each batch's embedding is on the ledger once, as one line for the step.
    usage = deployment.container.usage_ledger.totals(
        "acme", frozenset({"docs"}), since=datetime.now(UTC) - timedelta(hours=1), until=datetime.now(UTC)
    )
    assert "embed" in {line.step for line in usage} and not [line for line in usage if "#" in line.step]
    assert "harbour-log.pdf" in found(deployment, "vessel3x7 moored at berth 7")


def test_a_reindex_runs_through_the_state_machine_from_the_stored_document_batch_by_batch(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.services import attempt_work

    monkeypatch.setattr(attempt_work, "CHUNKS_PER_BATCH", 2)
    version, execution = deployment.run("tide-log.pdf", "application/pdf", sectioned_pdf(5))
    assert execution["status"] == "SUCCEEDED"
    # Stale: indexed while the model was down, so keyword-only (as after an outage, or a model change).
    container = deployment.container
    found_version = container.file_metadata.find_version("acme", version.version_id)
    assert found_version is not None
    down = Indexer(
        container.knowledge, UnavailableEmbedder("the model was down", dimension=container.embedder.dimension)
    )
    down.index(IndexTarget.of(*found_version), container.documents.read(version), attempt=None)
    assert deployment.version(version.version_id).embedded_chunk_count == 0
    before = len(deployment.router.calls)
    report = deployment.container.reindexer.start_batch("acme", frozenset({"docs"}))
    assert (report.queued, report.remaining) == (1, 0)
    executions = deployment.executions(str(version.version_id))
    assert len(executions) == 2
    newest = max(executions, key=lambda e: e["startDate"])
    assert deployment.finished(newest["executionArn"])["status"] == "SUCCEEDED"
    steps = [step for step, _ in deployment.router.calls[before:]]
    # Inspect goes straight to chunk: nothing is extracted or OCR'd again; the embed Map runs a task per batch.
    assert "extract" not in steps and "recognize" not in steps
    reindexed = deployment.version(version.version_id)
    assert steps.count("embed") == -(-reindexed.chunk_count // 2) and steps[-2:] == ["index", "publish"]
    assert reindexed.processing_state is ProcessingState.INDEXED
    assert reindexed.embedded_chunk_count == reindexed.chunk_count > 0
    assert reindexed.embedding_model == deployment.container.embedder.model_id
    assert "tide-log.pdf" in found(deployment, "vessel3x7 moored at berth 7")


def test_a_batch_the_model_did_not_embed_leaves_the_version_keyword_only_and_says_why(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.services import attempt_work

    monkeypatch.setattr(attempt_work, "CHUNKS_PER_BATCH", 2)
    indexer = deployment.container.pipeline._indexer
    real_embed = indexer.embed
    calls = Counter[str]()

    def embed_until_throttled(texts: Any) -> tuple[Any, str | None]:
        calls["embed"] += 1
        if calls["embed"] == 2:
            return None, "the embedding model was throttled after 6 attempts"
        return real_embed(texts)

    monkeypatch.setattr(indexer, "embed", embed_until_throttled)
    version, execution = deployment.run("quay-log.pdf", "application/pdf", sectioned_pdf(5))
    assert execution["status"] == "SUCCEEDED"
    assert version.processing_state is ProcessingState.INDEXED and version.chunk_count >= 4
    assert version.embedded_chunk_count == 0
    assert version.embedding_gap == "the embedding model was throttled after 6 attempts"
    # Found by its words all the same (the keyword lane), and a re-index embeds it later.
    assert "quay-log.pdf" in found(deployment, "vessel2x5 moored")


def test_every_state_the_tasks_handed_on_was_references_of_a_few_hundred_bytes(deployment: Deployment) -> None:
    """Run last: over every execution above (long documents, OCR jobs, failures), no task put document
    content into the state (Step Functions refuses a state over 256 KB)."""
    assert len(deployment.router.answered) > 50
    largest = max(size for _, size in deployment.router.answered)
    assert largest < 2_000, sorted(deployment.router.answered, key=lambda answer: -answer[1])[:3]
