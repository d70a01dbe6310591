"""Search and the index: hybrid search, coverage, re-indexing, and metered usage."""

from datetime import UTC, datetime
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from functions.api.routes.context import current_principal, json_response
from functions.views.account import UsageView
from functions.views.search import (
    CoverageView,
    ReindexView,
    SearchEmptyView,
    SearchFoundView,
    SearchRequest,
    search_view,
)
from shared.bootstrap import container
from shared.domain.usage import usage_window

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


@router.post("/v1/search")
def search(request: SearchRequest) -> SearchFoundView | SearchEmptyView:
    principal, query = current_principal(router), request.to_query()
    wired = container()
    facets = None
    if request.facets is not None:
        # Over the files this search could look in: its collections, its filters.
        facets = wired.files.facets(
            principal,
            request.facets,
            collections=wired.retrieval.searchable_collections(principal, query),
            where=query.filters.where,
            filters=query.filters,
        )
    if request.group_by == "file":
        outcome, groups = wired.retrieval.search_by_file(principal, query, per_file=request.hits_per_file)
        return search_view(outcome, query, facets, groups)
    return search_view(wired.retrieval.search(principal, query), query, facets)


@router.get("/v1/usage")
def usage(
    since: Annotated[datetime | None, Query()] = None, until: Annotated[datetime | None, Query()] = None
) -> UsageView:
    """Metered engine calls over the caller's collections (default: this calendar month, UTC). Priced rows
    cost money (Textract pages, Bedrock tokens); the rest were done by engines running here."""
    start, end = usage_window(since, until, now=datetime.now(UTC))
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
        wired.knowledge.coverage(
            principal.tenant_id, collections, embedder.model_id, context_model=wired.context_model
        ),
    )


@router.post("/v1/reindex")
def reindex(limit: Annotated[int, Query(ge=1, le=100)] = 20) -> Response[ReindexView]:
    """Start re-indexing up to `limit` stale or keyword-only versions of the collections the caller administers
    (202): each runs through the workflow, its embedding metered batch by batch; call again while `remaining`
    is above zero. Nothing is embedded inside this call, so it returns at once however large the versions."""
    report = container().reindexer.start_for(current_principal(router), limit=limit)
    return json_response(202, ReindexView.of(report))
