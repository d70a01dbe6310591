"""The state machine CloudFormation resolved from the dev template, executed by moto's Step Functions interpreter,
with each task's function run in process from its resolved environment, with its own role's session, every call
to AWS authorized against the deployed policies (tests/builders/enforced_stack.py, docs/testing.md "Handlers under
IAM enforcement"), against the embedded PostgreSQL and moto's S3.

Choice branches, the OCR Wait loop, the embed Map, every Retry and Catch run as deployed. Only time is shortened:
moto's retry back-off and Wait states do not sleep here.
"""

import secrets
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from functions.views.files import VersionView
from shared.adapters.local.rapid_ocr import RapidOcr
from shared.adapters.local.unavailable import UnavailableEmbedder
from shared.bootstrap import Container, acting_for_tenant
from shared.domain.auth import Role, with_role
from shared.domain.files import FailureReason, ProcessingState
from shared.domain.recognition import RecognitionJob, RecognitionResult
from shared.domain.search import SearchQuery
from shared.domain.workflow import ProcessVersion, StartOutcome
from shared.local import scan_corpus
from shared.ports import OcrSource
from shared.services.indexing import Indexer, IndexTarget
from tests.builders.enforced_stack import TEXT_DOCUMENT_STEPS, EnforcedStack
from tests.builders.recordings import Recording, write_recording
from tests.builders.transcribe_worker import TranscribeWorker
from tests.conftest import load_event

PRINCIPAL = with_role("acme", "ann", {"docs"}, Role.ADMIN)


@pytest.fixture(scope="module")
def deployment(enforced_stack: EnforcedStack) -> EnforcedStack:
    return enforced_stack


@pytest.fixture(autouse=True)
def nothing_refused(deployment: EnforcedStack) -> Iterator[None]:
    """Every path runs with the deployed grants: a refusal a handler caught (a clean-up that gave up, a look-up
    taken for "missing") would pass the test's own checks and still be an AccessDenied on AWS."""
    before = len(deployment.judge.decisions)
    yield
    assert [d for d in deployment.judge.decisions[before:] if not d.allowed] == []


@contextmanager
def tenant_data(deployment: EnforcedStack, function: str) -> Iterator[Container]:
    """As function `function` reaching acme's data: its role, its container, acme's tenant session."""
    with deployment.acting(function) as container, acting_for_tenant("acme"):
        yield container


def text_pdf(heading: str, paragraph: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.multi_cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 7, paragraph, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def found(deployment: EnforcedStack, words: str) -> list[str]:
    """What the API function's search finds (the query embedded with its role's Bedrock grant)."""
    with deployment.acting("api") as container:
        outcome = container.retrieval.search(PRINCIPAL, SearchQuery(text=words, limit=5))
    return [hit.citation.filename for hit in getattr(outcome, "hits", [])]


def found_anywhere(deployment: EnforcedStack, words: str) -> set[str]:
    """The files of the hits and of the places their identical texts are also in (`alsoIn`)."""
    with deployment.acting("api") as container:
        outcome = container.retrieval.search(PRINCIPAL, SearchQuery(text=words, limit=5))
    hits = getattr(outcome, "hits", [])
    return {hit.citation.filename for hit in hits} | {place.filename for hit in hits for place in hit.also_in}


def test_a_text_pdf_runs_inspect_extract_chunk_embed_index_publish_and_is_found(deployment: EnforcedStack) -> None:
    content = text_pdf("Ballast water", "The Oresund ferry exchanges ballast water only beyond the shelf edge.")
    version, execution = deployment.run("ballast.pdf", "application/pdf", content)
    assert execution["status"] == "SUCCEEDED"
    assert version.processing_state is ProcessingState.INDEXED and version.chunk_count >= 1
    assert version.embedded_chunk_count == version.chunk_count
    assert deployment.functions.steps(str(version.version_id)) == TEXT_DOCUMENT_STEPS
    assert "ballast.pdf" in found(deployment, "Oresund ballast water shelf edge")
    # The attempt's intermediate work is gone once published.
    work = f"derived/{version.storage_key}/work-"
    with tenant_data(deployment, "publish") as publish:
        assert list(publish.content.object_versions(work)) == []


def test_a_scanned_pdf_takes_the_ocr_branch_and_is_found_on_words_only_in_pixels(deployment: EnforcedStack) -> None:
    scan = scan_corpus.scanned_pdf()
    version, execution = deployment.run(scan.filename, scan.media_type, scan.content)
    assert execution["status"] == "SUCCEEDED"
    assert "recognize" in deployment.functions.steps(str(version.version_id))
    assert version.processing_state is ProcessingState.INDEXED
    assert version.recognized_pages == (1, 2) and version.ocr_confidence is not None
    assert scan.filename in found(deployment, "Marguerite Okonkwo certified the vessel")


def test_an_image_is_recognized_and_indexed(deployment: EnforcedStack) -> None:
    screenshot = scan_corpus.table_screenshot()
    version, execution = deployment.run(screenshot.filename, screenshot.media_type, screenshot.content)
    assert execution["status"] == "SUCCEEDED"
    assert deployment.functions.steps(str(version.version_id))[:3] == ["inspect", "extract", "recognize"]
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
    deployment: EnforcedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = PolledOcr()
    monkeypatch.setattr(deployment.container("recognize").pipeline.recognition, "_ocr", engine)
    scan = scan_corpus.mixed_pdf()
    version, execution = deployment.run(scan.filename, scan.media_type, scan.content)
    assert execution["status"] == "SUCCEEDED"
    steps = deployment.functions.steps(str(version.version_id))
    # Started once, polled until it answered: each poll is a Wait state and a Recognize task again.
    assert steps.count("recognize") == 4 and list(engine.polls.values()) == [3]
    polled = [i.event for i in deployment.functions.invocations if i.step == "recognize" and "ocrJob" in i.event]
    assert [event.get("ocrPolls", 0) for event in polled] == [0, 1, 2]
    assert version.processing_state is ProcessingState.INDEXED and version.recognized_pages == (2,)


def test_a_recording_is_transcribed_by_a_transcribe_job_polled_through_the_wait_loop(
    deployment: EnforcedStack, tmp_path: Path
) -> None:
    """The real adapter against moto's Transcribe API, every call judged against the deployed policies: the job is
    started with the recognize step's tenant session, Transcribe's worker (a named fake) reads the recording and
    writes its output with that session, and the adapter reads and removes it."""
    recording = Recording("briefing", "wav", "wav", "pcm_s16le", rate=16_000, channels=1, seconds=4.0)
    content = write_recording(recording, tmp_path).read_bytes()
    sentences = ["Ballast water is exchanged beyond the shelf edge.", "The Oresund ferry logs every exchange."]
    before = len(deployment.judge.decisions)
    with TranscribeWorker(sentences).working() as worker:
        version, execution = deployment.run("briefing.wav", "audio/wav", content)
    assert execution["status"] == "SUCCEEDED"
    steps = deployment.functions.steps(str(version.version_id))
    # Started once (moto's job: QUEUED, IN_PROGRESS, COMPLETED a poll each), each poll a Wait and a Recognize again.
    assert steps[:3] == ["inspect", "extract", "recognize"] and steps.count("recognize") == 4
    polled = [
        i.event
        for i in deployment.functions.invocations
        if i.step == "recognize"
        and i.event.get("versionId") == str(version.version_id)
        and "transcriptionJob" in i.event
    ]
    assert [event.get("transcriptionPolls", 0) for event in polled] == [0, 1, 2]
    ((name, output),) = worker.written.items()
    assert name.startswith(f"quire-{version.version_id}-") and worker.read_bytes[name] == len(content)
    assert version.processing_state is ProcessingState.INDEXED
    assert version.transcription_engine == "amazon-transcribe" and version.transcription_language == "en-US"
    assert version.duration_seconds == pytest.approx(4.0, abs=0.05)  # the probe's, from the header
    assert "briefing.wav" in found(deployment, "ballast water exchanged beyond the shelf edge")
    # Collected, then discarded: the job and every version of its output are gone.
    assert name not in worker.jobs()
    with tenant_data(deployment, "recognize") as recognize:
        assert list(recognize.content.object_versions(output)) == []
    judged = deployment.judge.decisions[before:]
    assert {d.action for d in judged if d.action.startswith("transcribe:")} == {
        "transcribe:StartTranscriptionJob",
        "transcribe:GetTranscriptionJob",
        "transcribe:DeleteTranscriptionJob",
    }
    # Transcribe's own write was the tenant session's, allowed by its grants.
    assert [d for d in judged if d.action == "s3:PutObject" and output in d.resource and d.allowed]


def test_a_malformed_file_succeeds_with_the_failure_recorded(deployment: EnforcedStack) -> None:
    damaged = b"%PDF-1.7\n" + secrets.token_bytes(4096) + b"\n%%EOF\n"
    version, execution = deployment.run("damaged.pdf", "application/pdf", damaged)
    # A document problem is not the infrastructure's: the execution succeeds, the version says why.
    assert execution["status"] == "SUCCEEDED"
    assert version.processing_state is ProcessingState.FAILED
    assert version.failure_reason is FailureReason.MALFORMED
    assert deployment.functions.steps(str(version.version_id)) == ["inspect", "extract"]


def test_a_transient_database_error_is_retried_and_the_version_indexed(
    deployment: EnforcedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = deployment.container("index").pipeline
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
    assert deployment.history_errors(execution["executionArn"]) == ["InfrastructureUnavailable"] * 2
    assert deployment.functions.steps(str(version.version_id)).count("index") == 3
    assert version.processing_state is ProcessingState.INDEXED


def test_an_outage_past_its_retries_fails_the_execution_and_the_sweep_finds_it(
    deployment: EnforcedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = deployment.container("extract").pipeline
    real_extract = pipeline.extract

    def extract_during_an_outage(request: Any) -> dict[str, Any]:
        raise psycopg.OperationalError("connection to server at 10.0.3.7, port 5432 failed: Connection refused")

    monkeypatch.setattr(pipeline, "extract", extract_during_an_outage)
    content = text_pdf("Lighthouses", "The Fastnet light flashes white every five seconds.")
    version, execution = deployment.run("fastnet.pdf", "application/pdf", content)
    # Retried with back-off (1 call and 6 retries), then caught: recorded on the version, execution FAILED.
    assert execution["status"] == "FAILED"
    assert execution["error"] == "InfrastructureUnavailable"
    steps = deployment.functions.steps(str(version.version_id))
    assert steps == ["inspect", *["extract"] * 7, "record_failure"]
    assert version.processing_state is ProcessingState.INTERRUPTED
    assert version.failure_reason is None
    assert version.failure_detail is not None and version.failure_detail.startswith("the extract step failed")
    assert "Connection refused" in version.failure_detail
    # The owner is told which step and what happens next, never the infrastructure's own message.
    shown = VersionView.of(version).interruption
    assert shown == "the extract step could not reach a service it depends on; it is retried automatically"

    # The outage is over; the scheduled sweep finds the interrupted version and starts attempt 2, which succeeds.
    monkeypatch.setattr(pipeline, "extract", real_extract)
    deployment.age(version.version_id, deployment.container("reconcile").settings.reconcile_stuck_after_seconds + 60)
    report = deployment.invoke(deployment.handler("reconcile"), load_event("scheduled_reconcile.json"))
    requested = [r for r in report["processingRequested"] if r["versionId"] == str(version.version_id)]
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
    assert deployment.wait(second[0]["executionArn"])["status"] == "SUCCEEDED"
    assert deployment.version(version.version_id).processing_state is ProcessingState.INDEXED


def test_a_bug_fails_at_once_without_retries(deployment: EnforcedStack, monkeypatch: pytest.MonkeyPatch) -> None:
    def chunk_with_a_bug(request: Any) -> dict[str, Any]:
        raise KeyError("batches")

    monkeypatch.setattr(deployment.container("chunk").pipeline, "chunk", chunk_with_a_bug)
    content = text_pdf("Knots", "A bowline makes a fixed loop at the end of a line.")
    version, execution = deployment.run("knots.pdf", "application/pdf", content)
    assert execution["status"] == "FAILED" and execution["error"] == "KeyError"
    assert deployment.functions.steps(str(version.version_id)).count("chunk") == 1
    assert version.processing_state is ProcessingState.INTERRUPTED


def test_the_same_s3_event_delivered_three_times_starts_one_execution(deployment: EnforcedStack) -> None:
    content = text_pdf("Moorings", "Harbour moorings are inspected every spring.")
    version_id, event = deployment.upload("moorings.pdf", "application/pdf", content)
    outcomes = [deployment.deliver(event) for _ in range(3)]
    assert outcomes[0] == {"outcome": "stored"} and outcomes[1:] == [{"outcome": "duplicate"}] * 2
    executions = deployment.executions(version_id)
    assert len(executions) == 1
    assert deployment.wait(executions[0]["executionArn"])["status"] == "SUCCEEDED"
    # And a start for the same version and attempt again (a redelivered start) is absorbed by its name.
    found_version = deployment.container("api").file_metadata.find_version("acme", uuid.UUID(version_id))
    assert found_version is not None
    again = ProcessVersion(tenant_id="acme", file_id=str(found_version[0].file_id), version_id=version_id)
    with deployment.acting("on_object_created") as on_object_created:
        assert on_object_created.workflow.start(again) is StartOutcome.ALREADY_STARTED
    assert len(deployment.executions(version_id)) == 1


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
    deployment: EnforcedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.services import attempt_work

    monkeypatch.setattr(attempt_work, "CHUNKS_PER_BATCH", 2)
    version, execution = deployment.run("harbour-log.pdf", "application/pdf", sectioned_pdf(6))
    assert execution["status"] == "SUCCEEDED"
    steps = deployment.functions.steps(str(version.version_id))
    assert version.chunk_count >= 5 and steps.count("embed") == -(-version.chunk_count // 2)
    assert version.embedded_chunk_count == version.chunk_count and version.embedding_gap is None
    # Each batch's embedding is on the ledger once, as one line for the step.
    usage = deployment.container("api").usage_ledger.totals(
        "acme", frozenset({"docs"}), since=datetime.now(UTC) - timedelta(hours=1), until=datetime.now(UTC)
    )
    assert "embed" in {line.step for line in usage} and not [line for line in usage if "#" in line.step]
    assert "harbour-log.pdf" in found(deployment, "vessel3x7 moored at berth 7")


def test_a_reindex_runs_through_the_state_machine_from_the_stored_document_batch_by_batch(
    deployment: EnforcedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.services import attempt_work

    monkeypatch.setattr(attempt_work, "CHUNKS_PER_BATCH", 2)
    version, execution = deployment.run("tide-log.pdf", "application/pdf", sectioned_pdf(5))
    assert execution["status"] == "SUCCEEDED"
    # Stale: indexed while the model was down, so keyword-only (as after an outage, or a model change).
    with tenant_data(deployment, "index") as container:
        found_version = container.file_metadata.find_version("acme", version.version_id)
        assert found_version is not None
        down = Indexer(
            container.knowledge,
            UnavailableEmbedder("the model was down", dimension=container.embedder.dimension),
            container.adapters.language_detector,
        )
        down.index(IndexTarget.of(*found_version), container.documents.read(version), attempt=None)
    assert deployment.version(version.version_id).embedded_chunk_count == 0
    before = len(deployment.functions.invocations)
    with tenant_data(deployment, "api") as api:
        report = api.reindexer.start_batch("acme", frozenset({"docs"}))
    assert (report.queued, report.remaining) == (1, 0)
    executions = deployment.executions(str(version.version_id))
    assert len(executions) == 2
    newest = max(executions, key=lambda e: e["startDate"])
    assert deployment.wait(newest["executionArn"])["status"] == "SUCCEEDED", deployment.judge.refused()
    steps = [invocation.step for invocation in deployment.functions.invocations[before:]]
    # Inspect goes straight to chunk: nothing is extracted or OCR'd again; the embed Map runs a task per batch.
    assert "extract" not in steps and "recognize" not in steps
    reindexed = deployment.version(version.version_id)
    assert steps.count("embed") == -(-reindexed.chunk_count // 2) and steps[-2:] == ["index", "publish"]
    assert reindexed.processing_state is ProcessingState.INDEXED
    assert reindexed.embedded_chunk_count == reindexed.chunk_count > 0
    assert reindexed.embedding_model == deployment.container("embed").embedder.model_id
    assert "tide-log.pdf" in found(deployment, "vessel3x7 moored at berth 7")


def test_a_batch_the_model_did_not_embed_leaves_the_version_keyword_only_and_says_why(
    deployment: EnforcedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.services import attempt_work

    monkeypatch.setattr(attempt_work, "CHUNKS_PER_BATCH", 2)
    indexer = deployment.container("embed").pipeline._indexer
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
    # (harbour-log.pdf, indexed before it, holds the same sections: one hit, the other place under alsoIn.)
    assert "quay-log.pdf" in found_anywhere(deployment, "vessel2x5 moored")


def test_every_state_the_tasks_handed_on_was_references_of_a_few_hundred_bytes(deployment: EnforcedStack) -> None:
    """Run last: over every execution above (long documents, OCR jobs, failures), no task put document
    content into the state (Step Functions refuses a state over 256 KB)."""
    # The tasks' answers: not those of the functions the test invoked as API Gateway or EventBridge would.
    invoked_by_the_test = {"api", "on_object_created", "reconcile", "render"}
    answered = [
        (i.step, i.answered)
        for i in deployment.functions.invocations
        if i.error is None and i.step not in invoked_by_the_test
    ]
    assert len(answered) > 50
    largest = max(size for _, size in answered)
    assert largest < 2_000, sorted(answered, key=lambda answer: -answer[1])[:3]
