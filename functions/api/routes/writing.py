"""Document writing: edit proposals on artifacts, and replacements of uploaded files with their approval."""

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import TypeAdapter, ValidationError

from functions.api.routes.context import current_principal, json_response, parse_id
from functions.views.writing import ProposalRequest, ProposalView, ReplacementRequest, ReplacementView
from shared.bootstrap import container
from shared.domain.errors import InvalidRequest
from shared.domain.proposals import Operation

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
_OPERATION: TypeAdapter[Operation] = TypeAdapter(Operation)


def _operations(raw: list[dict[str, object]]) -> list[Operation]:
    parsed = []
    for position, item in enumerate(raw):
        try:
            parsed.append(_OPERATION.validate_python(item))
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(part) for part in problem["loc"][1:] or problem["loc"])
            raise InvalidRequest(f"operations[{position}].{where}: {problem['msg']}") from error
    return parsed


@router.post("/v1/artifacts/<artifact_id>/proposals")
def propose(artifact_id: str, request: ProposalRequest) -> Response[ProposalView]:
    outcome = container().document_writer.propose(
        current_principal(router),
        parse_id(artifact_id),
        base_version=request.base_version,
        operations=_operations(request.operations),
        dry_run=request.dry_run,
        producer="POST /v1/artifacts/{id}/proposals",
    )
    return json_response(200 if request.dry_run else 201, ProposalView.of(outcome))


@router.post("/v1/files/<file_id>/replacements")
def propose_replacement(file_id: str, request: ReplacementRequest) -> Response[ReplacementView]:
    record = container().document_writer.propose_replacement(
        current_principal(router), parse_id(file_id), version_id=request.version_id, body=request.to_input()
    )
    return json_response(201, ReplacementView.of(record))


@router.get("/v1/replacements/<replacement_id>")
def get_replacement(replacement_id: str) -> ReplacementView:
    return ReplacementView.of(
        container().document_writer.replacement(current_principal(router), parse_id(replacement_id))
    )


@router.post("/v1/replacements/<replacement_id>/approve")
def approve_replacement(replacement_id: str) -> ReplacementView:
    return ReplacementView.of(container().document_writer.approve(current_principal(router), parse_id(replacement_id)))


@router.post("/v1/replacements/<replacement_id>/reject")
def reject_replacement(replacement_id: str) -> ReplacementView:
    return ReplacementView.of(container().document_writer.reject(current_principal(router), parse_id(replacement_id)))
