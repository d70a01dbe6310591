"""The HTTP API Lambda: parse the request, call one service, shape the response. Wiring only."""

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from uuid import UUID

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ValidationError

from functions.api.errors import register_error_handlers
from functions.api.schemas import (
    CollectionDeletionView,
    CoverageView,
    DeletionView,
    DocumentWindowView,
    FileListView,
    FileSummary,
    FileView,
    NewVersionRequest,
    NothingToReadView,
    ReindexView,
    ScanView,
    SearchEmptyView,
    SearchFoundView,
    SearchRequest,
    SignedReadView,
    UploadRequest,
    UploadResponse,
    UsageView,
    search_view,
)
from shared.bootstrap import Container
from shared.config import load_settings
from shared.domain.auth import Principal, principal_from_claims
from shared.domain.errors import InvalidRequest, NotFound, refuse_nul
from shared.domain.files import FailureReason, FileVersionRecord, ProcessingState, interruption_notice
from shared.domain.reading import window
from shared.domain.rendering import render_markdown
from shared.domain.search import SearchFilters, SearchQuery
from shared.domain.uploads import SAFE_DOWNLOAD_TYPE, attachment_disposition
from shared.observability import logger, tracer
from shared.ports import MAX_SIGNED_READ_LIFETIME
from shared.services.files import MAX_PAGE_SIZE, ProxiedContent
from shared.services.health import Health, HealthReport, check_health

# On every response, errors included: JSON is never sniffed into HTML, and tenant data is never cached.
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
# Routes served without a bearer token. Every other route sits behind the JWT authorizer.
UNAUTHENTICATED_ROUTES = frozenset({("GET", "/v1/health"), ("GET", "/v1/openapi.json")})

app = APIGatewayHttpResolver(enable_validation=True)
register_error_handlers(app)
container = Container(load_settings())


def refuse_nul_anywhere(resolver: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Every route: a NUL in the path, the query string or the JSON body is the caller's 400, naming where."""
    event = resolver.current_event
    for name, value in (event.path_parameters or {}).items():
        refuse_nul(value, f"the path parameter {name}")
    for name, value in (event.query_string_parameters or {}).items():
        refuse_nul(value, f"the query parameter {name}")
    body = event.decoded_body or ""
    # JSON spells NUL only as an escape (a raw one is not JSON): parsed a second time only when one is there.
    if "\\u0000" in body or "\x00" in body:
        try:
            refuse_nul(json.loads(body), "the body")
        except ValueError:
            refuse_nul(body, "the body")
    return next_middleware(resolver)


app.use(middlewares=[refuse_nul_anywhere])


class CallerView(BaseModel):
    tenantId: str  # noqa: N815 - the API speaks camelCase
    subject: str
    collections: list[str]


def current_principal() -> Principal:
    authorizer = app.current_event.request_context.authorizer
    return principal_from_claims(authorizer.jwt_claim if authorizer else None)


@app.get("/v1/health")
def health() -> Response[HealthReport]:
    report = check_health(container.file_metadata)
    return Response(
        status_code=200 if report.status is Health.OK else 503,
        content_type=content_types.APPLICATION_JSON,
        body=report,
    )


@app.get("/v1/me")
def me() -> CallerView:
    principal = current_principal()
    return CallerView(
        tenantId=principal.tenant_id,
        subject=principal.subject,
        collections=sorted(container.authorization.readable_collections(principal)),
    )


def parse_id(raw: str) -> UUID:
    """A malformed id is just another id that does not exist."""
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound("not found") from None


@app.post("/v1/uploads")
def create_upload(request: UploadRequest) -> Response[UploadResponse]:
    ticket = container.files.start_upload(
        current_principal(),
        collection_id=request.collection_id,
        filename=request.filename,
        media_type=request.media_type,
        byte_size=request.byte_size,
    )
    return _created(UploadResponse.of(ticket.file_id, ticket.version_id, ticket.upload))


@app.post("/v1/files/<file_id>/versions")
def create_version(file_id: str, request: NewVersionRequest) -> Response[UploadResponse]:
    ticket = container.files.start_new_version(
        current_principal(),
        parse_id(file_id),
        filename=request.filename,
        media_type=request.media_type,
        byte_size=request.byte_size,
    )
    return _created(UploadResponse.of(ticket.file_id, ticket.version_id, ticket.upload))


@app.get("/v1/files")
def list_files(
    collection_id: Annotated[str | None, Query(alias="collectionId", max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> FileListView:
    page = container.files.list_files(current_principal(), collection_id=collection_id, limit=limit, cursor=cursor)
    return FileListView(files=[FileSummary.of(record) for record in page.files], next_cursor=page.next_cursor)


@app.get("/v1/files/<file_id>")
def get_file(file_id: str) -> FileView:
    return FileView.of(container.files.get_file(current_principal(), parse_id(file_id)))


@app.get("/v1/files/<file_id>/content")
def read_content(
    file_id: str,
    version_id: Annotated[str | None, Query(alias="versionId", max_length=64)] = None,
) -> Response[Any]:
    result = container.files.read(
        current_principal(),
        parse_id(file_id),
        version_id=parse_id(version_id) if version_id else None,
        lifetime=MAX_SIGNED_READ_LIFETIME,
    )
    if isinstance(result, ProxiedContent):
        # A store that cannot sign: the bytes come through the API, still as an opaque attachment.
        return Response(
            status_code=200,
            content_type=SAFE_DOWNLOAD_TYPE,
            body=result.content,
            headers={"Content-Disposition": attachment_disposition(result.filename)},
        )
    return Response(
        status_code=200,
        content_type=content_types.APPLICATION_JSON,
        body=SignedReadView(url=result.url, expires_at=result.expires_at),
    )


@app.post("/v1/search")
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
    return search_view(container.retrieval.search(current_principal(), query))


@app.post("/v1/files/<file_id>/scan")
def scan_file(file_id: str) -> Response[ScanView]:
    """OCR every page of the current version again, as a new processing attempt (202: it runs in the
    background; GET /v1/files/{id} shows its progress and, once done, the pages OCR read)."""
    started = container.document_tools.scan_document(current_principal(), parse_id(file_id))
    return Response(
        status_code=202, content_type=content_types.APPLICATION_JSON, body=ScanView.model_validate(started.model_dump())
    )


@app.get("/v1/usage")
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
    principal = current_principal()
    totals = container.usage_ledger.totals(
        principal.tenant_id, container.authorization.readable_collections(principal), since=start, until=end
    )
    return UsageView.of(start, end, totals)


@app.get("/v1/coverage")
def coverage() -> CoverageView:
    principal = current_principal()
    embedder = container.embedder
    collections = container.authorization.readable_collections(principal)
    return CoverageView.of(
        embedder.model_id,
        embedder.capability().available,
        container.knowledge.coverage(principal.tenant_id, collections, embedder.model_id),
    )


@app.post("/v1/reindex")
def reindex(limit: Annotated[int, Query(ge=1, le=20)] = 5) -> ReindexView:
    """One batch of the caller's collections; call again while `remaining` is above zero.

    Only stale or keyword-only versions are taken, so calling it when nothing is stale costs nothing, and
    small batches keep each call well inside API Gateway's 29-second limit."""
    principal = current_principal()
    report = container.reindexer.run_batch(
        principal.tenant_id, container.authorization.readable_collections(principal), limit=limit
    )
    return ReindexView.model_validate(report.model_dump())


_DOCUMENT_READY = frozenset({ProcessingState.EXTRACTED, ProcessingState.INDEXING, ProcessingState.INDEXED})


@app.get("/v1/files/<file_id>/document")
def read_document(file_id: str, cursor: Annotated[str | None, Query(max_length=16)] = None) -> Response[Any]:
    parsed = parse_id(file_id)
    version = container.files.readable_document(current_principal(), parsed)
    if version.processing_state not in _DOCUMENT_READY:
        return Response(status_code=409, content_type=content_types.APPLICATION_JSON, body=nothing_to_read(version))
    document = container.pipeline.read_document(version)
    try:
        shown = window(document.blocks, int(cursor) if cursor else 0)
    except ValueError as error:
        raise InvalidRequest("cursor is not one this API returned") from error
    return Response(
        status_code=200,
        content_type=content_types.APPLICATION_JSON,
        body=DocumentWindowView(
            file_id=parsed,
            version_id=version.version_id,
            start=shown.start,
            next_cursor=str(shown.next_start) if shown.next_start is not None else None,
            total_blocks=shown.total_blocks,
            markdown=render_markdown(shown.blocks),
            blocks=[block.model_dump(mode="json", exclude_none=True) for block in shown.blocks],
            warnings=list(document.warnings),
            recognized_pages=list(document.recognized_pages),
            confidence=document.confidence,
            low_confidence=document.low_confidence,
        ),
    )


def nothing_to_read(version: FileVersionRecord) -> NothingToReadView:
    """Why there is nothing to read yet, and whether trying again could change that."""
    if version.processing_state is ProcessingState.FAILED and version.failure_reason is not None:
        return NothingToReadView(
            error="extraction_failed",
            message=version.failure_reason.user_sentence,
            reason=version.failure_reason.value,
            # Only a timeout may go differently next time; the same bytes give the same answer otherwise.
            retryable=version.failure_reason is FailureReason.TIMED_OUT,
            processing_state=version.processing_state.value,
        )
    if version.processing_state is ProcessingState.INTERRUPTED:
        return NothingToReadView(
            error="not_ready",
            message=interruption_notice(version.failure_detail, version.processing_retries),
            retryable=True,
            processing_state=version.processing_state.value,
        )
    return NothingToReadView(
        error="not_ready",
        message=f"the document is {version.processing_state.value.replace('_', ' ')}; try again shortly",
        retryable=True,
        processing_state=version.processing_state.value,
    )


@app.delete("/v1/files/<file_id>")
def delete_file(file_id: str) -> Response[DeletionView]:
    parsed = parse_id(file_id)
    container.files.delete_file(current_principal(), parsed)
    return Response(status_code=202, content_type=content_types.APPLICATION_JSON, body=DeletionView(file_id=parsed))


@app.delete("/v1/collections/<collection_id>/files")
def delete_collection_files(collection_id: str) -> Response[CollectionDeletionView]:
    moved = container.files.delete_collection_files(current_principal(), collection_id)
    return Response(
        status_code=202,
        content_type=content_types.APPLICATION_JSON,
        body=CollectionDeletionView(collection_id=collection_id, versions_deleting=moved),
    )


def _created(body: UploadResponse) -> Response[UploadResponse]:
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=body)


@app.get("/v1/openapi.json")
def openapi() -> Response[str]:
    return Response(
        status_code=200,
        content_type=content_types.APPLICATION_JSON,
        body=app.get_openapi_json_schema(title="Quire API", version="0.1.0"),
    )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    response = _undecodable_body(event) or app.resolve(event, context)
    response.setdefault("headers", {}).update(SECURITY_HEADERS)
    return response


def _undecodable_body(event: dict[str, Any]) -> dict[str, Any] | None:
    """A base64 body that is not UTF-8 text, refused before the resolver (whose request validation runs first
    on every route and would fail decoding it, as a 500)."""
    if not event.get("isBase64Encoded") or not event.get("body"):
        return None
    try:
        base64.b64decode(event["body"]).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        body = {"error": "invalid_request", "message": "the body is not UTF-8 text: send JSON"}
        return {"statusCode": 400, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}
    return None
