"""`@tool` (functions/tools/registry.py): a tool's schemas are its function's annotations, its flags are what the
decorator was told, and the catalog lists the same tools in the same order (the schemas themselves are pinned by
tests/unit/test_tool_definitions.py's snapshot)."""

from pydantic import Field

from functions.tools.catalog import TOOLS, TOOLS_BY_NAME
from functions.tools.registry import Tool, ToolContext, tool
from functions.views.base import ApiModel
from shared.domain.fencing import Fence
from tests.builders.tool_services import ToolServicesOverFakes
from tests.fakes import principal

# The order agents see them in (tools/list, GET /v1/tools): a change is deliberate.
LISTED = [
    "list_files",
    "read_file",
    "search_files",
    "answer",
    "scan_document",
    "analyze_image",
    "extract_text",
    "extract_tables",
    "summarize_document",
    "compare_documents",
    "create_artifact",
    "update_artifact",
    "export_artifact",
    "create_pdf",
    "convert_file",
    "get_file_processing_status",
]
WRITING = {"scan_document", "create_artifact", "update_artifact", "export_artifact", "create_pdf", "convert_file"}
DOCUMENT_TEXT = {
    "read_file",
    "search_files",
    "answer",
    "analyze_image",
    "extract_text",
    "extract_tables",
    "summarize_document",
    "compare_documents",
}
MODULE_OF = {
    "functions.tools.files": {"list_files", "read_file", "search_files", "answer", "get_file_processing_status"},
    "functions.tools.documents": {
        "scan_document",
        "analyze_image",
        "extract_text",
        "extract_tables",
        "summarize_document",
        "compare_documents",
    },
    "functions.tools.writing": {"create_artifact", "update_artifact", "export_artifact", "create_pdf", "convert_file"},
}


class EchoParams(ApiModel):
    file_id: str = Field(description="Echoed.")
    times: int = 1


class Echoed(ApiModel):
    echoed_text: str


@tool("echo", "Echo", "Says it again.", carries_document_text=True)
def echo(ctx: ToolContext, params: EchoParams) -> Echoed:
    return Echoed(echoed_text=ctx.fenced(params.file_id * params.times))


def test_the_decorator_makes_a_tool_whose_schemas_are_its_functions_annotations() -> None:
    assert isinstance(echo, Tool)
    assert (echo.name, echo.title, echo.description) == ("echo", "Echo", "Says it again.")
    assert (echo.parameters, echo.result) == (EchoParams, Echoed)
    assert (echo.read_only, echo.carries_document_text) == (True, True)
    assert echo.input_schema()["properties"]["fileId"]["description"] == "Echoed."
    assert set(echo.input_schema()["required"]) == {"fileId"}
    assert set(echo.output_schema()["properties"]) == {"echoedText"}


def test_the_decorated_function_runs_with_its_context_and_parameters() -> None:
    context = ToolContext(principal=principal(), services=ToolServicesOverFakes(), fence=Fence.new())
    result = echo.run(context, EchoParams(file_id="ab", times=2))
    assert context.fence.unwrap(result.echoed_text) == "abab"


def test_a_schema_handed_out_is_a_copy_the_caller_may_change() -> None:
    schema = echo.input_schema()
    schema["properties"].clear()
    assert "fileId" in echo.input_schema()["properties"]


def test_the_catalog_lists_the_same_tools_in_the_same_order_each_once() -> None:
    assert [listed.name for listed in TOOLS] == LISTED
    assert set(TOOLS_BY_NAME) == set(LISTED) and all(TOOLS_BY_NAME[t.name] is t for t in TOOLS)


def test_only_the_tools_that_write_are_not_read_only() -> None:
    assert {listed.name for listed in TOOLS if not listed.read_only} == WRITING


def test_the_tools_that_can_return_document_text_say_so() -> None:
    assert {listed.name for listed in TOOLS if listed.carries_document_text} == DOCUMENT_TEXT


def test_each_tool_is_defined_in_the_module_of_its_resource() -> None:
    assert {module: {t.name for t in TOOLS if t.run.__module__ == module} for module in MODULE_OF} == MODULE_OF


def test_every_tool_takes_and_returns_camel_case_json_objects() -> None:
    for listed in TOOLS:
        for schema in (listed.input_schema(), listed.output_schema()):
            assert schema["type"] == "object", listed.name
            assert all("_" not in name for name in schema.get("properties", {})), listed.name
