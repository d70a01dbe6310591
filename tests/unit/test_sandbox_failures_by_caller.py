"""What each caller of `sandboxed` makes of each Failure: the sentence and error type the person who asked
reads, the failure reason recorded on a version, and whether a retry may help. Out of memory (a native abort) is
everywhere what the child's own MemoryError is to that caller. `sandboxed` is stood in for, so
no child runs; tests/unit/test_sandbox_outcomes.py shows each Failure arising from a real child."""

import signal
from collections.abc import Callable
from typing import Any

import pytest

from shared import sandbox
from shared.adapters.aws import bedrock_vision, textract_ocr
from shared.adapters.local import rapid_ocr, whisper_transcription
from shared.adapters.parsers.plain_text import PlainTextParser
from shared.domain.document import ExtractionFailure, ExtractionLimits
from shared.domain.errors import (
    CapabilityUnavailable,
    InfrastructureUnavailable,
    PayloadTooLarge,
    RecognitionFailed,
    TranscriptionFailed,
    VisionFailed,
)
from shared.domain.exports import ExportFormat, RenderFailed
from shared.domain.files import FailureReason
from shared.domain.page_images import PageUnreadable
from shared.domain.transcription import MediaSource
from shared.ports import OcrSource
from shared.sandbox import AnswerTooLarge, Crashed, Failure, KilledFromOutside, OutOfMemory, TimedOut, Unreadable
from shared.services import artifacts, exports, extraction, isolated, page_images, upload_completion
from shared.services.upload_completion import Completion
from tests.builders.office import word_document
from tests.builders.writing_services import WritingServices
from tests.fakes import Fakes, principal

ABORTED = OutOfMemory(-signal.SIGABRT)
KILLED = KilledFromOutside(-signal.SIGKILL)
UNREADABLE = Unreadable(ValueError("not an answer"))


def failing(monkeypatch: pytest.MonkeyPatch, module: Any, failure: Failure) -> None:
    def sandboxed(*args: Any, **kwargs: Any) -> Failure:
        return failure

    monkeypatch.setattr(module, "sandboxed", sandboxed)


def raised(action: Callable[[], object]) -> Exception:
    try:
        action()
    except Exception as error:
        return error
    raise AssertionError("nothing was raised")


# --- extraction: a failed document, except a kill from outside, which the pipeline step retries as an outage ---


@pytest.mark.parametrize(
    ("failure", "reason", "detail"),
    [
        (TimedOut(2), FailureReason.TIMED_OUT, "extraction took longer than 2 seconds"),
        (AnswerTooLarge(10), FailureReason.TOO_LARGE, "the extracted document is too large"),
        (ABORTED, FailureReason.TOO_LARGE, "the document needed more memory than extraction allows"),
        (Crashed(139), FailureReason.MALFORMED, "the parser crashed on this document (exit 139)"),
        (Crashed(-signal.SIGKILL), FailureReason.MALFORMED, "the parser crashed on this document (exit -9)"),
        (UNREADABLE, FailureReason.MALFORMED, "the parser crashed on this document (exit None)"),
    ],
)
def test_extraction_records_a_failure_as_a_failed_document(
    monkeypatch: pytest.MonkeyPatch, failure: Failure, reason: FailureReason, detail: str
) -> None:
    failing(monkeypatch, extraction, failure)
    extractor = extraction.Extractor([PlainTextParser()], ExtractionLimits(timeout_seconds=2))
    outcome = extractor.extract(b"text", "text/plain")
    assert isinstance(outcome, ExtractionFailure) and (outcome.reason, outcome.detail) == (reason, detail)


def test_extraction_raises_a_kill_from_outside_as_an_outage(monkeypatch: pytest.MonkeyPatch) -> None:
    failing(monkeypatch, extraction, KILLED)
    extractor = extraction.Extractor([PlainTextParser()], ExtractionLimits())
    with pytest.raises(InfrastructureUnavailable, match=r"^the sandboxed parser was killed from outside \(SIGKILL\)$"):
        extractor.extract(b"text", "text/plain")


# --- page images: the page's own problem is unreadable; a timeout or a crash is a retryable RenderFailed ---------


@pytest.mark.parametrize(
    ("failure", "sentence"),
    [
        (AnswerTooLarge(16 * 1024 * 1024), "the drawing of page 3 is larger than 16,777,216 bytes: not served"),
        (ABORTED, "page 3 needs more memory to draw than allowed: it is not served"),
    ],
)
def test_a_page_the_limits_refuse_is_unreadable(failure: Failure, sentence: str) -> None:
    assert page_images.drawing_outcome(failure, 3) == PageUnreadable(sentence)


@pytest.mark.parametrize(
    ("failure", "sentence"),
    [
        (TimedOut(15), "drawing page 3 took longer than 15 seconds: it is not served"),
        (Crashed(1), "drawing page 3 failed (recorded for the operators)"),
        (KILLED, "drawing page 3 failed (recorded for the operators)"),
        (UNREADABLE, "drawing page 3 failed (recorded for the operators)"),
    ],
)
def test_a_page_that_timed_out_or_crashed_may_be_asked_for_again(failure: Failure, sentence: str) -> None:
    error = raised(lambda: page_images.drawing_outcome(failure, 3))
    assert isinstance(error, RenderFailed) and (error.sentence, error.retryable) == (sentence, True)


# --- exports (and PDF tools, which render through ExportService.isolated) ---------------------------------------


@pytest.mark.parametrize(
    ("failure", "sentence", "retryable"),
    [
        (TimedOut(30), "rendering took longer than 30 seconds (the export limit)", True),
        (AnswerTooLarge(1), "the rendered file would pass {max_bytes} bytes (the export limit)", False),
        (ABORTED, "rendering ran out of memory: export a shorter version", False),
        (KILLED, "rendering failed inside the renderer (recorded for the operators)", True),
        (Crashed(1), "rendering failed inside the renderer (recorded for the operators)", True),
        (UNREADABLE, "rendering failed inside the renderer (recorded for the operators)", False),
    ],
)
def test_an_export_that_failed_says_so_and_whether_to_try_again(
    monkeypatch: pytest.MonkeyPatch, failure: Failure, sentence: str, retryable: bool
) -> None:
    failing(monkeypatch, exports, failure)
    service = WritingServices().exports
    error = raised(lambda: service.isolated(isolated.render_document, b"", ExportFormat.MARKDOWN))
    expected = sentence.format(max_bytes=service.limits.max_bytes)
    assert isinstance(error, RenderFailed) and (error.sentence, error.retryable) == (expected, retryable)


# --- artifacts: Markdown a caller sent that cannot be read in the limits is too large --------------------------


@pytest.mark.parametrize("failure", [AnswerTooLarge(1), ABORTED, KILLED, Crashed(1), UNREADABLE])
def test_markdown_the_child_could_not_read_is_too_large(monkeypatch: pytest.MonkeyPatch, failure: Failure) -> None:
    failing(monkeypatch, artifacts, failure)
    error = raised(lambda: WritingServices().artifacts.parse_markdown("# Title"))
    assert isinstance(error, PayloadTooLarge)
    assert str(error) == "the Markdown is too large to read: send it in smaller parts, or as blocks"


def test_markdown_that_took_too_long_names_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    failing(monkeypatch, artifacts, TimedOut(5))
    error = raised(lambda: WritingServices().artifacts.parse_markdown("# Title"))
    assert isinstance(error, PayloadTooLarge)
    assert str(error) == (
        "the Markdown took longer than 5 seconds to read (the limit): send it in smaller parts, or as blocks"
    )


# --- upload completion: an Office upload whose archive could not be checked is rejected with the reason --------

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
UNCHECKED = f"the content could not be checked as {DOCX}"


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (TimedOut(20), f"{UNCHECKED}: reading its archive took longer than 20 seconds; upload it again"),
        *(
            (failure, f"{UNCHECKED}: its archive could not be read safely; save the file again and upload it")
            for failure in (AnswerTooLarge(1), ABORTED, KILLED, Crashed(1), UNREADABLE)
        ),
    ],
)
def test_an_office_upload_that_could_not_be_checked_is_rejected_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, failure: Failure, reason: str
) -> None:
    failing(monkeypatch, upload_completion, failure)
    fakes = Fakes()
    document = word_document()
    upload = fakes.files().start_upload(
        principal("acme", "docs"), collection_id="docs", filename="n.docx", media_type=DOCX, byte_size=len(document)
    )
    landed = fakes.content.post(upload.upload, document)
    assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.REJECTED
    found = fakes.metadata.find_version("acme", upload.version_id)
    assert found is not None and found[1].rejection_reason == reason


# --- the OCR and vision adapters: a document problem, recorded, never retried into the same answer -------------

PAGE_COPY_FAILED = (
    "PDFium failed copying out the pages that need OCR (the PDF may be damaged): re-save it and upload it again."
)


@pytest.mark.parametrize(
    ("failure", "detail"),
    [
        (
            TimedOut(30),
            "Copying out the pages that need OCR took longer than 30 seconds: re-save the PDF and upload it again.",
        ),
        (AnswerTooLarge(1), PAGE_COPY_FAILED),
        (ABORTED, "copying out the pages that need OCR ran out of memory"),
        (KILLED, PAGE_COPY_FAILED),
        (Crashed(1), PAGE_COPY_FAILED),
        (UNREADABLE, "PDFium's answer could not be read: re-save the PDF and upload it again."),
    ],
)
def test_textract_page_copying_fails_the_recognition(
    monkeypatch: pytest.MonkeyPatch, failure: Failure, detail: str
) -> None:
    failing(monkeypatch, sandbox, failure)  # textract_ocr calls sandbox.sandboxed
    error = raised(lambda: textract_ocr._pdf_of_pages_isolated(b"%PDF-1.4", [1]))
    assert isinstance(error, RecognitionFailed) and error.detail == detail


IMAGE_DECODER_FAILED = "the image decoder failed on this image (it may be damaged): re-save it"


@pytest.mark.parametrize(
    ("failure", "detail"),
    [
        (TimedOut(10), "decoding the image took longer than 10 seconds"),
        (AnswerTooLarge(1), IMAGE_DECODER_FAILED),
        (ABORTED, "the image needs more memory to decode than is allowed"),
        (KILLED, IMAGE_DECODER_FAILED),
        (Crashed(1), IMAGE_DECODER_FAILED),
        (UNREADABLE, "the image decoder's answer could not be read"),
    ],
)
def test_an_image_the_vision_decoder_failed_on_is_refused(
    monkeypatch: pytest.MonkeyPatch, failure: Failure, detail: str
) -> None:
    failing(monkeypatch, bedrock_vision, failure)
    error = raised(lambda: bedrock_vision.prepare_image_isolated(b"\x89PNG", "image/png"))
    assert isinstance(error, VisionFailed) and error.detail == detail


@pytest.mark.parametrize(
    ("failure", "detail"),
    [
        (TimedOut(60), "OCR took longer than 60 seconds"),
        (AnswerTooLarge(1), "the recognised text is too large"),
        (ABORTED, "the page needs more memory than OCR allows"),
        (KILLED, "the OCR engine crashed on this document (exit -9)"),
        (Crashed(1), "the OCR engine crashed on this document (exit 1)"),
        (UNREADABLE, "the OCR engine's answer could not be read (recorded for the operators)"),
    ],
)
def test_local_ocr_that_failed_fails_the_recognition(
    monkeypatch: pytest.MonkeyPatch, failure: Failure, detail: str
) -> None:
    failing(monkeypatch, rapid_ocr, failure)
    source = OcrSource(
        media_type="image/png", pages=None, page_count=1, storage_key="k", storage_version_id=None, read=lambda: b""
    )
    engine = rapid_ocr.RapidOcr(rapid_ocr.OcrLimits(min_timeout_seconds=60))
    error = raised(lambda: engine.start(source))
    assert isinstance(error, RecognitionFailed) and error.detail == detail


@pytest.mark.parametrize(
    ("failure", "detail"),
    [
        (TimedOut(120), "transcription took longer than 120 seconds"),
        (AnswerTooLarge(1), "the transcript is too large"),
        (ABORTED, "the recording needs more memory than transcription allows"),
        (KILLED, "the speech engine crashed on this recording (exit -9)"),
        (Crashed(1), "the speech engine crashed on this recording (exit 1)"),
        (UNREADABLE, "the speech engine's answer could not be read (recorded for the operators)"),
    ],
)
def test_local_transcription_that_failed_fails_the_recording(
    monkeypatch: pytest.MonkeyPatch, failure: Failure, detail: str
) -> None:
    failing(monkeypatch, whisper_transcription, failure)
    source = MediaSource(
        media_type="audio/mpeg", storage_key="k", storage_version_id=None, fetch=lambda path: None, duration_seconds=60
    )
    engine = whisper_transcription.FasterWhisperTranscription(
        limits=whisper_transcription.TranscriptionLimits(min_timeout_seconds=120)
    )
    error = raised(lambda: engine.start(source))
    assert isinstance(error, TranscriptionFailed) and error.detail == detail


def test_a_model_the_child_refused_to_load_makes_transcription_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    # The child's answer when a model file is not the pinned one: the deployment's problem, not the recording's.
    def sandboxed(work: Any, payload: bytes, read: Callable[[bytes], Any], **kwargs: Any) -> Any:
        return read(b'{"unavailable": "the tiny.en model\'s model.bin is not the pinned file"}')

    monkeypatch.setattr(whisper_transcription, "sandboxed", sandboxed)
    source = MediaSource(media_type="audio/wav", storage_key="k", storage_version_id=None, fetch=lambda path: None)
    error = raised(lambda: whisper_transcription.FasterWhisperTranscription().start(source))
    assert (
        isinstance(error, CapabilityUnavailable)
        and error.reason == "the tiny.en model's model.bin is not the pinned file"
    )
