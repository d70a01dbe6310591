"""Operations on one document that the API and the agent tools expose: scan_document (OCR again) and
analyze_image (what OCR read off an image and what a vision model said it shows).

Each checks entitlement first (an unentitled caller gets the same NotFound as a missing file) and reads
the stored document, never the engines directly: what they return is what search cites.
"""

from uuid import UUID

from pydantic import BaseModel, ConfigDict

from shared.domain.auth import Principal
from shared.domain.chunking import block_text
from shared.domain.document import Block, BlockKind, ExtractedDocument, Location
from shared.domain.errors import CapabilityUnavailable, InvalidRequest, NotReady
from shared.domain.files import DOCUMENT_READY, FileVersionRecord, Recognition, VersionState
from shared.domain.recognition import MAX_OCR_PAGES
from shared.domain.workflow import ProcessVersion
from shared.observability import logger
from shared.ports import OcrProvider, ProcessingAttempts, Workflow
from shared.services.extracted_documents import ExtractedDocuments
from shared.services.files import FileService
from shared.services.limits import SpendLimits
from shared.services.recognition import IMAGE_TYPES
from shared.services.reindexing import WORKFLOW_UNREACHABLE

SCANNABLE_TYPES = IMAGE_TYPES | {"application/pdf"}


class ScanStarted(BaseModel):
    model_config = ConfigDict(frozen=True)

    file_id: UUID
    version_id: UUID
    attempt: int
    engine: str


class LocatedText(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: BlockKind
    text: str
    location: Location
    confidence: float | None


class ImageAnalysis(BaseModel):
    """An image's transcription (OCR's lines, each where it is and how surely read) and, separately, its
    description (a model's reading, labelled as one). Either may be absent, and `recognition` says why."""

    model_config = ConfigDict(frozen=True)

    file_id: UUID
    version_id: UUID
    transcription: tuple[LocatedText, ...]
    description: str | None
    confidence: float | None
    low_confidence: bool
    recognition: Recognition


class DocumentTools:
    def __init__(
        self,
        files: FileService,
        attempts: ProcessingAttempts,
        workflow: Workflow,
        documents: ExtractedDocuments,
        ocr: OcrProvider,
        *,
        spend: SpendLimits | None = None,
    ) -> None:
        self._files = files
        self._attempts = attempts
        self._workflow = workflow
        self._documents = documents
        self._ocr = ocr
        self._spend = spend

    def scan_document(self, principal: Principal, file_id: UUID) -> ScanStarted:
        """OCR every page of the current version again (a scan whose OCR failed or read poorly, or a PDF
        whose text layer is garbage), as a new processing attempt; search keeps the old chunks until the
        new ones replace them."""
        # A rescan spends OCR on the tenant's account: the write role, not read.
        record = self._files.writable_file(principal, file_id)
        version = record.current
        if version.state is not VersionState.STORED:
            raise NotReady(f"this version is {version.state.value}: there is nothing to scan")
        if version.media_type not in SCANNABLE_TYPES:
            raise InvalidRequest(f"only PDFs and images are scanned; this file is {version.media_type}")
        status = self._ocr.capability()
        if not status.available:
            raise CapabilityUnavailable("ocr", status.reason or "no OCR engine is configured")
        if self._spend is not None:
            # Refused here, with a 429, before an attempt is queued: a rescan OCRs every page.
            pages = min(version.page_count or 1, MAX_OCR_PAGES)
            self._spend.ensure_rescan_allowed(principal.tenant_id, file_id, pages=pages)
        attempt = self._attempts.queue_rescan(principal.tenant_id, version.version_id)
        if attempt is None:
            raise NotReady(
                f"the file is being processed ({version.processing_state.value}); scan it once processing ends"
            )
        request = ProcessVersion(
            tenant_id=principal.tenant_id,
            file_id=str(file_id),
            version_id=str(version.version_id),
            attempt=attempt,
            rescan=True,
        )
        try:
            self._workflow.start(request)
        except Exception as error:
            logger.exception("could not start a rescan")
            self._attempts.release_processing(principal.tenant_id, version.version_id, attempt=attempt)
            raise CapabilityUnavailable("workflow", WORKFLOW_UNREACHABLE) from error
        return ScanStarted(file_id=file_id, version_id=version.version_id, attempt=attempt, engine=status.provider)

    def analyze_image(self, principal: Principal, file_id: UUID) -> ImageAnalysis:
        version, document = self._document(principal, file_id)
        if version.media_type not in IMAGE_TYPES:
            raise InvalidRequest(f"analyze_image reads images; this file is {version.media_type}")
        transcribed = [block for block in document.blocks if block.confidence is not None]
        descriptions = [block.text for block in document.blocks if block.kind is BlockKind.DESCRIPTION]
        return ImageAnalysis(
            file_id=file_id,
            version_id=version.version_id,
            transcription=tuple(_located(block) for block in transcribed),
            description="\n\n".join(descriptions) if descriptions else None,
            confidence=document.confidence,
            low_confidence=document.low_confidence,
            recognition=version.recognition,
        )

    def _document(self, principal: Principal, file_id: UUID) -> tuple[FileVersionRecord, ExtractedDocument]:
        version = self._files.readable_document(principal, file_id)
        if version.processing_state not in DOCUMENT_READY:
            raise NotReady(f"the document is {version.processing_state.value.replace('_', ' ')}; try again shortly")
        return version, self._documents.read(version)


def _located(block: Block) -> LocatedText:
    return LocatedText(kind=block.kind, text=block_text(block), location=block.location, confidence=block.confidence)
