"""Search and the index: hybrid search, coverage, re-indexing, and metered usage."""

from datetime import UTC, datetime, timedelta
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import ValidationError

from functions.api.routes.context import container, current_principal
from functions.api.schemas import (
    CoverageView,
    ReindexView,
    SearchEmptyView,
    SearchFoundView,
    SearchRequest,
    UsageView,
    search_view,
)
from shared.domain.errors import InvalidRequest
from shared.domain.search import SearchFilters, SearchQuery

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


@router.post("/v1/search")
def search(request: SearchRequest) -> SearchFoundView | SearchEmptyView:
    filters = request.filters
    try:
        query = SearchQuery(
            text=request.query,
            limit=request.limit,
            mode=request.mode,
            filters=SearchFilters(
                collections=frozenset(filters.collections) if filters and filters.collections is not None else None,
                media_types=frozenset(filters.media_types) if filters and filters.media_types else None,
                filename=filters.filename if filters else None,
                uploaded_after=filters.uploaded_after if filters else None,
                uploaded_before=filters.uploaded_before if filters else None,
            ),
        )
    except ValidationError as error:
        raise InvalidRequest("; ".join(str(problem["msg"]) for problem in error.errors())) from error
    return search_view(container().retrieval.search(current_principal(router), query))


@router.get("/v1/usage")
def usage(
    since: Annotated[datetime | None, Query()] = None, until: Annotated[datetime | None, Query()] = None
) -> UsageView:
    """Metered engine calls over the caller's collections (default: this calendar month, UTC). Priced rows
    cost money (Textract pages, Bedrock tokens); the rest were done by engines running here."""
    now = datetime.now(UTC)
    start = since or now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = until or now + timedelta(seconds=1)
    if start.tzinfo is None or end.tzinfo is None:
        raise InvalidRequest("since and until need a time zone (e.g. 2026-11-01T00:00:00Z)")
    if end <= start:
        raise InvalidRequest("until must be after since")
    principal = current_principal(router)
    wired = container()
    totals = wired.usage_ledger.totals(
        principal.tenant_id, wired.authorization.readable_collections(principal), since=start, until=end
    )
    return UsageView.of(start, end, totals)


@router.get("/v1/coverage")
def coverage() -> CoverageView:
    principal = current_principal(router)
    wired = container()
    embedder = wired.embedder
    collections = wired.authorization.readable_collections(principal)
    return CoverageView.of(
        embedder.model_id,
        embedder.capability().available,
        wired.knowledge.coverage(principal.tenant_id, collections, embedder.model_id),
    )


@router.post("/v1/reindex")
def reindex(limit: Annotated[int, Query(ge=1, le=20)] = 5) -> ReindexView:
    """One batch of the caller's collections; call again while `remaining` is above zero.

    Only stale or keyword-only versions are taken, so calling it when nothing is stale costs nothing, and
    small batches keep each call well inside API Gateway's 29-second limit."""
    principal = current_principal(router)
    wired = container()
    report = wired.reindexer.run_batch(
        principal.tenant_id, wired.authorization.readable_collections(principal), limit=limit
    )
    return ReindexView.model_validate(report.model_dump())
