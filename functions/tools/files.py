"""The tools over files and search: list, read, search, answer, and a file's processing status."""

from functions.tools import models as m
from functions.tools.presenting import heading
from functions.tools.registry import ToolContext, tool
from functions.views.answers import AnswerRequestBody, AnswerView
from functions.views.files import FileSummary
from functions.views.search import InterpretedQueryView, SearchFiltersBody, SearchRequest, metadata_filter
from shared.domain.grouping import FileGroup
from shared.domain.search import Citation, Empty, SearchHit, SearchQuery


def _place(citation: Citation) -> m.CitedPlace:
    # The cited words come apart, fenced (excerpt, section); the metadata's strings are fenced where they stand, by
    # the dispatcher (SUPPLIED_TEXT_MAPS).
    return m.CitedPlace.model_validate(citation.model_dump(exclude={"excerpt", "heading_path", "retrieved_at"}))


def _also_in(ctx: ToolContext, citation: Citation) -> m.AlsoInPlace:
    place = citation.model_dump(exclude={"excerpt", "heading_path", "retrieved_at", "metadata", "metadata_revision"})
    return m.AlsoInPlace.model_validate({**place, "section": _fenced_heading(ctx, citation)})


@tool(
    "list_files",
    "List files",
    "The files the caller may read (newest first), with each one's processing state and metadata; `filter` keeps"
    " those whose metadata it matches; page with nextCursor.",
)
def list_files(ctx: ToolContext, params: m.ListFilesParams) -> m.FileList:
    # Parsed first, as the HTTP route parses it: a malformed filter is refused before anything is authorized.
    where = metadata_filter(params.filter_)
    if params.collection_id:
        ctx.collection(params.collection_id)
    page = ctx.services.files.list_files(
        ctx.principal, collection_id=params.collection_id, limit=params.limit, cursor=params.cursor, where=where
    )
    ctx.touched.update(record.collection_id for record in page.files)
    return m.FileList(files=[FileSummary.of(record) for record in page.files], next_cursor=page.next_cursor)


@tool(
    "read_file",
    "Read a text file",
    "Up to 32 KiB of a text file's own bytes (plain text, Markdown, CSV) from offset; continue from nextOffset."
    " Other formats are read with extract_text.",
    carries_document_text=True,
)
def read_file(ctx: ToolContext, params: m.ReadFileParams) -> m.TextRead:
    ctx.file(params.file_id)
    version, read = ctx.services.files.read_text(
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


@tool(
    "search_files",
    "Search files",
    "Hybrid (semantic + keyword) search over the files the caller may read; every hit has an exact citation"
    " (file, version, page or cells) and the file's metadata; `filter` searches only the files whose metadata it"
    ' matches; `groupBy: "file"` answers with the best files, each with its best hits.',
    carries_document_text=True,
)
def search_files(ctx: ToolContext, params: m.SearchFilesParams) -> m.SearchResult:
    filters = SearchFiltersBody(collections=[params.collection_id]) if params.collection_id else None
    query = SearchRequest(
        query=params.query, limit=params.limit, mode=params.mode, filters=filters, filter_=params.filter_
    ).to_query()
    retrieval = ctx.services.retrieval
    ctx.touched.update(retrieval.searchable_collections(ctx.principal, query))
    groups: tuple[FileGroup, ...] | None = None
    if params.group_by == "file":
        outcome, groups = retrieval.search_by_file(ctx.principal, query, per_file=params.hits_per_file)
    else:
        outcome = retrieval.search(ctx.principal, query)
    interpreted = InterpretedQueryView.of(query)
    if isinstance(outcome, Empty):
        return m.SearchResult(
            outcome=outcome.outcome.value,
            message=outcome.message,
            vector_available=outcome.vector_available,
            interpreted_query=interpreted,
        )
    return m.SearchResult(
        outcome="found",
        vector_available=outcome.vector_available,
        truncated_by_budget=outcome.truncated_by_budget,
        interpreted_query=interpreted,
        hits=[_hit(ctx, hit) for hit in outcome.hits],
        groups=None
        if groups is None
        else [
            m.FileGroupResult.model_validate(
                {**group.model_dump(exclude={"hits"}), "hits": [_hit(ctx, hit) for hit in group.hits]}
            )
            for group in groups
        ],
    )


def _hit(ctx: ToolContext, hit: SearchHit) -> m.SearchHitResult:
    return m.SearchHitResult(
        chunk_id=hit.chunk_id,
        score=hit.score,
        section=_fenced_heading(ctx, hit.citation),
        excerpt=ctx.fenced(hit.excerpt),
        citation=_place(hit.citation),
        also_in=[_also_in(ctx, place) for place in hit.also_in],
    )


@tool(
    "answer",
    "Answer a question",
    "A grounded answer from the files the caller may read: claims each citing numbered sources (file, version,"
    " page or cells), validated against the stored text; evidence only (quoted sentences) when no model is"
    " configured; refused, with the reason, when the documents do not answer it. Confidence is computed. `filter`"
    " answers from the files whose metadata it matches only.",
    carries_document_text=True,
)
def answer(ctx: ToolContext, params: m.AnswerParams) -> m.AnswerResult:
    request = AnswerRequestBody(
        question=params.question,
        mode=params.mode,
        filters=SearchFiltersBody(collections=[params.collection_id]) if params.collection_id else None,
        filter_=params.filter_,
    ).to_request()
    ctx.touched.update(
        ctx.services.retrieval.searchable_collections(
            ctx.principal, SearchQuery(text=request.question, filters=request.filters)
        )
    )
    given = ctx.services.answers.answer(ctx.principal, request)
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
                section=_fenced_heading(ctx, cited.citation),
                excerpt=ctx.fenced(cited.citation.excerpt),
                citation=_place(cited.citation),
            )
            for cited in given.citations
        ],
        confidence=view.confidence,
        refusal=view.refusal,
        withheld=given.withheld,
        fallback=given.fallback,
        vector_available=given.vector_available,
    )


@tool(
    "get_file_processing_status",
    "File processing status",
    "A file's versions and where each is in processing (extracted, OCR'd, indexed), or why it failed.",
)
def get_file_processing_status(ctx: ToolContext, params: m.FileRef) -> m.FileStatus:
    return m.FileStatus.of(ctx.file(params.file_id))


def _fenced_heading(ctx: ToolContext, citation: Citation) -> str | None:
    section = heading(citation.heading_path)
    return ctx.fenced(section) if section is not None else None
