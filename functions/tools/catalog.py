"""The agent tools (the fifteen of docs/agent-tools.md and `answer`), in the order they are listed. Each is a thin
call of the service its HTTP route calls, so the authorization decision is the route's: an unentitled id is the same
not-found as a missing one. Each is defined beside its function, in the module of its resource."""

from collections.abc import Sequence
from typing import Any

from functions.tools import documents, files, writing
from functions.tools.registry import Tool, ToolContext

TOOLS: Sequence[Tool[Any, Any]] = (
    files.list_files,
    files.read_file,
    files.search_files,
    files.answer,
    documents.scan_document,
    documents.analyze_image,
    documents.extract_text,
    documents.extract_tables,
    documents.summarize_document,
    documents.compare_documents,
    writing.create_artifact,
    writing.update_artifact,
    writing.export_artifact,
    writing.create_pdf,
    writing.convert_file,
    files.get_file_processing_status,
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}

__all__ = ["TOOLS", "TOOLS_BY_NAME", "Tool", "ToolContext"]
