"""Artifacts: create, read, list, history, new versions and restore."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from functions.api.routes.context import current_principal, json_response, parse_id
from functions.views.artifacts import (
    ArtifactDetailView,
    ArtifactHistoryView,
    ArtifactListView,
    ArtifactSummaryView,
    ArtifactVersionView,
    CreateArtifactRequest,
    NewArtifactVersionRequest,
    RestoreRequest,
)
from shared.bootstrap import container
from shared.domain.errors import InvalidRequest
from shared.services.artifacts import MAX_HISTORY_PAGE

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


def _cursor(raw: str | None) -> int:
    try:
        return int(raw) if raw else 0
    except ValueError:
        raise InvalidRequest("cursor is not one this API returned") from None


@router.post("/v1/artifacts")
def create_artifact(request: CreateArtifactRequest) -> Response[ArtifactDetailView]:
    view = container().artifacts.create(
        current_principal(router),
        collection_id=request.collection_id,
        name=request.name,
        body=request.to_input(),
        producer="POST /v1/artifacts",
    )
    return json_response(201, ArtifactDetailView.detail(view))


@router.get("/v1/artifacts")
def list_artifacts(
    collection_id: Annotated[str | None, Query(alias="collectionId", max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_HISTORY_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=64)] = None,
) -> ArtifactListView:
    records, more = container().artifacts.list_artifacts(
        current_principal(router),
        collection_id=collection_id,
        limit=limit,
        after=parse_id(cursor) if cursor else None,
    )
    return ArtifactListView(
        artifacts=[ArtifactSummaryView.of(record) for record in records],
        next_cursor=str(records[-1].artifact_id) if more and records else None,
    )


@router.get("/v1/artifacts/<artifact_id>")
def get_artifact(
    artifact_id: str,
    version: Annotated[int | None, Query(ge=1)] = None,
    cursor: Annotated[str | None, Query(max_length=16)] = None,
) -> Response[Any]:
    view = container().artifacts.get(current_principal(router), parse_id(artifact_id), version=version)
    try:
        return json_response(200, ArtifactDetailView.detail(view, _cursor(cursor)))
    except ValueError as error:
        raise InvalidRequest("cursor is not one this API returned") from error


@router.get("/v1/artifacts/<artifact_id>/versions")
def artifact_history(
    artifact_id: str,
    limit: Annotated[int, Query(ge=1, le=MAX_HISTORY_PAGE)] = MAX_HISTORY_PAGE,
    cursor: Annotated[str | None, Query(max_length=16)] = None,
) -> ArtifactHistoryView:
    artifact, versions = container().artifacts.history(
        current_principal(router), parse_id(artifact_id), after=_cursor(cursor), limit=limit
    )
    more = bool(versions) and versions[-1].version < artifact.latest_version
    return ArtifactHistoryView(
        artifact_id=artifact.artifact_id,
        latest_version=artifact.latest_version,
        versions=[ArtifactVersionView.of(version) for version in versions],
        next_cursor=str(versions[-1].version) if more else None,
    )


@router.post("/v1/artifacts/<artifact_id>/versions")
def add_artifact_version(artifact_id: str, request: NewArtifactVersionRequest) -> Response[ArtifactDetailView]:
    view = container().artifacts.add_version(
        current_principal(router),
        parse_id(artifact_id),
        expected_latest=request.expected_latest_version,
        body=request.to_input(),
        producer="POST /v1/artifacts/{id}/versions",
    )
    return json_response(201, ArtifactDetailView.detail(view))


@router.post("/v1/artifacts/<artifact_id>/restore")
def restore_artifact(artifact_id: str, request: RestoreRequest) -> Response[ArtifactDetailView]:
    view = container().artifacts.restore(
        current_principal(router),
        parse_id(artifact_id),
        version=request.version,
        expected_latest=request.expected_latest_version,
        producer="POST /v1/artifacts/{id}/restore",
    )
    return json_response(201, ArtifactDetailView.detail(view))
