"""The agent tools' definitions (fifteen over files and documents, and `answer`), parameters named as the HTTP
API names them, and every input and output schema pinned by a snapshot so a change to what an agent sees is deliberate
(`QUIRE_UPDATE_TOOL_SCHEMAS=1 pytest tests/unit/test_tool_definitions.py` rewrites it, for review in the diff)."""

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from functions.tools.catalog import TOOLS
from tests.conftest import REPO_ROOT

SNAPSHOT = Path(__file__).parent / "snapshots" / "tool_schemas.json"
SEED_TOOLS = {
    "list_files",
    "read_file",
    "search_files",
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
}
# Issue 18 adds grounded answers as a tool.
ANSWER_TOOLS = {"answer"}
# The HTTP API's names for what the tools take (the contract), and the others a tool may take.
CONTRACT_PARAMETERS = {
    "fileId",
    "versionId",
    "collectionId",
    "query",
    "offset",
    "limit",
    "format",
    "artifactId",
    "expectedLatestVersion",
}
OTHER_PARAMETERS = {
    "cursor",
    "part",
    "mode",
    "otherFileId",
    "otherVersionId",
    "version",
    "name",
    "markdown",
    "blocks",
    "citations",
    "sources",
    "question",  # POST /v1/answer names it so
    "filter",  # issue 33's metadata filter: the body field of POST /v1/search and POST /v1/answer
    "groupBy",  # issue 37's search by file: POST /v1/search's body fields
    "hitsPerFile",
}


def schemas() -> dict[str, dict[str, Any]]:
    return {tool.name: {"input": tool.input_schema(), "output": tool.output_schema()} for tool in TOOLS}


def property_names(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for name, value in schema.items():
            if name == "properties" and isinstance(value, dict):
                yield from value
            yield from property_names(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from property_names(value)


def test_the_catalog_is_the_fifteen_document_tools_and_answer() -> None:
    assert {tool.name for tool in TOOLS} == SEED_TOOLS | ANSWER_TOOLS
    assert len(TOOLS) == 16


def test_every_schema_matches_the_snapshot() -> None:
    current = schemas()
    if os.environ.get("QUIRE_UPDATE_TOOL_SCHEMAS"):
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert current == json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def test_parameters_are_named_as_the_http_api_names_them() -> None:
    for tool in TOOLS:
        top_level = set(tool.input_schema()["properties"])
        assert top_level <= CONTRACT_PARAMETERS | OTHER_PARAMETERS, (tool.name, top_level)
        assert tool.input_schema()["type"] == "object" and tool.output_schema()["type"] == "object"
        assert tool.input_schema().get("additionalProperties") is False, tool.name


def test_no_result_has_a_field_for_a_key_a_bucket_or_a_url() -> None:
    for tool in TOOLS:
        names = {name.lower() for name in property_names(tool.output_schema())}
        assert not names & {"url", "key", "bucket", "storagekey", "documentkey", "contentkey", "expiresat"}, tool.name


def test_tools_that_carry_document_text_say_it_is_untrusted() -> None:
    for tool in TOOLS:
        if tool.carries_document_text:
            assert "untrusted" in tool.output_schema()["properties"], tool.name


def test_an_outage_is_refused_as_unavailable_with_a_retry_after_like_the_http_routes_503() -> None:
    import psycopg

    from functions.tools.dispatcher import refusal_for

    refusal = refusal_for(psycopg.OperationalError("connection to server at 127.0.0.1, port 1 failed"))
    assert (refusal.error, refusal.retryable, refusal.retry_after_seconds) == ("unavailable", True, 2)
    assert "127.0.0.1" not in refusal.message  # never which part, nor its address
    assert refusal_for(RuntimeError("a bug")).error == "internal_error"


def test_every_doc_that_counts_the_agent_tools_counts_the_catalog() -> None:
    # One number, the catalog's: a doc that says how many tools there are says len(TOOLS), in words.
    words = {15: "fifteen", 16: "sixteen", 17: "seventeen", 18: "eighteen", 19: "nineteen", 20: "twenty"}
    counted = re.compile(r"\b(" + "|".join(words.values()) + r")(?: agent)? tools\b", re.IGNORECASE)
    for name in ("README.md", "docs/api.md", "docs/architecture.md", "docs/cli.md", "docs/agent-tools.md"):
        for found in counted.finditer((REPO_ROOT / name).read_text(encoding="utf-8")):
            assert found.group(1).lower() == words[len(TOOLS)], f"{name} says {found.group(0)!r}"


def test_the_filter_tools_show_the_filters_shape_with_every_operator_the_domain_parses() -> None:
    import jsonschema

    from functions.views.filter_shape import FILTER_DESCRIPTION, FILTER_EXAMPLE
    from shared.domain.metadata_filter import OPERATORS

    takes_filter = {tool.name for tool in TOOLS if "filter" in tool.input_schema()["properties"]}
    assert takes_filter == {"list_files", "search_files", "answer"}
    for name in takes_filter:
        schema = next(tool for tool in TOOLS if tool.name == name).input_schema()
        jsonschema.Draft202012Validator.check_schema(schema)
        parameter = schema["properties"]["filter"]
        assert (parameter["description"], parameter["examples"]) == (FILTER_DESCRIPTION, [FILTER_EXAMPLE])
        shape = schema["$defs"]["MetadataFilter"]
        assert set(shape["properties"]) == set(OPERATORS) and shape["maxProperties"] == 1
        # Groups nest: a group's items are filters again.
        assert shape["properties"]["orAll"]["items"] == {"$ref": "#/$defs/MetadataFilter"}
        filters = jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/MetadataFilter"})
        assert filters.is_valid(FILTER_EXAMPLE)
        assert filters.is_valid({"orAll": [{"in": {"key": "region", "value": ["eu", "us"]}}, {"exists": {"key": "x"}}]})
        for wrong in ({"equals": {"key": "a", "value": 1}, "exists": {"key": "a"}}, {"near": {"key": "a"}}, {}):
            assert not filters.is_valid(wrong), wrong


def test_search_files_takes_groupby_and_hits_per_file_as_post_v1_search_takes_them() -> None:
    from functions.views.search import SearchRequest

    [search_files] = [tool for tool in TOOLS if tool.name == "search_files"]
    parameters = search_files.input_schema()["properties"]
    body = SearchRequest.model_json_schema(by_alias=True)["properties"]
    for name in ("groupBy", "hitsPerFile"):
        shape = {key: value for key, value in parameters[name].items() if key != "description"}
        assert shape == {key: value for key, value in body[name].items() if key != "description"}, name
    assert "groups" in search_files.output_schema()["properties"]
