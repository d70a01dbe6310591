"""The agent tools over plain HTTP, for agents that do not speak MCP: the same definitions and the same dispatcher
as /mcp. A refusal (not found, forbidden, a stale version, bad arguments) is a 200 whose `isError` is true and whose
`error` says what was wrong and what to call instead, exactly as the MCP surface answers it."""

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import Field

from functions.api.routes.context import current_principal, json_response
from functions.tools.dispatcher import ToolDispatcher, UnknownTool
from functions.tools.models import Refusal
from functions.views.base import ApiModel
from shared.bootstrap import container
from shared.domain.errors import InvalidRequest

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


class ToolAnnotations(ApiModel):
    read_only_hint: bool
    destructive_hint: bool = False


class ToolDefinitionView(ApiModel):
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    annotations: ToolAnnotations


class ToolListView(ApiModel):
    tools: list[ToolDefinitionView]


class ToolCallView(ApiModel):
    tool: str
    is_error: bool
    result: dict[str, Any] | None = Field(default=None, description="The tool's result (its outputSchema).")
    error: Refusal | None = None


def definitions() -> ToolListView:
    return ToolListView(
        tools=[
            ToolDefinitionView(
                name=tool.name,
                title=tool.title,
                description=tool.description,
                input_schema=tool.input_schema(),
                output_schema=tool.output_schema(),
                annotations=ToolAnnotations(read_only_hint=tool.read_only),
            )
            for tool in ToolDispatcher.tools()
        ]
    )


@router.get("/v1/tools")
def list_tools() -> ToolListView:
    """Every tool with its input and output JSON Schemas: the list the MCP server gives."""
    return definitions()


@router.post("/v1/tools/<name>")
def call_tool(name: str) -> Response[Any]:
    """Call one tool; the body is its arguments (a JSON object, camelCase as in its inputSchema)."""
    raw = router.current_event.decoded_body or ""
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except ValueError:
        raise InvalidRequest("the body is not JSON: send the tool's arguments as a JSON object") from None
    if not isinstance(arguments, dict):
        raise InvalidRequest("the body must be a JSON object of the tool's arguments")
    try:
        outcome = ToolDispatcher(container()).call(current_principal(router), name, arguments, surface="http")
    except UnknownTool:
        return json_response(
            404, {"error": "not_found", "message": "there is no tool by that name: GET /v1/tools lists them"}
        )
    return json_response(200, outcome.wire())
