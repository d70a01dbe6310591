"""The tools over one document: read it in windows, its tables, summarize it, compare versions, analyze an image,
OCR it again. Each is a call of `DocumentReader`, the service GET /v1/files/{id}/document calls."""

from functions.tools import models as m
from functions.tools.presenting import block_ref, diff_markdown, diff_structure, located_ref
from functions.tools.registry import ToolContext, tool
from functions.views.files import ScanView
from shared.domain.rendering import render_markdown


@tool(
    "scan_document",
    "OCR a document again",
    "Queue OCR of every page of a PDF or image's newest version (needs the write role); its progress shows in"
    " get_file_processing_status.",
    read_only=False,
)
def scan_document(ctx: ToolContext, params: m.FileRef) -> ScanView:
    ctx.file(params.file_id)
    started = ctx.services.document_reader.scan(ctx.principal, params.file_id)
    return ScanView.model_validate(started.model_dump())


@tool(
    "analyze_image",
    "Analyze an image",
    "What OCR read off an image (with confidence) and, separately, what a vision model said it shows.",
    carries_document_text=True,
)
def analyze_image(ctx: ToolContext, params: m.FileRef) -> m.ImageAnalysisResult:
    analysis = ctx.services.document_reader.analyze_image(ctx.entitled(params.file_id, None))
    recognition = analysis.recognition
    return m.ImageAnalysisResult(
        file_id=analysis.file_id,
        version_id=analysis.version_id,
        transcription=ctx.fenced("\n".join(line.text for line in analysis.transcription))
        if analysis.transcription
        else None,
        lines=[
            located_ref(index, line.kind, line.location, line.confidence)
            for index, line in enumerate(analysis.transcription)
        ],
        description=ctx.fenced(analysis.description) if analysis.description else None,
        confidence=analysis.confidence,
        low_confidence=analysis.low_confidence,
        ocr_state=recognition.ocr_state.value if recognition.ocr_state else None,
        vision_state=recognition.vision_state.value if recognition.vision_state else None,
        vision_detail=recognition.vision_detail,
    )


@tool(
    "extract_text",
    "Read a document",
    "A window of a file's extracted document (at most 50 blocks or 24,000 characters) as Markdown, with each"
    " block's location; continue from nextOffset.",
    carries_document_text=True,
)
def extract_text(ctx: ToolContext, params: m.ExtractTextParams) -> m.TextWindow:
    shown = ctx.services.document_reader.block_window(
        ctx.entitled(params.file_id, params.version_id), params.offset, params.part
    )
    document = shown.document
    return m.TextWindow(
        file_id=params.file_id,
        version_id=shown.version.version_id,
        offset=params.offset,
        part=params.part,
        next_offset=shown.next_offset,
        next_part=shown.next_part,
        total_blocks=len(document.blocks),
        content=ctx.fenced(shown.markdown if shown.markdown is not None else render_markdown(shown.blocks)),
        blocks=[block_ref(params.offset + index, block) for index, block in enumerate(shown.blocks)],
        warnings=list(document.warnings),
        recognized_pages=list(document.recognized_pages),
        confidence=document.confidence,
        low_confidence=document.low_confidence,
    )


@tool(
    "extract_tables",
    "Extract tables",
    "The tables of a file's extracted document, each with its location and rows as Markdown; continue from nextOffset.",
    carries_document_text=True,
)
def extract_tables(ctx: ToolContext, params: m.ExtractTablesParams) -> m.TablesWindow:
    shown = ctx.services.document_reader.table_window(
        ctx.entitled(params.file_id, params.version_id), params.offset, params.part
    )
    return m.TablesWindow(
        file_id=params.file_id,
        version_id=shown.version.version_id,
        offset=params.offset,
        part=params.part,
        next_offset=shown.next_offset,
        next_part=shown.next_part,
        total_tables=shown.total_tables,
        tables=[
            m.TableRead(
                index=table.position,
                location=block_ref(table.index, table.block),
                header_rows=table.block.table.header_rows if table.block.table else 0,
                row_count=len(table.block.table.rows) if table.block.table else 0,
                column_count=max((len(row) for row in table.block.table.rows), default=0) if table.block.table else 0,
                confidence=table.block.confidence,
                content=ctx.fenced(table.text),
            )
            for table in shown.tables
        ],
    )


@tool(
    "summarize_document",
    "Summarize a document",
    "A summary of a document, every sentence cited by block: a model's, checked against the blocks, where a"
    " summarizer is configured; else an outline of its headings and each section's leading sentences, verbatim"
    " (method says which; nothing is invented).",
    carries_document_text=True,
)
def summarize_document(ctx: ToolContext, params: m.VersionedFileRef) -> m.SummaryResult:
    summary = ctx.services.document_reader.summarize(ctx.principal, ctx.entitled(params.file_id, params.version_id))
    generated, drawn = summary.generated, summary.outline
    if generated is not None:
        return m.SummaryResult(
            file_id=params.file_id,
            version_id=summary.version.version_id,
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
            or generated.blocks_sent < summary.block_count,
        )
    assert drawn is not None  # no generated summary: the outline
    lines: list[str] = []
    for section in drawn.sections:
        if section.heading:
            lines.append(f"{'#' * min(section.level or 1, 6)} {section.heading}")
        lines.extend(f"- {sentence.text} [b{sentence.block_index}]" for sentence in section.sentences)
        lines.append("")
    return m.SummaryResult(
        file_id=params.file_id,
        version_id=summary.version.version_id,
        method=drawn.method,
        generator=summary.reason,
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


@tool(
    "compare_documents",
    "Compare documents",
    "A structural diff of two versions of a file, or of two files: sections added, removed and changed, and"
    " table cells changed.",
    carries_document_text=True,
)
def compare_documents(ctx: ToolContext, params: m.CompareDocumentsParams) -> m.ComparisonResult:
    reader = ctx.services.document_reader
    if params.other_file_id is not None or params.other_version_id is not None:
        # The named version (or the newest) against the other one named.
        before = ctx.entitled(params.file_id, params.version_id)
        after = ctx.entitled(params.other_file_id or params.file_id, params.other_version_id)
    else:
        # The file's previous version with a document against the named one.
        after = ctx.entitled(params.file_id, params.version_id)
        before = ctx.entitled(params.file_id, reader.previous_version(after.record, params.version_id))
    compared = reader.compare(before, after)
    diff = compared.diff
    return m.ComparisonResult(
        before=m.DiffSide(
            file_id=before.record.file_id,
            version_id=before.version.version_id,
            filename=before.version.filename,
            total_blocks=compared.before_blocks,
        ),
        after=m.DiffSide(
            file_id=after.record.file_id,
            version_id=after.version.version_id,
            filename=after.version.filename,
            total_blocks=compared.after_blocks,
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
