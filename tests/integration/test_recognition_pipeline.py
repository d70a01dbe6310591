"""The recognize step against the real database and object store, with engines replaced by fakes (named
so) to reach what the local engines never do: an asynchronous job polled to completion, an engine that
fails, no engine at all, a vision model that describes or refuses, and a usage ledger that is down."""

import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.adapters.local.unavailable import UnavailableOcr, UnavailableVision
from shared.bootstrap import overridden
from shared.domain.capabilities import CapabilityStatus
from shared.domain.errors import RecognitionFailed, VisionFailed
from shared.domain.files import FailureReason, OcrState, ProcessingState, VisionState
from shared.domain.limits import TenantLimits
from shared.domain.recognition import (
    BoundingBox,
    ImageDescription,
    RecognitionJob,
    RecognitionResult,
    RecognizedLine,
    RecognizedPage,
)
from shared.domain.similarity import MINILM_SCALE
from shared.domain.steps import Indexed
from shared.domain.usage import Usage
from shared.domain.workflow import ProcessVersion
from shared.local import scan_corpus
from shared.ports import OcrSource, UsageLedger
from shared.services.indexing import Indexer
from shared.services.limits import SpendLimits
from shared.services.pipeline import IngestionPipeline
from shared.services.recognition import Recognizers
from tests.builders.containers import WithParts
from tests.integration.files_stack import Stack

BOX = BoundingBox(left=0.1, top=0.1, width=0.6, height=0.03)


def recognized(pages: tuple[int, ...], text: str) -> RecognitionResult:
    return RecognitionResult(
        engine="fake-async-ocr",
        pages=tuple(
            RecognizedPage(page=page, lines=(RecognizedLine(text=f"{text} page {page}", box=BOX, confidence=0.91),))
            for page in pages
        ),
        usage=Usage(provider="fake-async-ocr", operation="fake:analyze", priced=True, pages=len(pages)),
    )


class FakeAsyncOcr:
    """Answers like Textract's asynchronous analysis: a job, still running for `polls` polls, then done."""

    def __init__(self, text: str, *, polls: int = 2, fail_with: str | None = None) -> None:
        self._text, self._polls, self._fail_with = text, polls, fail_with
        self.sources: list[OcrSource] = []
        self.collected = 0
        self.discarded: list[str] = []

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready("fake-async-ocr")

    def start(self, source: OcrSource) -> RecognitionJob:
        self.sources.append(source)
        return RecognitionJob(engine="fake-async-ocr", job_id="job-1", analysis=True, pages=source.pages or ())

    def discard(self, job: RecognitionJob) -> None:
        self.discarded.append(job.job_id)

    def collect(self, job: RecognitionJob) -> RecognitionResult | None:
        self.collected += 1
        if self.collected <= self._polls:
            return None
        if self._fail_with:
            raise RecognitionFailed(self._fail_with)
        return recognized(job.pages, self._text)


class FakeVision:
    def __init__(self, *, refuse: str | None = None) -> None:
        self._refuse = refuse

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready("fake-vision")

    def describe(self, image: bytes, media_type: str) -> ImageDescription:
        assert image.startswith(b"\x89PNG") and media_type == "image/png"
        if self._refuse:
            raise VisionFailed(self._refuse)
        return ImageDescription(
            model_id="fake-vision-model",
            text="A dashboard table of returns by region in which Kamchatka has the highest margin.",
            usage=Usage(
                provider="fake-vision",
                operation="fake:describe",
                model="fake-vision-model",
                priced=True,
                images=1,
                input_tokens=1200,
                output_tokens=40,
            ),
        )


class DownLedger:
    def record(self, *args: object, **kwargs: object) -> bool:
        raise ConnectionError("the ledger's database is unreachable")

    def record_request(self, *args: object, **kwargs: object) -> None:
        raise ConnectionError("the ledger's database is unreachable")

    def totals(self, *args: object, **kwargs: object) -> list[Any]:
        return []

    def spent_since(self, *args: object, **kwargs: object) -> Any:
        raise ConnectionError("the ledger's database is unreachable")

    def ocr_runs_since(self, *args: object, **kwargs: object) -> list[Any]:
        raise ConnectionError("the ledger's database is unreachable")


def pipeline(
    stack: Stack, *, ocr: Any, vision: Any = None, ledger: UsageLedger | None = None, spend: SpendLimits | None = None
) -> IngestionPipeline:
    container = stack.container
    return IngestionPipeline(
        container.file_metadata,
        container.file_metadata,
        container.content,
        container.extractor,
        container.indexer,
        recognizers=Recognizers(ocr=ocr, vision=vision or UnavailableVision("no vision model in this test")),
        ledger=ledger or container.usage_ledger,
        sleep=lambda seconds: None,
        spend=spend,
    )


def reprocess(stack: Stack, tenant: str, file_id: str, run: Callable[[ProcessVersion], object]) -> dict[str, Any]:
    """Take an already processed version again (as a rescan would) and run `run` on the new attempt."""
    record = stack.container.file_metadata.get_file(tenant, uuid.UUID(file_id))
    assert record is not None
    version = record.current
    attempt = stack.container.file_metadata.queue_rescan(tenant, version.version_id)
    assert attempt is not None
    run(ProcessVersion(tenant_id=tenant, file_id=file_id, version_id=str(version.version_id), attempt=attempt))
    found = stack.container.file_metadata.find_version(tenant, version.version_id)
    assert found is not None
    return {"version": found[1], "attempt": attempt}


@pytest.fixture(scope="module")
def uploaded(stack: Stack) -> dict[str, Any]:
    tenant = f"r{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant)
    files = {}
    for scan in (scan_corpus.scanned_pdf(), scan_corpus.mixed_pdf(), scan_corpus.table_screenshot()):
        files[scan.filename] = stack.upload(token, scan.filename, scan.media_type, scan.content)["fileId"]
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    return {"tenant": tenant, "token": token, "files": files}


def test_an_asynchronous_job_is_polled_to_completion_and_billed_once(stack: Stack, uploaded: dict[str, Any]) -> None:
    tenant = uploaded["tenant"]
    engine = FakeAsyncOcr("Remote engine text")
    done = reprocess(stack, tenant, uploaded["files"]["scanned-remittance.pdf"], pipeline(stack, ocr=engine).run)
    version = done["version"]
    assert version.processing_state is ProcessingState.INDEXED
    assert (version.ocr_state, version.ocr_engine, version.recognized_pages) == (
        OcrState.RECOGNIZED,
        "fake-async-ocr",
        (1, 2),
    )
    assert version.ocr_confidence == pytest.approx(0.91)
    # The source named the storage object (an engine like Textract reads it there) and this run.
    source = engine.sources[0]
    assert source.pages == (1, 2) and source.storage_key == version.storage_key
    assert source.run_id == f"{version.version_id}-{done['attempt']}"
    assert engine.collected == 3  # two polls while it ran, then the result

    # A poll delivered again after the version moved on does nothing (and bills nothing).
    again = pipeline(stack, ocr=engine).collect_recognition(
        ProcessVersion(
            tenant_id=tenant,
            file_id=uploaded["files"]["scanned-remittance.pdf"],
            version_id=str(version.version_id),
            attempt=done["attempt"],
        ),
        RecognitionJob(engine="fake-async-ocr", job_id="job-1", analysis=True, pages=(1, 2)),
    )
    assert again.proceed is False
    totals = stack.container.usage_ledger.totals(tenant, frozenset({"docs"}), since=_epoch(), until=_future())
    fake = [total for total in totals if total.provider == "fake-async-ocr"]
    assert len(fake) == 1 and (fake[0].calls, fake[0].pages, fake[0].priced) == (1, 2, True)
    assert not stack.container.usage_ledger.record(
        tenant,
        uuid.UUID(uploaded["files"]["scanned-remittance.pdf"]),
        version.version_id,
        "docs",
        step="ocr",
        attempt=done["attempt"],
        usage=recognized((1,), "x").usage,
    )


def test_an_ocr_failure_on_a_scan_is_a_recorded_failure_never_an_empty_success(
    stack: Stack, uploaded: dict[str, Any]
) -> None:
    engine = FakeAsyncOcr("unused", polls=0, fail_with="the document's pages could not be read (BadDocument)")
    done = reprocess(
        stack, uploaded["tenant"], uploaded["files"]["scanned-remittance.pdf"], pipeline(stack, ocr=engine).run
    )
    version = done["version"]
    assert version.processing_state is ProcessingState.FAILED
    assert version.failure_reason is FailureReason.OCR_FAILED and "BadDocument" in (version.failure_detail or "")


def test_an_ocr_failure_on_a_mixed_pdf_keeps_its_text_layer_and_says_what_is_missing(
    stack: Stack, uploaded: dict[str, Any]
) -> None:
    engine = FakeAsyncOcr("unused", polls=0, fail_with="throttled past every retry of the document")
    done = reprocess(
        stack, uploaded["tenant"], uploaded["files"]["mixed-operations.pdf"], pipeline(stack, ocr=engine).run
    )
    version = done["version"]
    assert version.processing_state is ProcessingState.INDEXED
    assert version.ocr_state is OcrState.FAILED and "throttled" in (version.ocr_detail or "")
    assert version.pages_without_text == (2,)
    assert any("OCR failed, so pages 2 have no text" in warning for warning in version.extraction_warnings)


def test_without_any_ocr_engine_a_scan_fails_as_no_text_layer_naming_why(
    stack: Stack, uploaded: dict[str, Any]
) -> None:
    absent = UnavailableOcr("no OCR engine in this deployment: set one up")
    done = reprocess(
        stack, uploaded["tenant"], uploaded["files"]["scanned-remittance.pdf"], pipeline(stack, ocr=absent).run
    )
    version = done["version"]
    assert version.processing_state is ProcessingState.FAILED
    assert version.failure_reason is FailureReason.NO_TEXT_LAYER
    assert "there is no text layer on any of its 2 pages" in (version.failure_detail or "")
    assert "no OCR engine in this deployment" in (version.failure_detail or "")
    mixed = reprocess(
        stack, uploaded["tenant"], uploaded["files"]["mixed-operations.pdf"], pipeline(stack, ocr=absent).run
    )
    assert mixed["version"].processing_state is ProcessingState.INDEXED
    assert mixed["version"].ocr_state is OcrState.UNAVAILABLE


def test_an_image_is_transcribed_and_described_and_the_description_is_cited_as_one(
    stack: Stack, uploaded: dict[str, Any]
) -> None:
    file_id = uploaded["files"]["returns-dashboard.png"]
    run = pipeline(stack, ocr=stack.container.ocr, vision=FakeVision()).run
    version = reprocess(stack, uploaded["tenant"], file_id, run)["version"]
    assert version.processing_state is ProcessingState.INDEXED
    assert (version.vision_state, version.vision_model) == (VisionState.DESCRIBED, "fake-vision-model")
    assert version.ocr_state is OcrState.RECOGNIZED
    status, answer = stack.json(
        "POST", "/v1/search", uploaded["token"], {"query": "which region has the highest margin", "limit": 5}
    )
    assert status == 200
    kinds = {hit["citation"]["kind"] for hit in answer["hits"] if hit["citation"]["fileId"] == file_id}
    assert kinds == {"transcription", "description"}
    described = next(hit for hit in answer["hits"] if hit["citation"]["kind"] == "description")
    assert "Kamchatka has the highest margin" in described["excerpt"] and described["citation"]["ocrConfidence"] is None
    totals = stack.container.usage_ledger.totals(
        uploaded["tenant"], frozenset({"docs"}), since=_epoch(), until=_future()
    )
    vision = [total for total in totals if total.step == "vision"]
    assert len(vision) == 1 and (vision[0].images, vision[0].input_tokens, vision[0].output_tokens) == (1, 1200, 40)


def test_past_the_daily_vision_limit_the_model_is_not_called_and_the_file_says_why(
    stack: Stack, uploaded: dict[str, Any]
) -> None:
    tenant = uploaded["tenant"]
    file_id = uploaded["files"]["returns-dashboard.png"]
    record = stack.container.file_metadata.get_file(tenant, uuid.UUID(file_id))
    assert record is not None
    # Earlier today the tenant's one image a day was described.
    described_today = Usage(provider="fake-vision", operation="fake:describe", priced=True, images=1)
    stack.container.usage_ledger.record(
        tenant, uuid.uuid4(), uuid.uuid4(), "docs", step="vision", attempt=1, usage=described_today
    )

    class Counting(FakeVision):
        calls = 0

        def describe(self, image: bytes, media_type: str) -> ImageDescription:
            Counting.calls += 1
            return super().describe(image, media_type)

    spend = SpendLimits(
        stack.container.usage_ledger, stack.container.file_metadata, TenantLimits(vision_images_per_day=1)
    )
    run = pipeline(stack, ocr=stack.container.ocr, vision=Counting(), spend=spend).run
    version = reprocess(stack, tenant, file_id, run)["version"]
    assert Counting.calls == 0
    assert version.vision_state is VisionState.UNAVAILABLE
    assert version.vision_detail is not None and "daily vision limit of 1 image is spent" in version.vision_detail
    # What OCR read is still indexed: the limit costs the description only.
    assert version.processing_state is ProcessingState.INDEXED and version.ocr_state is OcrState.RECOGNIZED


def test_a_refused_description_is_recorded_and_the_transcription_still_indexed(
    stack: Stack, uploaded: dict[str, Any]
) -> None:
    run = pipeline(stack, ocr=stack.container.ocr, vision=FakeVision(refuse="the image was filtered")).run
    version = reprocess(stack, uploaded["tenant"], uploaded["files"]["returns-dashboard.png"], run)["version"]
    assert version.processing_state is ProcessingState.INDEXED
    assert (version.vision_state, version.vision_detail) == (VisionState.FAILED, "the image was filtered")
    assert any("no description of the image" in warning for warning in version.extraction_warnings)


def test_a_ledger_that_is_down_is_logged_and_the_document_is_still_stored(
    stack: Stack, uploaded: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    engine = FakeAsyncOcr("Text read while the ledger was down", polls=0)
    run = pipeline(stack, ocr=engine, ledger=DownLedger()).run
    version = reprocess(stack, uploaded["tenant"], uploaded["files"]["scanned-remittance.pdf"], run)["version"]
    assert version.processing_state is ProcessingState.INDEXED and version.ocr_state is OcrState.RECOGNIZED
    assert "usage not recorded" in caplog.text


def _epoch() -> Any:
    from datetime import UTC, datetime

    return datetime(2000, 1, 1, tzinfo=UTC)


def _future() -> Any:
    from datetime import UTC, datetime, timedelta

    return datetime.now(UTC) + timedelta(days=1)


def test_the_recognize_step_hands_a_running_job_to_the_workflow_and_polls_it_when_given_back(
    stack: Stack, uploaded: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions.recognize import handler as recognize_step
    from shared.local.http_api import LocalLambdaContext

    tenant, file_id = uploaded["tenant"], uploaded["files"]["scanned-remittance.pdf"]
    engine = FakeAsyncOcr("Polled by the state machine", polls=1)
    steps = pipeline(stack, ocr=engine)
    with overridden(WithParts(stack.container, pipeline=steps)):
        record = stack.container.file_metadata.get_file(tenant, uuid.UUID(file_id))
        assert record is not None
        attempt = stack.container.file_metadata.queue_rescan(tenant, record.current.version_id)
        assert attempt is not None
        request = ProcessVersion(
            tenant_id=tenant, file_id=file_id, version_id=str(record.current.version_id), attempt=attempt
        )
        assert steps.inspect(request).proceed and steps.extract(request).recognize

        event = request.step_input()
        first = recognize_step.handler(event, LocalLambdaContext("recognize"))
        # References only: the job's id and pages, never a word of the document.
        assert first["proceed"] and first["ocrJob"]["job_id"] == "job-1" and first["ocrJob"]["pages"] == [1, 2]
        assert "Polled by the state machine" not in str(first)
        # Each output is the next input as it stands (the state machine passes it on): attempt and all.
        assert first["attempt"] == attempt
        still_running = recognize_step.handler(first, LocalLambdaContext("recognize"))
        assert "ocrJob" in still_running and still_running["proceed"]
        done = recognize_step.handler(still_running, LocalLambdaContext("recognize"))
        assert done["proceed"] and "ocrJob" not in done
        found = stack.container.file_metadata.find_version(tenant, record.current.version_id)
        assert found is not None and found[1].processing_state is ProcessingState.EXTRACTED
        assert indexed(steps, request).indexed is True


def indexed(steps: IngestionPipeline, request: ProcessVersion) -> Indexed:
    """The steps after recognition, as the state machine runs them: chunk, embed each batch, index, publish."""
    chunked = steps.chunk(request)
    for batch in chunked.batches:
        steps.embed(request, batch)
    outcome = steps.index(request)
    steps.publish(request, work=outcome.work)
    return outcome


class FlakyMetadata:
    """The real metadata store, except that the first final record of an extraction fails as if the
    database went away after the document was written: the step is then delivered again."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.failed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def record_extraction(self, *args: Any, awaiting_recognition: bool = False, **kwargs: Any) -> bool:
        if not awaiting_recognition and not self.failed:
            self.failed += 1
            raise ConnectionError("the database went away after the document was written")
        return bool(self._inner.record_extraction(*args, awaiting_recognition=awaiting_recognition, **kwargs))


def test_a_recognize_step_delivered_again_after_a_crash_merges_once_and_keeps_its_flags(
    stack: Stack, uploaded: dict[str, Any]
) -> None:
    tenant, file_id = uploaded["tenant"], uploaded["files"]["mixed-operations.pdf"]
    container = stack.container
    flaky = FlakyMetadata(container.file_metadata)
    engine = FakeAsyncOcr("Scanned minutes", polls=0)
    steps = IngestionPipeline(
        flaky,
        flaky,
        container.content,
        container.extractor,
        container.indexer,
        recognizers=Recognizers(ocr=engine, vision=UnavailableVision("none")),
        ledger=container.usage_ledger,
        sleep=lambda seconds: None,
    )
    record = container.file_metadata.get_file(tenant, uuid.UUID(file_id))
    assert record is not None
    attempt = container.file_metadata.queue_rescan(tenant, record.current.version_id)
    assert attempt is not None
    request = ProcessVersion(
        tenant_id=tenant, file_id=file_id, version_id=str(record.current.version_id), attempt=attempt
    )
    assert steps.inspect(request).proceed and steps.extract(request).recognize
    job = steps.recognize(request).ocr_job
    assert job is not None
    with pytest.raises(ConnectionError):
        steps.collect_recognition(request, job)
    # Step Functions delivers the poll again: the merge starts from the text layer, not from itself.
    done = steps.collect_recognition(request, job)
    assert done.proceed and done.attempt == attempt
    found = container.file_metadata.find_version(tenant, record.current.version_id)
    assert found is not None
    version = found[1]
    assert version.processing_state is ProcessingState.EXTRACTED
    assert (version.ocr_state, version.recognized_pages) == (OcrState.RECOGNIZED, (2,))
    document = steps.documents.read(version)
    assert [block.text for block in document.blocks].count("Scanned minutes page 2") == 1
    assert document.recognized_pages == (2,) and document.confidence == pytest.approx(0.91)
    # The text layer it started from is gone; the row points at the merged document.
    assert version.document_key is not None and not version.document_key.endswith("-text-layer.json")
    assert container.content.head(version.document_key.replace(".json", "-text-layer.json")) is None
    assert indexed(steps, request).indexed is True


def test_an_engine_refused_for_want_of_permission_is_recorded_as_unavailable(
    stack: Stack, uploaded: dict[str, Any]
) -> None:
    from shared.domain.errors import CapabilityUnavailable

    class Forbidden(FakeAsyncOcr):
        def start(self, source: OcrSource) -> RecognitionJob:
            raise CapabilityUnavailable("ocr", "grant textract:StartDocumentAnalysis to the function's role")

    done = reprocess(
        stack, uploaded["tenant"], uploaded["files"]["scanned-remittance.pdf"], pipeline(stack, ocr=Forbidden("x")).run
    )
    version = done["version"]
    assert version.processing_state is ProcessingState.FAILED
    assert version.failure_reason is FailureReason.NO_TEXT_LAYER
    assert "grant textract:StartDocumentAnalysis" in (version.failure_detail or "")


def test_a_vision_model_that_never_answers_does_not_hold_up_the_transcription(
    stack: Stack, uploaded: dict[str, Any]
) -> None:
    class Silent(FakeVision):
        def describe(self, image: bytes, media_type: str) -> ImageDescription:
            raise TimeoutError("read timed out after every retry")

    run = pipeline(stack, ocr=stack.container.ocr, vision=Silent()).run
    version = reprocess(stack, uploaded["tenant"], uploaded["files"]["returns-dashboard.png"], run)["version"]
    assert version.processing_state is ProcessingState.INDEXED and version.ocr_state is OcrState.RECOGNIZED
    assert version.vision_state is VisionState.FAILED and "TimeoutError" in (version.vision_detail or "")


def test_a_job_of_a_superseded_attempt_is_discarded_not_collected(stack: Stack, uploaded: dict[str, Any]) -> None:
    # A file of its own: the sweep restarts a stalled version only a few times.
    scan = scan_corpus.scanned_pdf()
    tenant = uploaded["tenant"]
    file_id = stack.upload(uploaded["token"], "another-scan.pdf", scan.media_type, scan.content)["fileId"]
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    engine = FakeAsyncOcr("Late result", polls=0)
    steps = pipeline(stack, ocr=engine)
    record = stack.container.file_metadata.get_file(tenant, uuid.UUID(file_id))
    assert record is not None
    attempt = stack.container.file_metadata.queue_rescan(tenant, record.current.version_id)
    assert attempt is not None
    old = ProcessVersion(tenant_id=tenant, file_id=file_id, version_id=str(record.current.version_id), attempt=attempt)
    assert steps.inspect(old).proceed and steps.extract(old).recognize
    job = steps.recognize(old).ocr_job
    assert job is not None
    # The sweep starts a new attempt while the old job runs.
    newer = stack.container.file_metadata.queue_processing(tenant, record.current.version_id, stale_before=_future())
    assert newer == attempt + 1
    late = steps.collect_recognition(old, job)
    assert late.proceed is False and engine.collected == 0 and engine.discarded == ["job-1"]
    steps.run(old.model_copy(update={"attempt": newer}))


class BrokenEmbedder:
    """Fake embedding port whose model endpoint fails in a way no retry inside the adapter absorbed."""

    languages: frozenset[str] | None = None  # every language, as a multilingual model
    similarity_scale = MINILM_SCALE

    model_id = "broken-embedder"
    dimension = 384
    max_tokens = 256

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus(provider="broken", available=True)

    def count_tokens(self, text: str) -> int:
        return max(1, len(text.split()))

    def embed(self, texts: Any) -> list[list[float]]:
        raise ConnectionResetError("the model endpoint reset the connection")

    def usage(self, tokens: int) -> Usage:
        raise AssertionError("nothing was embedded")

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        return self.embed(questions)


def test_the_local_runner_records_an_infrastructure_failure_as_the_state_machines_catch_does(
    stack: Stack, uploaded: dict[str, Any]
) -> None:
    container = stack.container
    steps = IngestionPipeline(
        container.file_metadata,
        container.file_metadata,
        container.content,
        container.extractor,
        Indexer(container.knowledge, BrokenEmbedder(), container.adapters.language_detector),
        recognizers=Recognizers(ocr=UnavailableOcr("no OCR in this test"), vision=UnavailableVision("none")),
        ledger=container.usage_ledger,
    )
    tenant, file_id = uploaded["tenant"], uploaded["files"]["mixed-operations.pdf"]

    with pytest.raises(ConnectionResetError):
        reprocess(stack, tenant, file_id, steps.run)

    record = container.file_metadata.get_file(tenant, uuid.UUID(file_id))
    assert record is not None and record.current.processing_state is ProcessingState.INTERRUPTED
    assert record.current.failure_reason is None
    assert record.current.failure_detail == (
        "the embed step failed: ConnectionResetError: the model endpoint reset the connection"
    )
    # Its work is removed; the sweep will find it (interrupted is one of the states it asks for again).
    work = f"derived/{record.current.storage_key}/work-{record.current.processing_attempt}/"
    assert list(container.content.object_versions(work)) == []
    # The sweep asks for it again: a rescan starts the count of automatic retries over.
    cutoff = datetime.now(UTC) + timedelta(hours=2)
    waiting = container.file_metadata.versions_awaiting_processing(tenant, cutoff=cutoff)
    given_up = container.file_metadata.versions_given_up(tenant, cutoff=cutoff)
    assert record.current.processing_retries == 0
    assert record.current.version_id in {version.version_id for _, version in waiting}
    assert record.current.version_id not in {version.version_id for _, version in given_up}
