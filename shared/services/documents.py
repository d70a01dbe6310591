"""Reading one document, for every surface (the HTTP API, the agent tools, the console): windows of its blocks and
of its tables, its summary, a comparison of two versions, an image's analysis, and a rescan.

A caller first gets an `EntitledVersion` (entitlement checked: an unentitled id is the same NotFound as a missing
one), notes the collection it is in, then reads it; whether there is a document to read is decided once, by
`shared.domain.files.unreadable`. What is returned is what search cites: the stored document, never the engines.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from shared.domain.auth import Principal
from shared.domain.chunking import block_text
from shared.domain.document import Block, BlockKind, ExtractedDocument, Location
from shared.domain.document_diff import DocumentDiff, compare_blocks
from shared.domain.errors import CapabilityUnavailable, Forbidden, InvalidRequest, NotReady
from shared.domain.files import (
    FileRecord,
    FileVersionRecord,
    Recognition,
    VersionState,
    ensure_readable,
    unreadable,
)
from shared.domain.outline import Outline, outline
from shared.domain.reading import Part, Window, is_oversized, part_of, window
from shared.domain.recognition import MAX_OCR_PAGES
from shared.domain.rendering import render_block
from shared.domain.summaries import GeneratedSummary
from shared.domain.uploads import IMAGE_TYPES, SCANNABLE_TYPES
from shared.domain.usage import RequestKind, converse_usage
from shared.domain.workflow import ProcessVersion
from shared.observability import logger
from shared.ports import AuthorizationPolicy, DocumentSummarizer, OcrProvider, ProcessingAttempts, Workflow
from shared.services.extracted_documents import ExtractedDocuments
from shared.services.files import FileService
from shared.services.limits import SpendLimits
from shared.services.metering import Metering
from shared.services.reindexing import WORKFLOW_UNREACHABLE

MAX_SUMMARY_SENTENCES = 12
# A window of tables: as many as fit in the document window's character bound, at most this many.
MAX_TABLES_PER_CALL = 20
MAX_TABLE_CHARACTERS = 24_000
HEADING_SEPARATOR = " > "


class NotAnImage(InvalidRequest):
    """analyze_image was asked of a file that is not an image."""

    code = "not_an_image"


class NothingToCompare(InvalidRequest):
    """A comparison with no other side named, of a file with no earlier version that has a document."""

    code = "nothing_to_compare"


@dataclass(frozen=True)
class EntitledVersion:
    """A version the caller may read, with its file: what every read below starts from."""

    record: FileRecord
    version: FileVersionRecord

    @property
    def collection_id(self) -> str:
        return self.record.collection_id


@dataclass(frozen=True)
class BlockWindow:
    """Blocks of a document from `offset`: whole blocks as many as fit, or one piece (`part`) of a block larger than
    a window. `next_offset`/`next_part` are where to continue (None: the document, or the block, ends here)."""

    version: FileVersionRecord
    document: ExtractedDocument
    offset: int
    part: int
    blocks: tuple[Block, ...]
    markdown: str | None  # the piece's Markdown when the window is a part; else the caller renders `blocks`
    next_offset: int | None
    next_part: int | None


@dataclass(frozen=True)
class ShownTable:
    position: int  # among the document's tables
    index: int  # among its blocks
    block: Block
    text: str  # its section and rows, as Markdown


@dataclass(frozen=True)
class TableWindow:
    version: FileVersionRecord
    offset: int
    part: int
    tables: tuple[ShownTable, ...]
    total_tables: int
    next_offset: int | None
    next_part: int | None


@dataclass(frozen=True)
class DocumentSummary:
    """A model's cited summary, or (with `reason`, why there is none) the extractive outline: never invented."""

    version: FileVersionRecord
    block_count: int
    generated: GeneratedSummary | None
    outline: Outline | None
    reason: str | None


@dataclass(frozen=True)
class Comparison:
    before: EntitledVersion
    before_blocks: int
    after: EntitledVersion
    after_blocks: int
    diff: DocumentDiff


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


class DocumentReader:
    def __init__(
        self,
        files: FileService,
        documents: ExtractedDocuments,
        *,
        attempts: ProcessingAttempts,
        workflow: Workflow,
        ocr: OcrProvider,
        summarizer: DocumentSummarizer,
        policy: AuthorizationPolicy,
        spend: SpendLimits,
        metering: Metering,
    ) -> None:
        self._files = files
        self._documents = documents
        self._attempts = attempts
        self._workflow = workflow
        self._ocr = ocr
        self._summarizer = summarizer
        self._policy = policy
        self._spend = spend
        self._metering = metering

    def entitled(self, principal: Principal, file_id: UUID, version_id: UUID | None = None) -> EntitledVersion:
        """The newest stored version, or `version_id` (an older one a citation names; VersionDeleted once it is
        gone), entitlement checked. Whether it has a document is each read's question."""
        record, version = self._files.document_version(principal, file_id, version_id)
        return EntitledVersion(record, version)

    def document(self, entitled: EntitledVersion) -> ExtractedDocument:
        """The version's extracted document, or DocumentNotReady saying why there is none."""
        version = entitled.version
        if version.state is not VersionState.STORED:
            raise NotReady(f"this version is {version.state.value}: there is nothing to read")
        return self._documents.read(ensure_readable(version))

    def window(self, entitled: EntitledVersion, start: int) -> tuple[ExtractedDocument, Window]:
        """Whole blocks from `start` (GET /v1/files/{id}/document's cursor): a block larger than a window alone."""
        document = self.document(entitled)
        try:
            return document, window(document.blocks, start)
        except ValueError as error:
            raise InvalidRequest("cursor is not one this API returned") from error

    def block_window(self, entitled: EntitledVersion, offset: int, part: int) -> BlockWindow:
        """Blocks from `offset`; a block larger than a window comes in parts (rows of a table, characters of
        anything else) from `part`."""
        document = self.document(entitled)
        blocks = document.blocks
        oversized = offset < len(blocks) and is_oversized(blocks[offset])
        if part and not oversized:
            raise InvalidRequest(f"part continues a block larger than one window; block {offset} is not one")
        if oversized:
            piece = _part(blocks[offset], part)
            following = offset + 1 if offset + 1 < len(blocks) else None
            return BlockWindow(
                version=entitled.version,
                document=document,
                offset=offset,
                part=part,
                blocks=(blocks[offset],),
                markdown=piece.markdown,
                next_offset=offset if piece.next_part is not None else following,
                next_part=piece.next_part,
            )
        try:
            shown = window(blocks, offset)
        except ValueError as error:
            raise InvalidRequest(f"offset {offset} is past the document's {len(blocks)} blocks") from error
        return BlockWindow(
            version=entitled.version,
            document=document,
            offset=offset,
            part=part,
            blocks=shown.blocks,
            markdown=None,
            next_offset=shown.next_start,
            next_part=None,
        )

    def table_window(self, entitled: EntitledVersion, offset: int, part: int) -> TableWindow:
        """The document's tables from `offset`, as many as fit in a window's characters (at most
        MAX_TABLES_PER_CALL); a table larger than a window comes alone, in parts from `part`."""
        document = self.document(entitled)
        tables = [
            (index, block)
            for index, block in enumerate(document.blocks)
            if block.kind is BlockKind.TABLE and block.table is not None
        ]
        if offset > len(tables):
            raise InvalidRequest(f"offset {offset} is past the document's {len(tables)} tables")
        oversized = offset < len(tables) and is_oversized(tables[offset][1])
        if part and not oversized:
            raise InvalidRequest(f"part continues a table larger than one window; table {offset} is not one")
        shown: list[ShownTable] = []
        next_part = None
        characters = 0
        for position in range(offset, min(len(tables), offset + MAX_TABLES_PER_CALL)):
            index, block = tables[position]
            if oversized:
                # A table larger than a window: its header rows and the next rows that fit, then the rest in parts.
                piece = _part(block, part)
                rendered, next_part = piece.markdown, piece.next_part
            else:
                rendered = render_block(block)
            section = HEADING_SEPARATOR.join(block.heading_path)
            text = (f"Section: {section}\n\n" if section else "") + rendered
            if shown and (characters + len(text) > MAX_TABLE_CHARACTERS or is_oversized(block)):
                break
            characters += len(text)
            shown.append(ShownTable(position=position, index=index, block=block, text=text))
            if oversized:
                break
        end = offset + len(shown)
        following = end if end < len(tables) else None
        return TableWindow(
            version=entitled.version,
            offset=offset,
            part=part,
            tables=tuple(shown),
            total_tables=len(tables),
            next_offset=offset if next_part is not None else following,
            next_part=next_part,
        )

    def summarize(self, principal: Principal, entitled: EntitledVersion) -> DocumentSummary:
        """A model's cited summary where one may be had, else the outline of headings and leading sentences."""
        document = self.document(entitled)
        generated, reason = self._generated_summary(principal, document.blocks, entitled.collection_id)
        return DocumentSummary(
            version=entitled.version,
            block_count=len(document.blocks),
            generated=generated,
            outline=None if generated is not None else outline(document.blocks),
            reason=reason,
        )

    def _generated_summary(
        self, principal: Principal, blocks: Sequence[Block], collection: str
    ) -> tuple[GeneratedSummary | None, str | None]:
        """A model's cited summary (checked against the blocks), its tokens metered to the document's collection,
        or None and why there is none: no summarizer is configured, the caller may not spend the tenant's tokens,
        the day's are spent, or the model could not give one (throttled, refused, no valid citation)."""
        status = self._summarizer.capability()
        if not status.available:
            return None, status.reason or "no summarizer is configured"
        try:
            # A model's summary spends the tenant's Bedrock tokens, as a rescan spends its OCR: the write role's call.
            self._policy.ensure_can_write(principal, collection)
        except Forbidden as refused:
            return None, f"a model-written summary spends the tenant's model tokens: {refused}; this is the outline"
        # Checked, not reserved (shared/services/limits.py): refused once the day's tokens are spent.
        over_limit = self._spend.generation_refusal(principal.tenant_id, tokens=1, then="ask for the summary again")
        if over_limit is not None:
            return None, f"{over_limit}: this is the extractive outline instead"
        texts = [render_block(block) if block.kind is BlockKind.TABLE else block.text for block in blocks]
        try:
            summary = self._summarizer.summarize(texts, max_sentences=MAX_SUMMARY_SENTENCES)
        except CapabilityUnavailable as refused:
            return None, f"{refused.reason}: this is the extractive outline instead"
        self._metering.record_request(
            principal,
            kind=RequestKind.SUMMARY,
            collections=frozenset({collection}),
            usage=converse_usage(summary.model, input_tokens=summary.input_tokens, output_tokens=summary.output_tokens),
        )
        return summary, None

    @staticmethod
    def previous_version(record: FileRecord, version_id: UUID | None) -> UUID:
        """The version of `record` to compare the named one (or the newest) with: the latest stored one before it
        that has a document (one whose extraction failed has nothing to compare)."""
        named = record.version(version_id)
        older = [
            version
            for version in record.versions
            if version.state is VersionState.STORED
            and version.created_at < named.created_at
            and unreadable(version) is None
        ]
        if not older:
            raise NothingToCompare(
                "this file has no earlier version with a document: name otherFileId (another file) or otherVersionId"
            )
        return max(older, key=lambda version: version.created_at).version_id

    def compare(self, before: EntitledVersion, after: EntitledVersion) -> Comparison:
        """A structural diff of two documents: sections added, removed and changed, and table cells changed."""
        old, new = self.document(before), self.document(after)
        return Comparison(
            before=before,
            before_blocks=len(old.blocks),
            after=after,
            after_blocks=len(new.blocks),
            diff=compare_blocks(old.blocks, new.blocks),
        )

    def analyze_image(self, entitled: EntitledVersion) -> ImageAnalysis:
        version = entitled.version
        if version.media_type not in IMAGE_TYPES:
            raise NotAnImage(
                f"analyze_image reads images; this file is {version.media_type}: call extract_text"
                " (or extract_tables) to read it"
            )
        document = self.document(entitled)
        transcribed = [block for block in document.blocks if block.confidence is not None]
        descriptions = [block.text for block in document.blocks if block.kind is BlockKind.DESCRIPTION]
        return ImageAnalysis(
            file_id=entitled.record.file_id,
            version_id=version.version_id,
            transcription=tuple(_located(block) for block in transcribed),
            description="\n\n".join(descriptions) if descriptions else None,
            confidence=document.confidence,
            low_confidence=document.low_confidence,
            recognition=version.recognition,
        )

    def scan(self, principal: Principal, file_id: UUID) -> ScanStarted:
        """OCR every page of the current version again (a scan whose OCR failed or read poorly, or a PDF whose
        text layer is garbage), as a new processing attempt; search keeps the old chunks until the new ones
        replace them."""
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


def _part(block: Block, part: int) -> Part:
    try:
        return part_of(block, part)
    except ValueError as error:
        raise InvalidRequest(str(error)) from error


def _located(block: Block) -> LocatedText:
    return LocatedText(kind=block.kind, text=block_text(block), location=block.location, confidence=block.confidence)
