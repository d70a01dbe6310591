"""PDF tools: merge, split, watermark, compose, and a cited report. Results are new files (exports)."""

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from functions.api.routes.context import current_principal, json_response
from functions.views.artifacts import CreateArtifactRequest
from functions.views.exports import (
    ComposeRequest,
    ExportListView,
    ExportView,
    MergeRequest,
    PdfSourceBody,
    SplitRequest,
    WatermarkRequest,
)
from shared.bootstrap import container
from shared.domain.exports import ExportRecord, ExportState
from shared.services.exports import ExportView as Export
from shared.services.pdf_tools import PdfSource

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


def _source(body: PdfSourceBody) -> PdfSource:
    return PdfSource(file_id=body.file_id, version_id=body.version_id, pages=body.pages)


def _accepted(records: list[ExportRecord]) -> Response[ExportListView]:
    status = 202 if any(record.state is ExportState.PENDING for record in records) else 200
    return json_response(status, ExportListView(exports=[ExportView.of(Export(record=r)) for r in records]))


@router.post("/v1/pdf/merge")
def merge(request: MergeRequest) -> Response[ExportListView]:
    records = container().pdf_tools.merge(
        current_principal(router),
        [_source(source) for source in request.sources],
        name=request.name,
        collection_id=request.collection_id,
    )
    return _accepted(records)


@router.post("/v1/pdf/compose")
def compose(request: ComposeRequest) -> Response[ExportListView]:
    records = container().pdf_tools.compose(
        current_principal(router),
        [_source(page) for page in request.pages],
        name=request.name,
        collection_id=request.collection_id,
    )
    return _accepted(records)


@router.post("/v1/pdf/split")
def split(request: SplitRequest) -> Response[ExportListView]:
    source = PdfSource(file_id=request.file_id, version_id=request.version_id)
    return _accepted(container().pdf_tools.split(current_principal(router), source, request.ranges))


@router.post("/v1/pdf/watermark")
def watermark(request: WatermarkRequest) -> Response[ExportListView]:
    source = PdfSource(file_id=request.file_id, version_id=request.version_id)
    records = container().pdf_tools.watermark(
        current_principal(router), source, text=request.text, opacity=request.opacity
    )
    return _accepted(records)


@router.post("/v1/pdf/create")
def create_pdf(request: CreateArtifactRequest) -> Response[ExportListView]:
    """A report from structured content with citations: an artifact (history, provenance) and its PDF."""
    _, record = container().pdf_tools.create(
        current_principal(router),
        collection_id=request.collection_id,
        name=request.name,
        body=request.to_input(),
    )
    return _accepted([record])
