"""Bodies of search: the query and its filters, hits with their exact citations, coverage, re-indexing."""

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from functions.views.base import ApiModel
from functions.views.facets import WithFacets, facets_view
from functions.views.filter_shape import FilterParameter
from shared.domain.duplicates import MAX_ALSO_IN
from shared.domain.errors import InvalidRequest
from shared.domain.grouping import DEFAULT_HITS_PER_FILE, MAX_HITS_PER_FILE, FileGroup
from shared.domain.knowledge import CollectionCoverage
from shared.domain.metadata_filter import FilterError, MetadataFilter
from shared.domain.query_syntax import identifiers_read, interpret
from shared.domain.recognition import BoundingBox
from shared.domain.reranking import RerankSkip
from shared.domain.search import (
    MAX_QUERY_CHARACTERS,
    MAX_RESULTS,
    Citation,
    CitedKind,
    Empty,
    EmptyReason,
    SearchFilters,
    SearchHit,
    SearchMode,
    SearchOutcome,
    SearchQuery,
)
from shared.services.reindexing import ReindexReport


class SearchFiltersBody(ApiModel):
    collections: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(default=None, max_length=100)
    media_types: list[Annotated[str, Field(min_length=1, max_length=255)]] | None = Field(default=None, max_length=50)
    filename: str | None = Field(default=None, min_length=1, max_length=255)
    uploaded_after: datetime | None = None
    uploaded_before: datetime | None = None


# The query parameter `filter` of GET /v1/files: the same filter as URL-encoded JSON, its length bounded.
MAX_FILTER_QUERY_CHARACTERS = 16_384
FILTER_QUERY_DESCRIPTION = "The metadata filter as URL-encoded JSON (the body field `filter` of POST /v1/search)."


def filter_json(text: str) -> dict[str, Any]:
    """The `filter` query parameter's JSON object, or a 400 saying it is not one."""
    try:
        raw = json.loads(text)
    except ValueError as error:
        raise InvalidRequest(f"filter: is not JSON ({error.args[0]}); send the filter object URL-encoded") from error
    if not isinstance(raw, dict):
        raise InvalidRequest('filter: must be a JSON object with one operator, such as {"equals": {...}}')
    return raw


def metadata_filter(raw: dict[str, Any] | None, *, path: str = "filter") -> MetadataFilter | None:
    """The body's filter parsed, or a 400 naming the path of what is wrong in it."""
    if raw is None:
        return None
    try:
        return MetadataFilter.parse(raw, path=path)
    except FilterError as error:
        raise InvalidRequest(str(error)) from error


QUERY_DESCRIPTION = (
    'What to search for. "Quoted phrases" must appear in every hit (their words in order, as the keyword lane reads'
    ' them); a leading -word or -"a phrase" keeps out every hit that holds it (docs/search.md#query-syntax).'
)


class SearchRequest(ApiModel):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARACTERS, description=QUERY_DESCRIPTION)
    limit: int = Field(default=10, ge=1, le=MAX_RESULTS)
    mode: SearchMode = SearchMode.HYBRID
    filters: SearchFiltersBody | None = None
    filter_: FilterParameter
    facets: list[Annotated[str, Field(max_length=64)]] | None = Field(
        default=None,
        description="Metadata keys (or quire.collection, quire.mediaType) whose most frequent values to count over"
        " the files the caller can read and the filters keep: `facets` in the answer, at most 50 values each.",
    )
    group_by: Literal["file"] | None = Field(
        default=None,
        description='"file": the answer\'s `groups` are the best `limit` files, each with its best `hitsPerFile`'
        " hits in rank order (a file's place is its best hit's); `hits` are the same hits, group by group.",
    )
    hits_per_file: int = Field(
        default=DEFAULT_HITS_PER_FILE,
        ge=1,
        le=MAX_HITS_PER_FILE,
        description='With groupBy "file": how many hits each file brings at most.',
    )

    def to_query(self) -> SearchQuery:
        """The domain's query, its syntax read (phrases, exclusions: shared/domain/query_syntax.py); a combination
        the body's schema allows but the query does not, or syntax past its bounds, is a 400."""
        where = metadata_filter(self.filter_)
        interpreted = interpret(self.query)
        try:
            return SearchQuery(
                text=interpreted.text,
                constraints=interpreted.constraints,
                limit=self.limit,
                mode=self.mode,
                filters=search_filters(self.filters, where),
            )
        except ValidationError as error:
            raise InvalidRequest("; ".join(str(problem["msg"]) for problem in error.errors())) from error


def search_filters(filters: SearchFiltersBody | None, where: MetadataFilter | None = None) -> SearchFilters:
    """The domain's filters of a body's (a ValidationError for a combination the schema allows but they do not)."""
    return SearchFilters(
        where=where,
        collections=frozenset(filters.collections) if filters and filters.collections is not None else None,
        media_types=frozenset(filters.media_types) if filters and filters.media_types else None,
        filename=filters.filename if filters else None,
        uploaded_after=filters.uploaded_after if filters else None,
        uploaded_before=filters.uploaded_before if filters else None,
    )


class CitedRegionView(ApiModel):
    """One matching block of the cited chunk (or a run of adjacent ones): the fields of its format."""

    page: int | None
    box: BoundingBox | None
    sheet: str | None
    cells: str | None
    slide: int | None
    shape: str | None
    line_start: int | None
    line_end: int | None
    paragraph_start: int | None
    paragraph_end: int | None
    table_index: int | None
    start_seconds: float | None = None
    end_seconds: float | None = None
    speaker: str | None = None


class CitationPlace(ApiModel):
    """Where a citation points: the file version and the place in it, without the cited words (an agent's tool
    gets those fenced, apart)."""

    file_id: str
    version_id: str
    filename: str
    media_type: str
    collection_id: str
    page: int | None
    page_end: int | None
    box: BoundingBox | None
    sheet: str | None
    cells: str | None
    slide: int | None
    line_start: int | None
    line_end: int | None
    paragraph_start: int | None
    paragraph_end: int | None
    table_index: int | None
    shape: str | None
    # A recording: the moment cited, in seconds from its start (the first matching segment's), and who speaks.
    start_seconds: float | None = None
    end_seconds: float | None = None
    speaker: str | None = None
    # Where the words that matched are (page and box are the first of them); every block's place when none
    # matched; empty for chunks indexed before regions were kept.
    regions: list[CitedRegionView]
    # quote (the document's words), transcription (OCR's reading, with its confidence) or description
    # (a vision model's reading of an image, never to be presented as the document's words).
    kind: CitedKind
    ocr_confidence: float | None
    # A recording's transcription: how surely the speech engine heard the cited words (the least sure segment).
    speech_confidence: float | None = None
    # The language the cited words are written in (ISO 639-1), null when it could not be told.
    language: str | None = None


class CitationView(CitationPlace):
    heading_path: list[str]
    excerpt: str
    retrieved_at: datetime
    # The cited file's metadata and its revision when it was cited (null for citations made before metadata).
    metadata: dict[str, Any] = Field(default_factory=dict)
    metadata_revision: int | None = None


# What a citation says besides where it points: a place under `alsoIn` quotes the hit's own excerpt.
_BEYOND_PLACE = frozenset({"excerpt", "retrieved_at", "metadata", "metadata_revision"})


class AlsoInView(CitationPlace):
    """Another place the hit's text is stored, word for word, that the caller may read: its file, version and
    location (and the heading path it sits under there, which may differ from the hit's)."""

    heading_path: list[str]

    @classmethod
    def of(cls, citation: Citation) -> "AlsoInView":
        return cls.model_validate(citation.model_dump(exclude=set(_BEYOND_PLACE)))


class HitView(ApiModel):
    chunk_id: str
    score: float
    vector_score: float | None
    lexical_score: float | None
    direct_subject: bool
    excerpt: str
    citation: CitationView
    also_in: list[AlsoInView] = Field(
        description="The same text (identical, word for word) stored in other places the caller may read, oldest"
        f" upload first, at most {MAX_ALSO_IN}: search collapses them into this hit, so a page of hits is of"
        " distinct texts.",
    )

    @classmethod
    def of(cls, hit: SearchHit) -> "HitView":
        return cls.model_validate(
            {**hit.model_dump(exclude={"also_in"}), "also_in": [AlsoInView.of(place) for place in hit.also_in]}
        )


class FileGroupView(ApiModel):
    """One file of a search grouped by file: its best hits, its score its best hit's."""

    file_id: str
    version_id: str
    filename: str
    collection_id: str
    score: float
    hits: list[HitView]

    @classmethod
    def of(cls, group: FileGroup) -> "FileGroupView":
        # Each hit as a hit is sent (its other places cut to a place), never its domain model's dump.
        return cls.model_validate(
            {**group.model_dump(exclude={"hits"}), "hits": [HitView.of(hit) for hit in group.hits]}
        )


class IdentifierView(ApiModel):
    text: str = Field(description="An identifier-shaped term (ERR-4021, Q3-2026, v2.1), case folded.")
    required: bool = Field(
        description="Inside a quoted phrase: every hit holds it. Otherwise hits holding it only move ahead."
    )


class InterpretedQueryView(ApiModel):
    """How the query was read (docs/search.md#query-syntax)."""

    text: str = Field(
        description="What the lanes searched and the semantic lane embedded: the query without quote"
        " marks and without its excluded words."
    )
    phrases: list[str] = Field(description="Quoted phrases, each in every hit.")
    excluded: list[str] = Field(description='Words or phrases (-word, -"a phrase") no hit holds.')
    identifiers: list[IdentifierView]

    @classmethod
    def of(cls, query: SearchQuery) -> "InterpretedQueryView":
        return cls(
            text=query.text,
            phrases=list(query.constraints.phrases),
            excluded=list(query.constraints.excluded),
            identifiers=[
                IdentifierView(text=found.text, required=found.required)
                for found in identifiers_read(query.text, query.constraints)
            ],
        )


class RerankView(ApiModel):
    """Whether the reranker's order was applied to the best fused candidates (docs/search.md#the-reranker), or why
    fusion order stands: `off` (none configured), `no_opinion`, `failed`, `timed_out` or `over_limit` (the tenant's
    daily rerank limit is spent)."""

    applied: bool
    model: str | None = Field(description="identifier-booster, or the Bedrock rerank model; null when off")
    reason: RerankSkip | None = Field(description="Why fusion order stands; null when applied")
    candidates: int = Field(description="How many of the best fused candidates the reranker was given")


class SearchFoundView(WithFacets):
    outcome: Literal["found"]
    vector_available: bool
    truncated_by_budget: bool
    interpreted_query: InterpretedQueryView
    rerank: RerankView
    hits: list[HitView]
    # With groupBy "file" only: the files, best first, each with its hits.
    groups: list[FileGroupView] | None = None


class SearchEmptyView(WithFacets):
    """No hits field at all: an empty result cannot be read as a weak answer."""

    outcome: EmptyReason
    message: str
    vector_available: bool
    interpreted_query: InterpretedQueryView


def search_view(
    outcome: SearchOutcome,
    query: SearchQuery,
    facets: dict[str, list[tuple[Any, int]]] | None = None,
    groups: Sequence[FileGroup] | None = None,
) -> SearchFoundView | SearchEmptyView:
    counted = facets_view(facets)
    interpreted = InterpretedQueryView.of(query)
    if isinstance(outcome, Empty):
        return SearchEmptyView(
            outcome=outcome.outcome,
            message=outcome.message,
            vector_available=outcome.vector_available,
            interpreted_query=interpreted,
            facets=counted,
        )
    return SearchFoundView(
        outcome="found",
        vector_available=outcome.vector_available,
        truncated_by_budget=outcome.truncated_by_budget,
        interpreted_query=interpreted,
        rerank=RerankView.model_validate(outcome.rerank.model_dump()),
        hits=[HitView.of(hit) for hit in outcome.hits],
        facets=counted,
        groups=None if groups is None else [FileGroupView.of(group) for group in groups],
    )


class CollectionCoverageView(ApiModel):
    collection_id: str
    files: int
    indexed: int
    failed: int
    in_progress: int
    stale: int
    lexical_only: int


class CoverageView(ApiModel):
    embedding_model: str
    embedder_available: bool
    collections: list[CollectionCoverageView]

    @classmethod
    def of(cls, embedding_model: str, available: bool, coverage: list[CollectionCoverage]) -> "CoverageView":
        return cls(
            embedding_model=embedding_model,
            embedder_available=available,
            collections=[CollectionCoverageView.model_validate(entry.model_dump()) for entry in coverage],
        )


class ReindexView(ApiModel):
    """What one call started: `queued` re-indexes run through the workflow (GET /v1/coverage shows them in
    progress, then indexed with `embeddingModel`); `remaining` stale versions are left for the next call."""

    embedding_model: str
    queued: int
    # The same number under its name from before re-indexing ran through the workflow: started, not finished.
    reindexed: int
    dropped: int
    skipped: int
    remaining: int

    @classmethod
    def of(cls, report: ReindexReport) -> "ReindexView":
        return cls(**report.model_dump(), reindexed=report.queued)
