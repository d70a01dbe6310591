"""The audit of agent tool calls, for the collections' admins."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from functions.api.routes.context import current_principal
from functions.views.audit import AuditView
from shared.bootstrap import container
from shared.services.audit import MAX_AUDIT_PAGE, MAX_CURSOR_CHARS

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


@router.get("/v1/audit")
def audit(
    limit: Annotated[int, Query(ge=1, le=MAX_AUDIT_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=MAX_CURSOR_CHARS)] = None,
) -> AuditView:
    """The tenant's agent tool calls, newest first, for a caller who administers a collection (403 otherwise):
    the calls that acted only in collections it administers, and those refused before any collection was known.
    Ids only: which tool, which ids it named, in which collections, the outcome and how long it took."""
    return AuditView.of(container().audit_log.recent(current_principal(router), limit=limit, cursor=cursor))
