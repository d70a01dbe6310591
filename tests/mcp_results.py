"""What an MCP tool result must look like to any client (functions/mcp/server.py:tool_result), read back as JSON.

A client checks any structured content it is given against the tool's output schema (the TypeScript SDK's does even
on isError, and throws), so a refusal carries none: its sentence, then its JSON, as two text blocks."""

import json
from typing import Any

import mcp_types as types


def refusal_of(result: types.CallToolResult) -> dict[str, Any]:
    """The refusal a result carries, checked to be one: isError, no structured content, its sentence first."""
    assert result.is_error is True, result
    assert result.structured_content is None, result.structured_content
    sentence, refusal_json = result.content
    assert isinstance(sentence, types.TextContent) and isinstance(refusal_json, types.TextContent), result.content
    refusal: dict[str, Any] = json.loads(refusal_json.text)
    assert sentence.text == refusal["message"], (sentence.text, refusal)
    return refusal


def result_of(result: types.CallToolResult) -> dict[str, Any]:
    """The structured result a result carries, checked to be one: not an error, the same JSON in its text block."""
    assert result.is_error is False, result.content
    structured: dict[str, Any] | None = result.structured_content
    assert structured is not None
    (text,) = result.content
    assert isinstance(text, types.TextContent) and json.loads(text.text) == structured
    return structured
