"""OCR and vision for what has no text of its own: PDF pages without a usable text layer, and images.

The fallback is narrow on purpose (docs/ocr.md): only pages the text-layer parser found
empty, or whose layer it found not to be trusted, go to OCR (a mixed PDF keeps its text layer everywhere
else), an image always does, and an encrypted or malformed document never reaches here — OCR would not fix
it and would cost money to reach the same conclusion. An image is also described by a vision model where
one is configured; the description is its own kind of block, never mixed with what OCR transcribed.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass

from shared.domain.document import ExtractedDocument, ExtractionLimits
from shared.domain.errors import CapabilityUnavailable, LimitExceeded, RecognitionFailed, VisionFailed
from shared.domain.files import FailureReason, FileVersionRecord, OcrState, ProcessingState, Recognition, VisionState
from shared.domain.recognition import MAX_OCR_PAGES, ImageDescription, RecognitionJob, RecognitionResult
from shared.domain.recognized_layout import with_recognition
from shared.domain.steps import Halt, RecognitionInput, Recognized
from shared.domain.uploads import IMAGE_TYPES
from shared.domain.usage import UsageStep
from shared.domain.workflow import ProcessVersion
from shared.observability import logger
from shared.ports import FileContentStore, OcrProvider, OcrSource, TranscriptionProvider, VisionProvider
from shared.services.attempts import AttemptClaims, Held
from shared.services.extracted_documents import ExtractedDocuments
from shared.services.limits import SpendLimits
from shared.services.metering import Metering


@dataclass(frozen=True)
class RecognitionPlan:
    """What a version needs beyond its text layer."""

    ocr_pages: tuple[int, ...]
    # Pages that need OCR beyond MAX_OCR_PAGES: left without text, and said so.
    unread_pages: tuple[int, ...]
    describe: bool
    # OCR every page, replacing the text layer (a rescan asked for it).
    replaces_text_layer: bool

    @property
    def needed(self) -> bool:
        return bool(self.ocr_pages) or self.describe


def recognition_plan(
    media_type: str, document: ExtractedDocument, *, every_page: bool, max_pages: int = MAX_OCR_PAGES
) -> RecognitionPlan:
    image = media_type in IMAGE_TYPES
    every = tuple(range(1, (document.page_count or 1) + 1))
    # A page whose text layer is not trusted is read like a page without one (its layer stays until OCR
    # returns text for it).
    untrusted = {layer.page for layer in document.doubtful_text_layers}
    wanted = every if image or every_page else tuple(sorted({*document.pages_without_text, *untrusted}))
    return RecognitionPlan(
        ocr_pages=wanted[:max_pages],
        unread_pages=wanted[max_pages:],
        describe=image,
        replaces_text_layer=every_page and not image,
    )


# Polls of one OCR job before it is given up as failed (with the workflow's 10-second Wait: about an hour).
MAX_OCR_POLLS = 360

# What OCR made of the pages it was asked to read: a result, a refusal, or nothing (no engine was asked, or the
# tenant's daily OCR limit kept it from being asked).
OcrOutcome = RecognitionResult | RecognitionFailed | CapabilityUnavailable | LimitExceeded | None


@dataclass(frozen=True)
class Recognizers:
    """The engines that read what has no text layer (and, for a recording, the speech engine)."""

    ocr: OcrProvider
    vision: VisionProvider
    transcription: TranscriptionProvider | None = None


class PageRecognition:
    """The recognize step: OCR reads the pages without text (and a vision model describes an image), and what
    they read is merged into the stored text layer."""

    def __init__(
        self,
        recognizers: Recognizers,
        *,
        claims: AttemptClaims,
        documents: ExtractedDocuments,
        content: FileContentStore,
        metering: Metering,
        limits: ExtractionLimits,
        spend: SpendLimits | None = None,
    ) -> None:
        self._spend = spend
        self._ocr = recognizers.ocr
        self._vision = recognizers.vision
        self._claims = claims
        self._documents = documents
        self._content = content
        self._metering = metering
        self._limits = limits

    def can_read(self, plan: RecognitionPlan) -> bool:
        """Whether an engine here can read what the plan asks for (otherwise the text layer is all there is)."""
        return bool(plan.ocr_pages and self._ocr.capability().available) or bool(
            plan.describe and self._vision.capability().available
        )

    def recognize(self, request: RecognitionInput) -> Recognized:
        """Start reading (the result at once, or the job to poll), or poll the job the input names."""
        if request.ocr_job is not None:
            return self.collect(request, request.ocr_job, polls=request.ocr_polls)
        held = self._claims.held(request, ProcessingState.RECOGNIZING)
        if held is None:
            return Recognized.halted(request, Halt.NOT_HELD)
        version = held.version
        original = self._reader(version)  # read at most once, whether OCR or vision asks first
        document = self._documents.read(version)
        plan = recognition_plan(version.media_type, document, every_page=request.rescan)
        # Before the engine is asked: over the tenant's OCR limit the pages stay unread, said so on the version.
        over_limit = self._over_ocr_limit(request, plan)
        if not plan.ocr_pages or not self._ocr.capability().available or over_limit is not None:
            return self.finish(request, held, document, plan, ocr=over_limit, original=original)
        source = OcrSource(
            media_type=version.media_type,
            pages=plan.ocr_pages,
            page_count=document.page_count,
            storage_key=version.storage_key,
            storage_version_id=version.storage_version_id,
            read=original,
            run_id=f"{version.version_id}-{request.attempt}",
        )
        progress: RecognitionResult | RecognitionJob | RecognitionFailed | CapabilityUnavailable
        try:
            progress = self._ocr.start(source)
        except (RecognitionFailed, CapabilityUnavailable) as refusal:
            progress = refusal
        except FileNotFoundError:
            # The file was deleted while OCR started (its bytes go in the delete request): nothing left to do.
            if self._claims.held(request, ProcessingState.RECOGNIZING) is None:
                return Recognized.halted(request, Halt.NOT_STORED)
            raise
        if isinstance(progress, RecognitionJob):
            return Recognized.going_on(request, ocr_job=progress)
        return self.finish(request, held, document, plan, ocr=progress, original=original)

    def _over_ocr_limit(self, request: ProcessVersion, plan: RecognitionPlan) -> LimitExceeded | None:
        if self._spend is None or not plan.ocr_pages or not self._ocr.capability().available:
            return None
        return self._spend.ocr_refusal(request.tenant_id, pages=len(plan.ocr_pages), then="scan the file again")

    def collect(self, request: ProcessVersion, job: RecognitionJob, *, polls: int = 0) -> Recognized:
        """One poll of a running OCR job (the workflow waits between polls; nothing sleeps on a job). `polls`
        counts the polls before this one: a job still running after MAX_OCR_POLLS is given up as failed."""
        held = self._claims.held(request, ProcessingState.RECOGNIZING)
        if held is None:
            # Superseded, deleted or already done: nobody will collect this job, so let the engine free it.
            self._ocr.discard(job)
            return Recognized.halted(request, Halt.NOT_HELD)
        outcome: OcrOutcome
        try:
            result = self._ocr.collect(job)
        except (RecognitionFailed, CapabilityUnavailable) as refusal:
            outcome = refusal
        else:
            if result is None and polls + 1 >= MAX_OCR_POLLS:
                self._ocr.discard(job)
                outcome = RecognitionFailed(
                    f"the OCR engine had not finished after {polls + 1} polls; scan the file again to retry"
                )
            elif result is None:
                # Still running: said on the record, so the sweep does not take a long job for a dead one.
                self._claims.heartbeat(request, ProcessingState.RECOGNIZING)
                return Recognized.going_on(request, ocr_job=job, ocr_polls=polls + 1)
            else:
                outcome = result
        document = self._documents.read(held.version)
        plan = recognition_plan(held.version.media_type, document, every_page=request.rescan)
        return self.finish(request, held, document, plan, ocr=outcome, original=self._reader(held.version))

    def finish(
        self,
        request: ProcessVersion,
        held: Held,
        document: ExtractedDocument,
        plan: RecognitionPlan,
        *,
        ocr: OcrOutcome,
        original: Callable[[], bytes],
    ) -> Recognized:
        """Merge what OCR read (and the image's description) into the text layer, and store the document:
        usage is recorded first (a priced call happened whatever follows), then the document, then the row."""
        file, version = held.file, held.version
        notes: list[str] = []
        recognition = Recognition()
        if isinstance(ocr, RecognitionResult):
            self._metering.record(file, version, step=UsageStep.OCR, attempt=request.attempt, usage=ocr.usage)
            recognition = Recognition(
                ocr_state=OcrState.RECOGNIZED,
                ocr_engine=ocr.engine,
                recognized_pages=tuple(page.page for page in ocr.pages),
                ocr_confidence=round(ocr.confidence, 4),
            )
        elif isinstance(ocr, RecognitionFailed):
            notes.append(f"OCR failed, so pages {_listed(plan.ocr_pages)} have no text: {ocr.detail}")
            recognition = Recognition(
                ocr_state=OcrState.FAILED, ocr_engine=self._ocr.capability().provider, ocr_detail=ocr.detail
            )
        elif isinstance(ocr, LimitExceeded):
            notes.append(f"pages {_listed(plan.ocr_pages)} were not read by OCR: {ocr}")
            recognition = Recognition(ocr_state=OcrState.UNAVAILABLE, ocr_detail=str(ocr))
        elif plan.ocr_pages:
            reason = ocr.reason if isinstance(ocr, CapabilityUnavailable) else self._ocr.capability().reason
            reason = reason or "no OCR engine is configured"
            untrusted = any(layer.page in plan.ocr_pages for layer in document.doubtful_text_layers)
            what = "have no text layer, or one not trusted," if untrusted else "have no text layer"
            notes.append(f"pages {_listed(plan.ocr_pages)} {what} and OCR is unavailable here: {reason}")
            recognition = Recognition(ocr_state=OcrState.UNAVAILABLE, ocr_detail=reason)
        if plan.unread_pages:
            notes.append(
                f"only {len(plan.ocr_pages)} pages are read by OCR per document:"
                f" pages {_listed(plan.unread_pages)} were not read"
            )
        description: ImageDescription | None = None
        if plan.describe:
            description, vision = self._described(request, held, original)
            recognition = recognition.model_copy(
                update=vision.model_dump(include={"vision_state", "vision_model", "vision_detail"})
            )
            if vision.vision_detail and vision.vision_state is not VisionState.DESCRIBED:
                notes.append(f"no description of the image: {vision.vision_detail}")
        merged = with_recognition(
            document,
            self._limits,
            read_pages=plan.ocr_pages,
            result=ocr if isinstance(ocr, RecognitionResult) else None,
            description=description,
            notes=notes,
        )
        if not merged.blocks:
            return self._documents.fail(Recognized, request, version, *_nothing_read(document, ocr, recognition))
        return self._documents.store(Recognized, request, version, merged, recognition=recognition)

    def _described(
        self, request: ProcessVersion, held: Held, original: Callable[[], bytes]
    ) -> tuple[ImageDescription | None, Recognition]:
        status = self._vision.capability()
        if not status.available:
            return None, Recognition(vision_state=VisionState.UNAVAILABLE, vision_detail=status.reason)
        if self._spend is not None:
            refusal = self._spend.vision_refusal(held.file.tenant_id, then="scan the file again")
            if refusal is not None:
                return None, Recognition(vision_state=VisionState.UNAVAILABLE, vision_detail=str(refusal))
        image = original()  # a storage failure is the infrastructure's: retried, not recorded
        try:
            description = self._vision.describe(image, held.version.media_type)
        except VisionFailed as failure:
            return None, Recognition(vision_state=VisionState.FAILED, vision_detail=failure.detail)
        except CapabilityUnavailable as error:
            return None, Recognition(vision_state=VisionState.UNAVAILABLE, vision_detail=error.reason)
        except Exception as error:
            # The adapter has retried already. A description enriches an image that OCR has read; it is
            # not worth leaving the whole version unprocessed for: recorded as failed, a rescan tries again.
            logger.exception("the vision model did not answer")
            detail = f"the vision model did not answer ({type(error).__name__}); scan the file again to retry"
            return None, Recognition(vision_state=VisionState.FAILED, vision_detail=detail)
        self._metering.record(
            held.file, held.version, step=UsageStep.VISION, attempt=request.attempt, usage=description.usage
        )
        return description, Recognition(vision_state=VisionState.DESCRIBED, vision_model=description.model_id)

    def _reader(self, version: FileVersionRecord) -> Callable[[], bytes]:
        """The original's bytes, fetched on the first call only."""

        @functools.cache
        def read() -> bytes:
            return self._content.get(
                version.storage_key, version_id=version.storage_version_id, max_bytes=self._limits.max_bytes
            )

        return read


def _nothing_read(document: ExtractedDocument, ocr: OcrOutcome, recognition: Recognition) -> tuple[FailureReason, str]:
    """Why a document that needed OCR ended with no text at all: never an empty success."""
    pages = document.page_count or 1
    where = "the page" if pages == 1 else f"any of its {pages} pages"
    if isinstance(ocr, LimitExceeded):
        return FailureReason.SPEND_LIMIT, str(ocr)
    if isinstance(ocr, RecognitionFailed):
        return FailureReason.OCR_FAILED, f"OCR failed: {ocr.detail}"
    if isinstance(ocr, RecognitionResult):
        return FailureReason.NO_TEXT_FOUND, f"OCR found no words on {where}"
    reason = recognition.ocr_detail or "no OCR engine is configured"
    return FailureReason.NO_TEXT_LAYER, f"there is no text layer on {where}, and OCR is unavailable: {reason}"


def _listed(pages: tuple[int, ...]) -> str:
    shown = ", ".join(str(page) for page in pages[:20])
    return shown + (f" and {len(pages) - 20} more" if len(pages) > 20 else "")
