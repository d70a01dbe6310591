"""The agent tools (the fifteen of seeds/000 "Initial tools" and `answer`), each a thin call of the service its
HTTP route calls, so the authorization decision is the route's: an unentitled id is the same not-found as a missing one.

Each tool reports the collections it acted in (for the audit) and fences whatever text a document supplied."""

import copy
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar
from uuid import UUID

from pydantic import BaseModel

from functions.api.answer_schemas import AnswerRequestBody, AnswerView
from functions.api.artifact_schemas import ArtifactSummaryView, ArtifactVersionView
from functions.api.routes.artifacts import content_input
from functions.api.schemas import (
    CitationPlace,
    FileSummary,
    NothingToReadView,
    ScanView,
    SearchFiltersBody,
    SearchRequest,
)
from functions.tools import models as m
from shared.domain.artifacts import ArtifactRecord
from shared.domain.auth import Principal
from shared.domain.document import Block, BlockKind, ExtractedDocument
from shared.domain.document_diff import BlockChangeKind, DocumentDiff, SectionDiff, compare_blocks
from shared.domain.errors import CapabilityUnavailable, Forbidden, InvalidRequest, NotFound
from shared.domain.exports import ExportRecord
from shared.domain.fencing import Fence
from shared.domain.files import DOCUMENT_READY, FileRecord, FileVersionRecord, VersionState
from shared.domain.outline import outline
from shared.domain.reading import Part, is_oversized, part_of, window
from shared.domain.rendering import render_block, render_markdown
from shared.domain.search import Empty, SearchQuery
from shared.domain.summaries import GeneratedSummary
from shared.domain.usage import RequestKind, converse_usage
from shared.services.exports import ExportView as Export
from shared.services.recognition import IMAGE_TYPES

if TYPE_CHECKING:
    from shared.bootstrap import Container

Params = TypeVar("Params", bound=BaseModel)
Result = TypeVar("Result", bound=BaseModel)

HEADING_SEPARATOR = " > "
MAX_SUMMARY_SENTENCES = 12
# A window of tables: as many as fit in the document window's character bound, at most this many.
MAX_TABLES_PER_CALL = 20
MAX_TABLE_CHARACTERS = 24_000


class ToolRefused(Exception):
    """A refusal particular to one tool, naming the tool to call instead."""

    def __init__(self, error: str, message: str, *, next_tool: str | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.error = error
        self.next_tool = next_tool
        self.retryable = retryable


@dataclass
class ToolContext:
    principal: Principal
    container: "Container"
    fence: Fence
    # The collections the call acted in once authorized: the audit's record of what it touched.
    touched: set[str] = field(default_factory=set)

    def fenced(self, text: str) -> str:
        return self.fence.wrap(text)

    def file(self, file_id: UUID) -> FileRecord:
        record = self.container.files.get_file(self.principal, file_id)
        self.touched.add(record.collection_id)
        return record

    def document(self, file_id: UUID, version_id: UUID | None) -> tuple[FileVersionRecord, ExtractedDocument]:
        """A stored version's extracted document, entitlement checked as GET /v1/files/{id}/document does, and
        refused as it refuses: retryable only where trying again could change the answer."""
        record, version = self.container.files.readable_version(self.principal, file_id, version_id)
        self.touched.add(record.collection_id)
        if version.processing_state not in DOCUMENT_READY or version.document_key is None:
            nothing = NothingToReadView.of(version)
            raise ToolRefused(
                nothing.error,
                nothing.message,
                next_tool="get_file_processing_status" if nothing.retryable else None,
                retryable=nothing.retryable,
            )
        return version, self.container.documents.read(version)

    def artifact(self, artifact_id: UUID) -> ArtifactRecord:
        """An artifact the caller may read (the same not-found as a missing one otherwise), its collection noted."""
        record = self.container.artifacts.readable(self.principal, artifact_id)
        self.touched.add(record.collection_id)
        return record

    def collection(self, collection_id: str) -> None:
        """A collection the call names: recorded before the service decides, so a refusal is audited in it."""
        self.touched.add(collection_id)


@dataclass(frozen=True)
class Tool(Generic[Params, Result]):
    name: str
    title: str
    description: str
    parameters: type[Params]
    result: type[Result]
    run: Callable[[ToolContext, Params], Result]
    read_only: bool = True
    # Text a document supplied can be in the result (fenced).
    carries_document_text: bool = False

    def input_schema(self) -> dict[str, Any]:
        return copy.deepcopy(_schema(self.parameters, "validation"))

    def output_schema(self) -> dict[str, Any]:
        return copy.deepcopy(_schema(self.result, "serialization"))


@functools.cache
def _schema(model: type[BaseModel], mode: Literal["validation", "serialization"]) -> dict[str, Any]:
    # Generated once per process: each call's audit reads the tool's id parameters from it.
    return model.model_json_schema(by_alias=True, mode=mode)


# --- files ----------------------------------------------------------------------------------------------------


def list_files(ctx: ToolContext, params: m.ListFilesParams) -> m.FileList:
    if params.collection_id:
        ctx.collection(params.collection_id)
    page = ctx.container.files.list_files(
        ctx.principal, collection_id=params.collection_id, limit=params.limit, cursor=params.cursor
    )
    ctx.touched.update(record.collection_id for record in page.files)
    return m.FileList(files=[FileSummary.of(record) for record in page.files], next_cursor=page.next_cursor)


def read_file(ctx: ToolContext, params: m.ReadFileParams) -> m.TextRead:
    ctx.file(params.file_id)
    version, read = ctx.container.files.read_text(
        ctx.principal, params.file_id, version_id=params.version_id, offset=params.offset, limit=params.limit
    )
    return m.TextRead(
        file_id=params.file_id,
        version_id=version.version_id,
        media_type=version.media_type,
        encoding=read.encoding,
        offset=read.offset,
        byte_length=read.byte_length,
        next_offset=read.next_offset,
        total_bytes=read.total_bytes,
        content=ctx.fenced(read.text),
    )


def search_files(ctx: ToolContext, params: m.SearchFilesParams) -> m.SearchResult:
    filters = SearchFiltersBody(collections=[params.collection_id]) if params.collection_id else None
    query = SearchRequest(query=params.query, limit=params.limit, mode=params.mode, filters=filters).to_query()
    retrieval = ctx.container.retrieval
    ctx.touched.update(retrieval.searchable_collections(ctx.principal, query))
    outcome = retrieval.search(ctx.principal, query)
    if isinstance(outcome, Empty):
        return m.SearchResult(
            outcome=outcome.outcome.value, message=outcome.message, vector_available=outcome.vector_available
        )
    hits = [
        m.SearchHitResult(
            chunk_id=hit.chunk_id,
            score=hit.score,
            section=ctx.fenced(HEADING_SEPARATOR.join(hit.citation.heading_path))
            if hit.citation.heading_path
            else None,
            excerpt=ctx.fenced(hit.excerpt),
            citation=CitationPlace.model_validate(
                hit.citation.model_dump(exclude={"excerpt", "heading_path", "retrieved_at"})
            ),
        )
        for hit in outcome.hits
    ]
    return m.SearchResult(
        outcome="found",
        vector_available=outcome.vector_available,
        truncated_by_budget=outcome.truncated_by_budget,
        hits=hits,
    )


def answer(ctx: ToolContext, params: m.AnswerParams) -> m.AnswerResult:
    request = AnswerRequestBody(
        question=params.question,
        mode=params.mode,
        filters=SearchFiltersBody(collections=[params.collection_id]) if params.collection_id else None,
    ).to_request()
    ctx.touched.update(
        ctx.container.retrieval.searchable_collections(
            ctx.principal, SearchQuery(text=request.question, filters=request.filters)
        )
    )
    given = ctx.container.answers.answer(ctx.principal, request)
    view = AnswerView.of(given)
    return m.AnswerResult(
        answer_id=given.answer_id,
        outcome=given.outcome,
        method=given.method,
        claims=[
            m.AnswerClaimResult(
                text=ctx.fenced(claim.text), citations=list(claim.citations), supported=claim.supported, kind=claim.kind
            )
            for claim in given.claims
        ],
        citations=[
            m.AnswerCitationResult(
                number=cited.number,
                chunk_id=cited.chunk_id,
                score=cited.score,
                section=ctx.fenced(HEADING_SEPARATOR.join(cited.citation.heading_path))
                if cited.citation.heading_path
                else None,
                excerpt=ctx.fenced(cited.citation.excerpt),
                citation=CitationPlace.model_validate(
                    cited.citation.model_dump(exclude={"excerpt", "heading_path", "retrieved_at"})
                ),
            )
            for cited in given.citations
        ],
        confidence=view.confidence,
        refusal=view.refusal,
        withheld=given.withheld,
        fallback=given.fallback,
        vector_available=given.vector_available,
    )


def get_file_processing_status(ctx: ToolContext, params: m.FileRef) -> m.FileStatus:
    return m.FileStatus.of(ctx.file(params.file_id))


# --- documents --------------------------------------------------------------------------------------------------


def scan_document(ctx: ToolContext, params: m.FileRef) -> ScanView:
    ctx.file(params.file_id)
    started = ctx.container.document_tools.scan_document(ctx.principal, params.file_id)
    return ScanView.model_validate(started.model_dump())


def analyze_image(ctx: ToolContext, params: m.FileRef) -> m.ImageAnalysisResult:
    record = ctx.file(params.file_id)
    if record.current.media_type not in IMAGE_TYPES:
        raise ToolRefused(
            "not_an_image",
            f"analyze_image reads images; this file is {record.current.media_type}: call extract_text"
            " (or extract_tables) to read it",
            next_tool="extract_text",
        )
    analysis = ctx.container.document_tools.analyze_image(ctx.principal, params.file_id)
    recognition = analysis.recognition
    return m.ImageAnalysisResult(
        file_id=analysis.file_id,
        version_id=analysis.version_id,
        transcription=ctx.fenced("\n".join(line.text for line in analysis.transcription))
        if analysis.transcription
        else None,
        lines=[
            _block_ref(index, line.kind, line.location, line.confidence)
            for index, line in enumerate(analysis.transcription)
        ],
        description=ctx.fenced(analysis.description) if analysis.description else None,
        confidence=analysis.confidence,
        low_confidence=analysis.low_confidence,
        ocr_state=recognition.ocr_state.value if recognition.ocr_state else None,
        vision_state=recognition.vision_state.value if recognition.vision_state else None,
        vision_detail=recognition.vision_detail,
    )


def extract_text(ctx: ToolContext, params: m.ExtractTextParams) -> m.TextWindow:
    version, document = ctx.document(params.file_id, params.version_id)
    blocks = document.blocks
    oversized = params.offset < len(blocks) and is_oversized(blocks[params.offset])
    if params.part and not oversized:
        raise InvalidRequest(f"part continues a block larger than one window; block {params.offset} is not one")
    if oversized:
        # One block larger than a window comes in parts (rows of a table, characters of anything else).
        piece = _part(blocks[params.offset], params.part)
        shown_blocks: tuple[Block, ...] = (blocks[params.offset],)
        content, next_part = piece.markdown, piece.next_part
        following = params.offset + 1 if params.offset + 1 < len(blocks) else None
        next_offset = params.offset if next_part is not None else following
    else:
        shown = _window(blocks, params.offset)
        shown_blocks, content, next_part, next_offset = (
            shown.blocks,
            render_markdown(shown.blocks),
            None,
            shown.next_start,
        )
    return m.TextWindow(
        file_id=params.file_id,
        version_id=version.version_id,
        offset=params.offset,
        part=params.part,
        next_offset=next_offset,
        next_part=next_part,
        total_blocks=len(blocks),
        content=ctx.fenced(content),
        blocks=[_ref(params.offset + index, block) for index, block in enumerate(shown_blocks)],
        warnings=list(document.warnings),
        recognized_pages=list(document.recognized_pages),
        confidence=document.confidence,
        low_confidence=document.low_confidence,
    )


def extract_tables(ctx: ToolContext, params: m.ExtractTablesParams) -> m.TablesWindow:
    version, document = ctx.document(params.file_id, params.version_id)
    tables = [
        (index, block)
        for index, block in enumerate(document.blocks)
        if block.kind is BlockKind.TABLE and block.table is not None
    ]
    if params.offset > len(tables):
        raise InvalidRequest(f"offset {params.offset} is past the document's {len(tables)} tables")
    oversized = params.offset < len(tables) and is_oversized(tables[params.offset][1])
    if params.part and not oversized:
        raise InvalidRequest(f"part continues a table larger than one window; table {params.offset} is not one")
    shown: list[m.TableRead] = []
    next_part = None
    characters = 0
    for position in range(params.offset, min(len(tables), params.offset + MAX_TABLES_PER_CALL)):
        index, block = tables[position]
        if oversized:
            # A table larger than a window: its header rows and the next rows that fit, then the rest in parts.
            piece = _part(block, params.part)
            rendered, next_part = piece.markdown, piece.next_part
        else:
            rendered = render_block(block)
        section = HEADING_SEPARATOR.join(block.heading_path)
        text = (f"Section: {section}\n\n" if section else "") + rendered
        if shown and (characters + len(text) > MAX_TABLE_CHARACTERS or is_oversized(block)):
            break
        characters += len(text)
        shown.append(_table_read(ctx, position, index, block, text))
        if oversized:
            break
    end = params.offset + len(shown)
    following = end if end < len(tables) else None
    return m.TablesWindow(
        file_id=params.file_id,
        version_id=version.version_id,
        offset=params.offset,
        part=params.part,
        next_offset=params.offset if next_part is not None else following,
        next_part=next_part,
        total_tables=len(tables),
        tables=shown,
    )


def _table_read(ctx: ToolContext, position: int, index: int, block: Block, text: str) -> m.TableRead:
    rows = block.table.rows if block.table else ()
    return m.TableRead(
        index=position,
        location=_ref(index, block),
        header_rows=block.table.header_rows if block.table else 0,
        row_count=len(rows),
        column_count=max((len(row) for row in rows), default=0),
        confidence=block.confidence,
        content=ctx.fenced(text),
    )


def _part(block: Block, part: int) -> Part:
    try:
        return part_of(block, part)
    except ValueError as error:
        raise InvalidRequest(str(error)) from error


def summarize_document(ctx: ToolContext, params: m.VersionedFileRef) -> m.SummaryResult:
    version, document = ctx.document(params.file_id, params.version_id)
    generated, reason = _generated_summary(ctx, document.blocks, ctx.file(params.file_id).collection_id)
    if generated is not None:
        return m.SummaryResult(
            file_id=params.file_id,
            version_id=version.version_id,
            method="generated",
            generator=None,
            model=generated.model,
            content=ctx.fenced(
                "\n".join(
                    f"- {sentence.text} {''.join(f'[b{index}]' for index in sentence.block_indexes)}"
                    for sentence in generated.sentences
                )
            ),
            sections=[],
            sentences=[
                m.GeneratedSentenceRef(block_indexes=list(sentence.block_indexes)) for sentence in generated.sentences
            ],
            dropped=generated.dropped,
            truncated=generated.omitted > 0
            or generated.last_block_clipped
            or generated.blocks_sent < len(document.blocks),
        )
    drawn = outline(document.blocks)
    lines: list[str] = []
    for section in drawn.sections:
        if section.heading:
            lines.append(f"{'#' * min(section.level or 1, 6)} {section.heading}")
        lines.extend(f"- {sentence.text} [b{sentence.block_index}]" for sentence in section.sentences)
        lines.append("")
    return m.SummaryResult(
        file_id=params.file_id,
        version_id=version.version_id,
        method=drawn.method,
        generator=reason,
        content=ctx.fenced("\n".join(lines).strip()),
        sections=[
            m.OutlineSectionRef(
                level=section.level,
                sentences=[
                    m.OutlineSentenceRef(
                        block_index=sentence.block_index, page=sentence.location.page, clipped=sentence.clipped
                    )
                    for sentence in section.sentences
                ],
            )
            for section in drawn.sections
        ],
        sentences=[],
        truncated=drawn.truncated,
    )


def _generated_summary(
    ctx: ToolContext, blocks: Sequence[Block], collection: str
) -> tuple[GeneratedSummary | None, str | None]:
    """A model's cited summary (checked against the blocks), its tokens metered to the document's collection, or
    None and why there is none: no summarizer is configured, the tenant's daily generation tokens are spent, or
    it could not give one (throttled, refused, no valid citation). The caller falls back to the extractive
    outline; a summary is never invented."""
    summarizer = ctx.container.summarizer
    status = summarizer.capability()
    if not status.available:
        return None, status.reason or "no summarizer is configured"
    try:
        # A model's summary spends the tenant's Bedrock tokens, as a rescan spends its OCR: the write role's call.
        ctx.container.authorization.ensure_can_write(ctx.principal, collection)
    except Forbidden as refused:
        return None, f"a model-written summary spends the tenant's model tokens: {refused}; this is the outline"
    # Checked, not reserved (shared/services/limits.py): refused once the day's tokens are spent.
    over_limit = ctx.container.spend_limits.generation_refusal(
        ctx.principal.tenant_id, tokens=1, then="ask for the summary again"
    )
    if over_limit is not None:
        return None, f"{over_limit}: this is the extractive outline instead"
    texts = [render_block(block) if block.kind is BlockKind.TABLE else block.text for block in blocks]
    try:
        summary = summarizer.summarize(texts, max_sentences=MAX_SUMMARY_SENTENCES)
    except CapabilityUnavailable as refused:
        return None, f"{refused.reason}: this is the extractive outline instead"
    ctx.container.metering.record_request(
        ctx.principal,
        kind=RequestKind.SUMMARY,
        collections=frozenset({collection}),
        usage=converse_usage(summary.model, input_tokens=summary.input_tokens, output_tokens=summary.output_tokens),
    )
    return summary, None


def compare_documents(ctx: ToolContext, params: m.CompareDocumentsParams) -> m.ComparisonResult:
    before_ref, after_ref = _comparison_sides(ctx, params)
    before_version, before = ctx.document(*before_ref)
    after_version, after = ctx.document(*after_ref)
    diff = compare_blocks(before.blocks, after.blocks)
    return m.ComparisonResult(
        before=m.DiffSide(
            file_id=before_ref[0],
            version_id=before_version.version_id,
            filename=before_version.filename,
            total_blocks=len(before.blocks),
        ),
        after=m.DiffSide(
            file_id=after_ref[0],
            version_id=after_version.version_id,
            filename=after_version.filename,
            total_blocks=len(after.blocks),
        ),
        identical=diff.identical,
        sections_added=len(diff.sections_added),
        sections_removed=len(diff.sections_removed),
        sections_changed=len(diff.sections_changed),
        unchanged_sections=diff.unchanged_sections,
        tables_changed=len(diff.tables_changed),
        content=ctx.fenced(diff_markdown(diff)),
        truncated=diff.truncated,
        details=diff_structure(diff),
    )


def diff_markdown(diff: DocumentDiff) -> str:
    """The differences for a reader: each section by its heading path, what changed in it, and table cells."""
    if diff.identical:
        return "The two documents have the same blocks."
    lines: list[str] = []

    def section_title(section: SectionDiff) -> str:
        return HEADING_SEPARATOR.join(section.heading_path) or "(before the first heading)"

    for label, sections in (("Added", diff.sections_added), ("Removed", diff.sections_removed)):
        for section in sections:
            lines.append(f"- {label} section: {section_title(section)}")
    for section in diff.sections_changed:
        lines.append(f"- Changed section: {section_title(section)}{' (moved)' if section.moved else ''}")
        for change in section.changes:
            if change.kind is BlockKind.TABLE and change.change is BlockChangeKind.CHANGED:
                continue  # its cells are listed below
            before = f" «{change.before_text}»" if change.before_text else ""
            after = f" → «{change.after_text}»" if change.after_text else ""
            lines.append(f"  - {change.change.value} {change.kind.value}:{before}{after}")
    for table in diff.tables_changed:
        where = HEADING_SEPARATOR.join(table.heading_path) or "(before the first heading)"
        lines.append(f"- Table in {where} (block {table.before_index} → {table.after_index}):")
        lines.extend(
            f"  - row {cell.row + 1}, column {cell.column + 1}: «{cell.before}» → «{cell.after}»"
            for cell in table.cells_changed
        )
        if table.rows_added:
            lines.append(f"  - rows added: {', '.join(str(row + 1) for row in table.rows_added)}")
        if table.rows_removed:
            lines.append(f"  - rows removed: {', '.join(str(row + 1) for row in table.rows_removed)}")
    if diff.truncated:
        lines.append("- (more differences than shown: the diff is capped)")
    return "\n".join(lines)


def diff_structure(diff: DocumentDiff) -> dict[str, Any]:
    """The diff as data without the document's words (those are in the fenced content): block ranges and indexes,
    change kinds, table cell positions."""

    def section(entry: SectionDiff) -> dict[str, Any]:
        return {
            "before": entry.before.model_dump() if entry.before else None,
            "after": entry.after.model_dump() if entry.after else None,
            "moved": entry.moved,
            "changes": [
                {
                    "change": change.change.value,
                    "kind": change.kind.value,
                    "beforeIndex": change.before_index,
                    "afterIndex": change.after_index,
                }
                for change in entry.changes
            ],
        }

    return {
        "sectionsAdded": [section(entry) for entry in diff.sections_added],
        "sectionsRemoved": [section(entry) for entry in diff.sections_removed],
        "sectionsChanged": [section(entry) for entry in diff.sections_changed],
        "tablesChanged": [
            {
                "beforeIndex": table.before_index,
                "afterIndex": table.after_index,
                "matchedBy": table.matched_by,
                "cellsChanged": [
                    {"row": cell.row, "beforeRow": cell.before_row, "column": cell.column}
                    for cell in table.cells_changed
                ],
                "rowsAdded": list(table.rows_added),
                "rowsRemoved": list(table.rows_removed),
            }
            for table in diff.tables_changed
        ],
    }


def _comparison_sides(
    ctx: ToolContext, params: m.CompareDocumentsParams
) -> tuple[tuple[UUID, UUID | None], tuple[UUID, UUID | None]]:
    """(before, after): the named version (or the newest) against the other one named; with no other named, the
    file's previous stored version against it."""
    if params.other_file_id is not None or params.other_version_id is not None:
        return (params.file_id, params.version_id), (params.other_file_id or params.file_id, params.other_version_id)
    record = ctx.file(params.file_id)
    stored = [version for version in record.versions if version.state is VersionState.STORED]
    named = _named_version(record, params.version_id)
    # The previous version there is a document of: one whose extraction failed has nothing to compare.
    older = [
        version
        for version in stored
        if version.created_at < named.created_at
        and version.processing_state in DOCUMENT_READY
        and version.document_key is not None
    ]
    if not older:
        raise ToolRefused(
            "nothing_to_compare",
            "this file has no earlier version with a document: name otherFileId (another file) or otherVersionId",
            next_tool="list_files",
        )
    previous = max(older, key=lambda version: version.created_at)
    return (params.file_id, previous.version_id), (params.file_id, named.version_id)


# --- artifacts and exports --------------------------------------------------------------------------------------


def create_artifact(ctx: ToolContext, params: m.CreateArtifactParams) -> m.ArtifactWritten:
    ctx.collection(params.collection_id)
    view = ctx.container.artifacts.create(
        ctx.principal,
        collection_id=params.collection_id,
        name=params.name,
        body=content_input(params),
        producer="tool create_artifact",
    )
    ctx.touched.add(view.artifact.collection_id)
    return m.ArtifactWritten(
        artifact=ArtifactSummaryView.of(view.artifact), version=ArtifactVersionView.of(view.version)
    )


def update_artifact(ctx: ToolContext, params: m.UpdateArtifactParams) -> m.ArtifactWritten:
    ctx.artifact(params.artifact_id)
    view = ctx.container.artifacts.add_version(
        ctx.principal,
        params.artifact_id,
        expected_latest=params.expected_latest_version,
        body=content_input(params),
        producer="tool update_artifact",
    )
    ctx.touched.add(view.artifact.collection_id)
    return m.ArtifactWritten(
        artifact=ArtifactSummaryView.of(view.artifact), version=ArtifactVersionView.of(view.version)
    )


def export_artifact(ctx: ToolContext, params: m.ExportArtifactParams) -> m.ToolExport:
    version = params.version or ctx.artifact(params.artifact_id).latest_version
    record, _ = ctx.container.exports.export_artifact(
        ctx.principal, params.artifact_id, version=version, export_format=params.format
    )
    return _export(ctx, record)


def create_pdf(ctx: ToolContext, params: m.CreatePdfParams) -> m.PdfCreated:
    ctx.collection(params.collection_id)
    view, record = ctx.container.pdf_tools.create(
        ctx.principal, collection_id=params.collection_id, name=params.name, body=content_input(params)
    )
    return m.PdfCreated(
        artifact=ArtifactSummaryView.of(view.artifact),
        version=ArtifactVersionView.of(view.version),
        export=_export(ctx, record),
    )


def convert_file(ctx: ToolContext, params: m.ConvertFileParams) -> m.ToolExport:
    ctx.file(params.file_id)
    record, _ = ctx.container.exports.convert_file(
        ctx.principal, params.file_id, version_id=params.version_id, export_format=params.format
    )
    return _export(ctx, record)


def _export(ctx: ToolContext, record: ExportRecord) -> m.ToolExport:
    ctx.touched.add(record.collection_id)
    return m.ToolExport.of(Export(record=record))


# --- helpers ------------------------------------------------------------------------------------------------------


def _named_version(record: FileRecord, version_id: UUID | None) -> FileVersionRecord:
    if version_id is None:
        return record.current
    for version in record.versions:
        if version.version_id == version_id and version.state not in (VersionState.DELETING, VersionState.DELETED):
            return version
    raise NotFound("not found", field="versionId")


def _window(blocks: tuple[Block, ...], offset: int) -> Any:
    try:
        return window(blocks, offset)
    except ValueError as error:
        raise InvalidRequest(f"offset {offset} is past the document's {len(blocks)} blocks") from error


def _ref(index: int, block: Block) -> m.BlockRef:
    return _block_ref(index, block.kind, block.location, block.confidence)


def _block_ref(index: int, kind: BlockKind, location: Any, confidence: float | None) -> m.BlockRef:
    return m.BlockRef(
        index=index,
        kind=kind.value,
        confidence=confidence,
        **location.model_dump(
            include={
                "page",
                "box",
                "sheet",
                "cell_range",
                "slide",
                "paragraph_index",
                "table_index",
                "line_start",
                "line_end",
            }
        ),
    )


TOOLS: Sequence[Tool[Any, Any]] = (
    Tool(
        "list_files",
        "List files",
        "The files the caller may read (newest first), with each one's processing state; page with nextCursor.",
        m.ListFilesParams,
        m.FileList,
        list_files,
    ),
    Tool(
        "read_file",
        "Read a text file",
        "Up to 32 KiB of a text file's own bytes (plain text, Markdown, CSV) from offset; continue from nextOffset."
        " Other formats are read with extract_text.",
        m.ReadFileParams,
        m.TextRead,
        read_file,
        carries_document_text=True,
    ),
    Tool(
        "search_files",
        "Search files",
        "Hybrid (semantic + keyword) search over the files the caller may read; every hit has an exact citation"
        " (file, version, page or cells).",
        m.SearchFilesParams,
        m.SearchResult,
        search_files,
        carries_document_text=True,
    ),
    Tool(
        "answer",
        "Answer a question",
        "A grounded answer from the files the caller may read: claims each citing numbered sources (file, version,"
        " page or cells), validated against the stored text; evidence only (quoted sentences) when no model is"
        " configured; refused, with the reason, when the documents do not answer it. Confidence is computed.",
        m.AnswerParams,
        m.AnswerResult,
        answer,
        carries_document_text=True,
    ),
    Tool(
        "scan_document",
        "OCR a document again",
        "Queue OCR of every page of a PDF or image's newest version (needs the write role); its progress shows in"
        " get_file_processing_status.",
        m.FileRef,
        ScanView,
        scan_document,
        read_only=False,
    ),
    Tool(
        "analyze_image",
        "Analyze an image",
        "What OCR read off an image (with confidence) and, separately, what a vision model said it shows.",
        m.FileRef,
        m.ImageAnalysisResult,
        analyze_image,
        carries_document_text=True,
    ),
    Tool(
        "extract_text",
        "Read a document",
        "A window of a file's extracted document (at most 50 blocks or 24,000 characters) as Markdown, with each"
        " block's location; continue from nextOffset.",
        m.ExtractTextParams,
        m.TextWindow,
        extract_text,
        carries_document_text=True,
    ),
    Tool(
        "extract_tables",
        "Extract tables",
        "The tables of a file's extracted document, each with its location and rows as Markdown; continue from"
        " nextOffset.",
        m.ExtractTablesParams,
        m.TablesWindow,
        extract_tables,
        carries_document_text=True,
    ),
    Tool(
        "summarize_document",
        "Summarize a document",
        "A summary of a document, every sentence cited by block: a model's, checked against the blocks, where a"
        " summarizer is configured; else an outline of its headings and each section's leading sentences, verbatim"
        " (method says which; nothing is invented).",
        m.VersionedFileRef,
        m.SummaryResult,
        summarize_document,
        carries_document_text=True,
    ),
    Tool(
        "compare_documents",
        "Compare documents",
        "A structural diff of two versions of a file, or of two files: sections added, removed and changed, and"
        " table cells changed.",
        m.CompareDocumentsParams,
        m.ComparisonResult,
        compare_documents,
        carries_document_text=True,
    ),
    Tool(
        "create_artifact",
        "Create an artifact",
        "A new artifact (Markdown or blocks, with citations to chunks) in a collection the caller may write.",
        m.CreateArtifactParams,
        m.ArtifactWritten,
        create_artifact,
        read_only=False,
    ),
    Tool(
        "update_artifact",
        "Update an artifact",
        "A new version of an artifact; expectedLatestVersion must be its latest version (a stale one is refused"
        " with the latest).",
        m.UpdateArtifactParams,
        m.ArtifactWritten,
        update_artifact,
        read_only=False,
    ),
    Tool(
        "export_artifact",
        "Export an artifact",
        "Render one version of an artifact as PDF, DOCX, HTML or Markdown (a new file, made in the background).",
        m.ExportArtifactParams,
        m.ToolExport,
        export_artifact,
        read_only=False,
    ),
    Tool(
        "create_pdf",
        "Create a PDF report",
        "A PDF report from Markdown or blocks with citations: an artifact (history, provenance) and its PDF export.",
        m.CreatePdfParams,
        m.PdfCreated,
        create_pdf,
        read_only=False,
    ),
    Tool(
        "convert_file",
        "Convert a file",
        "Render a stored file's extracted document in another format (PDF, DOCX, HTML, Markdown) as a new file.",
        m.ConvertFileParams,
        m.ToolExport,
        convert_file,
        read_only=False,
    ),
    Tool(
        "get_file_processing_status",
        "File processing status",
        "A file's versions and where each is in processing (extracted, OCR'd, indexed), or why it failed.",
        m.FileRef,
        m.FileStatus,
        get_file_processing_status,
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
