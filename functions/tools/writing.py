"""The tools that write: artifacts (create, update), exports (an artifact's, a file's conversion) and PDF reports."""

from functions.tools import models as m
from functions.tools.registry import ToolContext, tool
from functions.views.artifacts import ArtifactSummaryView, ArtifactVersionView
from shared.domain.exports import ExportRecord
from shared.services.artifacts import ArtifactView
from shared.services.exports import ExportView


@tool(
    "create_artifact",
    "Create an artifact",
    "A new artifact (Markdown or blocks, with citations to chunks) in a collection the caller may write.",
    read_only=False,
)
def create_artifact(ctx: ToolContext, params: m.CreateArtifactParams) -> m.ArtifactWritten:
    ctx.collection(params.collection_id)
    view = ctx.services.artifacts.create(
        ctx.principal,
        collection_id=params.collection_id,
        name=params.name,
        body=params.to_input(),
        producer="tool create_artifact",
    )
    return _written(ctx, view)


@tool(
    "update_artifact",
    "Update an artifact",
    "A new version of an artifact; expectedLatestVersion must be its latest version (a stale one is refused"
    " with the latest).",
    read_only=False,
)
def update_artifact(ctx: ToolContext, params: m.UpdateArtifactParams) -> m.ArtifactWritten:
    ctx.touched.add(ctx.services.artifacts.readable(ctx.principal, params.artifact_id).collection_id)
    view = ctx.services.artifacts.add_version(
        ctx.principal,
        params.artifact_id,
        expected_latest=params.expected_latest_version,
        body=params.to_input(),
        producer="tool update_artifact",
    )
    return _written(ctx, view)


@tool(
    "export_artifact",
    "Export an artifact",
    "Render one version of an artifact as PDF, DOCX, HTML or Markdown (a new file, made in the background).",
    read_only=False,
)
def export_artifact(ctx: ToolContext, params: m.ExportArtifactParams) -> m.ToolExport:
    version = params.version
    if version is None:
        artifact = ctx.services.artifacts.readable(ctx.principal, params.artifact_id)
        ctx.touched.add(artifact.collection_id)
        version = artifact.latest_version
    record, _ = ctx.services.exports.export_artifact(
        ctx.principal, params.artifact_id, version=version, export_format=params.format
    )
    return _export(ctx, record)


@tool(
    "create_pdf",
    "Create a PDF report",
    "A PDF report from Markdown or blocks with citations: an artifact (history, provenance) and its PDF export.",
    read_only=False,
)
def create_pdf(ctx: ToolContext, params: m.CreatePdfParams) -> m.PdfCreated:
    ctx.collection(params.collection_id)
    view, record = ctx.services.pdf_tools.create(
        ctx.principal, collection_id=params.collection_id, name=params.name, body=params.to_input()
    )
    return m.PdfCreated(
        artifact=ArtifactSummaryView.of(view.artifact),
        version=ArtifactVersionView.of(view.version),
        export=_export(ctx, record),
    )


@tool(
    "convert_file",
    "Convert a file",
    "Render a stored file's extracted document in another format (PDF, DOCX, HTML, Markdown) as a new file.",
    read_only=False,
)
def convert_file(ctx: ToolContext, params: m.ConvertFileParams) -> m.ToolExport:
    ctx.file(params.file_id)
    record, _ = ctx.services.exports.convert_file(
        ctx.principal, params.file_id, version_id=params.version_id, export_format=params.format
    )
    return _export(ctx, record)


def _written(ctx: ToolContext, view: ArtifactView) -> m.ArtifactWritten:
    ctx.touched.add(view.artifact.collection_id)
    return m.ArtifactWritten(
        artifact=ArtifactSummaryView.of(view.artifact), version=ArtifactVersionView.of(view.version)
    )


def _export(ctx: ToolContext, record: ExportRecord) -> m.ToolExport:
    ctx.touched.add(record.collection_id)
    return m.ToolExport.of(ExportView(record=record))
