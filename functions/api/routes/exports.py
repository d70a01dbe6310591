"""Exports of artifact versions, conversions of uploaded files, and the export records with their downloads."""

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from functions.api.routes.context import current_principal, json_response, parse_id
from functions.views.exports import ConversionRequest, ExportRequest, ExportView
from shared.bootstrap import container
from shared.domain.errors import NotFound
from shared.domain.exports import ExportRecord, ExportState
from shared.services.exports import ExportView as Export

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


def _accepted(record: ExportRecord) -> Response[ExportView]:
    # 202 while the render runs off the request path; 200 for a record already decided (the same export).
    status = 202 if record.state is ExportState.PENDING else 200
    return json_response(status, ExportView.of(Export(record=record)))


@router.post("/v1/artifacts/<artifact_id>/versions/<version>/exports")
def export_artifact_version(artifact_id: str, version: str, request: ExportRequest) -> Response[ExportView]:
    if not version.isdigit() or not 1 <= int(version) <= 10**9:
        raise NotFound("not found")
    record, _ = container().exports.export_artifact(
        current_principal(router), parse_id(artifact_id), version=int(version), export_format=request.format
    )
    return _accepted(record)


@router.post("/v1/files/<file_id>/conversions")
def convert_file(file_id: str, request: ConversionRequest) -> Response[ExportView]:
    record, _ = container().exports.convert_file(
        current_principal(router), parse_id(file_id), version_id=request.version_id, export_format=request.format
    )
    return _accepted(record)


@router.get("/v1/exports/<export_id>")
def get_export(export_id: str) -> ExportView:
    return ExportView.of(container().exports.get(current_principal(router), parse_id(export_id)))
