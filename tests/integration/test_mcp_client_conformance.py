"""Every tool in every outcome this stack can produce, through the two official MCP clients: the TypeScript SDK's
(`@modelcontextprotocol/sdk`, the client most MCP hosts embed, tests/mcp_ts/conformance.mjs under node) and the
Python SDK's. Each client checks any structured content a result carries against the tool's declared output schema
(the TypeScript client even on isError, and throws), so a result passes only if it conforms: a result its schema, a
refusal no structured content at all, its sentence and its JSON as text (functions/mcp/server.py:tool_result).

The cases are one table here: the node script gets it as JSON with the URL and the tokens in its environment, and
each refusal's expected JSON is what POST /v1/tools/{name} answers for the same call, so the two surfaces agree."""

import dataclasses
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from functions.tools.catalog import TOOLS
from shared.bootstrap import Container, adapters_for, overridden
from shared.domain.auth import Role
from shared.domain.usage import Usage
from shared.domain.workflow import ProcessVersion, StartOutcome
from tests.integration.api_steps import REPORT
from tests.integration.files_stack import PDF, Stack
from tests.integration.mcp_endpoint import mcp_endpoint
from tests.mcp_results import refusal_of, result_of

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE_SCRIPT = REPO / "tests" / "mcp_ts" / "conformance.mjs"
# Installed by `npm ci` from package-lock.json (the Makefile's NODE_INSTALLED stamp, a prerequisite of make test).
TYPESCRIPT_SDK = REPO / "node_modules" / "@modelcontextprotocol" / "sdk"
TENANT = "conformance-acme"
# A refusal whose sentence names the time left until a limit resets: compared up to that point.
RESETS_AT = " after 00:00 UTC"

Caller = Literal["writer", "reader"]


@dataclass(frozen=True)
class Case:
    """One call and what it must come back as: a result holding `expect` (dotted paths and their values), or the
    refusal `error` (its JSON then filled in from the HTTP surface's answer to the same call)."""

    label: str
    tool: str
    arguments: dict[str, Any]
    caller: Caller = "writer"
    error: str | None = None
    expect: dict[str, Any] = field(default_factory=dict)
    refusal: dict[str, Any] | None = None


@dataclass(frozen=True)
class Conformance:
    api: str
    tokens: dict[Caller, str]
    cases: list[Case]


def landed(stack: Stack, token: str, filename: str, media_type: str, content: bytes) -> str:
    ticket = stack.upload(token, filename, media_type, content)
    return str(ticket["fileId"])


def tool_answer(api: Stack, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """POST /v1/tools/{name}: the HTTP surface's answer to a call."""
    status, answer = api.json("POST", f"/v1/tools/{tool}", token, arguments)
    assert status == 200, answer
    return answer  # type: ignore[no-any-return]


def table(files: dict[str, str], artifact_id: str, guarded_id: str) -> list[Case]:
    """Every tool with a result where this stack can make one (not analyze_image: OCR of an image is the slow
    suite's; not scan_document: the daily OCR limit here is spent, to make its limit refusal), and every refusal."""
    report, text, queued, pdf = (files[name] for name in ("report", "text", "queued", "pdf"))
    missing = str(uuid.uuid4())
    return [
        # list_files
        Case("a page of files", "list_files", {"limit": 50}),
        Case("a limit out of range", "list_files", {"limit": 0}, error="invalid_arguments"),
        Case("an unknown argument", "list_files", {"bucket": "quire-files"}, error="invalid_arguments"),
        # read_file
        Case("a text file's bytes", "read_file", {"fileId": text}, expect={"fileId": text, "offset": 0}),
        Case("a PDF is not read as text", "read_file", {"fileId": pdf}, error="unsupported_media_type"),
        Case("a missing file", "read_file", {"fileId": missing}, error="not_found"),
        # search_files
        Case("cited hits", "search_files", {"query": "quarterly revenue"}, expect={"outcome": "found"}),
        Case("a malformed filter", "search_files", {"query": "x", "filter": {"orAll": []}}, error="invalid_arguments"),
        # answer
        Case("an answer from evidence", "answer", {"question": "What was the quarterly revenue?"}),
        Case("an empty question", "answer", {"question": ""}, error="invalid_arguments"),
        # scan_document
        Case("a rescan past the OCR limit", "scan_document", {"fileId": pdf}, error="limit_exceeded"),
        Case("a rescan by a reader", "scan_document", {"fileId": pdf}, caller="reader", error="forbidden"),
        Case("a rescan of a missing file", "scan_document", {"fileId": missing}, error="not_found"),
        # analyze_image
        Case("a Markdown file is no image", "analyze_image", {"fileId": report}, error="not_an_image"),
        # extract_text
        Case("a window of a document", "extract_text", {"fileId": report}, expect={"fileId": report, "offset": 0}),
        Case("a file still queued", "extract_text", {"fileId": queued}, error="not_ready"),
        Case("a malformed id", "extract_text", {"fileId": "not-a-uuid"}, error="invalid_arguments"),
        Case("a missing document", "extract_text", {"fileId": missing}, error="not_found"),
        # extract_tables
        Case("a document's tables", "extract_tables", {"fileId": report}, expect={"fileId": report}),
        Case("tables of a file still queued", "extract_tables", {"fileId": queued}, error="not_ready"),
        # summarize_document
        Case("an outline", "summarize_document", {"fileId": report}, expect={"method": "extractive"}),
        Case("an outline of a file still queued", "summarize_document", {"fileId": queued}, error="not_ready"),
        # compare_documents
        Case(
            "two files compared",
            "compare_documents",
            {"fileId": report, "otherFileId": text},
            expect={"before.fileId": report, "after.fileId": text},
        ),
        Case("one version, nothing to compare", "compare_documents", {"fileId": report}, error="nothing_to_compare"),
        # create_artifact
        Case(
            "a new artifact",
            "create_artifact",
            {"collectionId": "docs", "name": "Brief", "markdown": "# Brief\n\nRevenue grew.\n"},
            expect={"version.version": 1},
        ),
        Case(
            "an artifact by a reader",
            "create_artifact",
            {"collectionId": "docs", "name": "No", "markdown": "# No\n"},
            caller="reader",
            error="forbidden",
        ),
        # update_artifact (the guarded artifact is at version 2, and no case changes it)
        Case(
            "a new version",
            "update_artifact",
            {"artifactId": artifact_id, "expectedLatestVersion": 1, "markdown": "# Brief\n\nMore.\n"},
            expect={"artifact.artifactId": artifact_id, "artifact.latestVersion": 2},
        ),
        Case(
            "a lost update",
            "update_artifact",
            {"artifactId": guarded_id, "expectedLatestVersion": 1, "markdown": "# Stale\n"},
            error="version_conflict",
        ),
        # export_artifact
        Case(
            "an export queued",
            "export_artifact",
            {"artifactId": artifact_id, "format": "html"},
            expect={"artifactId": artifact_id, "state": "pending"},
        ),
        Case("a missing artifact", "export_artifact", {"artifactId": missing, "format": "pdf"}, error="not_found"),
        # create_pdf
        Case("a PDF report", "create_pdf", {"collectionId": "docs", "name": "Report", "markdown": "# R\n\nText.\n"}),
        Case(
            "a PDF report by a reader",
            "create_pdf",
            {"collectionId": "docs", "name": "No", "markdown": "# No\n"},
            caller="reader",
            error="forbidden",
        ),
        # convert_file
        Case("a conversion", "convert_file", {"fileId": report, "format": "html"}, expect={"sourceFileId": report}),
        Case(
            "a conversion by a reader",
            "convert_file",
            {"fileId": report, "format": "pdf"},
            caller="reader",
            error="forbidden",
        ),
        # get_file_processing_status
        Case("a file indexed", "get_file_processing_status", {"fileId": report}, expect={"fileId": report}),
        Case("a file queued", "get_file_processing_status", {"fileId": queued}, expect={"fileId": queued}),
        Case("a missing file's status", "get_file_processing_status", {"fileId": missing}, error="not_found"),
    ]


class HeldWorkflow:
    """Fake Workflow port (the real ones are Step Functions / in-process): a version it is given stays queued."""

    def __init__(self) -> None:
        self.held: list[ProcessVersion] = []

    def start(self, request: ProcessVersion) -> StartOutcome:
        self.held.append(request)
        return StartOutcome.STARTED


@pytest.fixture(scope="module")
def conformance(stack: Stack) -> Iterator[Conformance]:
    tokens: dict[Caller, str] = {
        "writer": stack.token(TENANT, ("docs",)),
        "reader": stack.token(TENANT, ("docs",), sub="rita", role=Role.READ),
    }
    writer = tokens["writer"]
    # Given a Markdown and a text file processed by the stack,
    files = {
        "report": landed(stack, writer, "report.md", "text/markdown", REPORT.encode()),
        "text": landed(stack, writer, "notes.txt", "text/plain", b"The quarterly figures are in the appendix.\n"),
    }
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    # and the API and the MCP endpoint over a container whose workflow holds what it is given (a Markdown file and
    # a PDF stay queued) and whose tenants may OCR one page a day, spent already (scan_document's limit refusal)
    settings = stack.container.settings.model_copy(update={"limit_ocr_pages_per_day": 1})
    held = Container(settings, adapters_for(settings, workflow=HeldWorkflow()))
    held.usage_ledger.record(
        TENANT,
        uuid.uuid4(),
        uuid.uuid4(),
        "docs",
        step="ocr",
        attempt=1,
        usage=Usage(provider="rapidocr", operation="rapidocr:recognize", priced=False, pages=1),
    )
    try:
        with overridden(held), mcp_endpoint(held) as api:
            files["queued"] = landed(stack, writer, "later.md", "text/markdown", b"# Later\n\nNot processed yet.\n")
            files["pdf"] = landed(stack, writer, "scan.pdf", "application/pdf", PDF)
            # The endpoint's own API (its /v1/tools runs over the same container as its /mcp)
            http = dataclasses.replace(stack, api=api)
            brief, guarded = (
                tool_answer(
                    http, writer, "create_artifact", {"collectionId": "docs", "name": name, "markdown": "# A\n"}
                )
                for name in ("Brief", "Guarded")
            )
            artifact_id, guarded_id = (answer["result"]["artifact"]["artifactId"] for answer in (brief, guarded))
            update = {"artifactId": guarded_id, "expectedLatestVersion": 1, "markdown": "# Guarded\n\nv2\n"}
            assert not tool_answer(http, writer, "update_artifact", update)["isError"]
            cases = table(files, artifact_id, guarded_id)
            # Each refusal as the HTTP surface answers the same call: what both MCP clients must read back.
            with_refusals = []
            for case in cases:
                if case.error is None:
                    with_refusals.append(case)
                    continue
                answer = tool_answer(http, tokens[case.caller], case.tool, case.arguments)
                assert answer["isError"] and answer["error"]["error"] == case.error, (case.label, answer)
                with_refusals.append(Case(**{**asdict(case), "refusal": answer["error"]}))
            yield Conformance(api=api, tokens=tokens, cases=with_refusals)
    finally:
        held.database.close()


def test_the_cases_cover_every_tool_with_a_refusal_and_all_but_two_with_a_result(conformance: Conformance) -> None:
    names = {tool.name for tool in TOOLS}
    assert {case.tool for case in conformance.cases if case.error} == names
    assert {case.tool for case in conformance.cases if not case.error} == names - {"analyze_image", "scan_document"}
    assert {case.error for case in conformance.cases} >= {
        "invalid_arguments",
        "not_found",
        "not_ready",
        "forbidden",
        "limit_exceeded",
        "version_conflict",
    }


def test_the_typescript_sdk_client_accepts_every_result_and_refusal(conformance: Conformance) -> None:
    node = shutil.which("node")
    assert node is not None, "the TypeScript MCP client runs under node (20 or later), which is not on the PATH"
    assert TYPESCRIPT_SDK.is_dir(), f"{TYPESCRIPT_SDK} is missing: `npm ci` installs it (make test runs it)"
    environment = {
        **os.environ,
        "QUIRE_MCP_URL": f"{conformance.api}/mcp",
        "QUIRE_MCP_TOKEN": conformance.tokens["writer"],
        "QUIRE_MCP_READER_TOKEN": conformance.tokens["reader"],
    }
    plan = {
        "tools": [tool.name for tool in TOOLS],
        "resetsAt": RESETS_AT,
        "cases": [asdict(case) for case in conformance.cases],
    }
    ran = subprocess.run(
        [node, str(CONFORMANCE_SCRIPT)],
        input=json.dumps(plan),
        env=environment,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, f"node {CONFORMANCE_SCRIPT.name} failed:\n{ran.stdout}\n{ran.stderr}"
    summary = json.loads(ran.stdout.splitlines()[-1])
    assert summary == {
        "listed": len(TOOLS),
        "results": sum(1 for case in conformance.cases if not case.error),
        "refusals": sum(1 for case in conformance.cases if case.error),
        "failed": [],
    }


def test_the_python_sdk_client_accepts_every_refusal_as_the_http_surface_answers_it(conformance: Conformance) -> None:
    refusals = [case for case in conformance.cases if case.error]

    async def main() -> list[tuple[Case, dict[str, Any]]]:
        seen: list[tuple[Case, dict[str, Any]]] = []
        for caller in ("writer", "reader"):
            headers = {"Authorization": f"Bearer {conformance.tokens[caller]}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as http_client,
                Client(streamable_http_client(f"{conformance.api}/mcp", http_client=http_client)) as client,
            ):
                await client.list_tools()  # the output schemas the client checks results against
                for case in (case for case in refusals if case.caller == caller):
                    seen.append((case, refusal_of(await client.call_tool(case.tool, case.arguments))))
        return seen

    seen = anyio.run(main)
    assert len(seen) == len(refusals)
    for case, refusal in seen:
        assert case.refusal is not None
        assert same_refusal(refusal, case.refusal), (case.label, refusal, case.refusal)


def test_the_python_sdk_client_checks_each_result_against_its_schema(conformance: Conformance) -> None:
    # Read-only results only: the writing cases are the TypeScript test's, in their order.
    readers = [case for case in conformance.cases if not case.error and TOOLS_READ_ONLY[case.tool]]

    async def main() -> list[dict[str, Any]]:
        headers = {"Authorization": f"Bearer {conformance.tokens['writer']}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http_client,
            Client(streamable_http_client(f"{conformance.api}/mcp", http_client=http_client)) as client,
        ):
            await client.list_tools()
            return [result_of(await client.call_tool(case.tool, case.arguments)) for case in readers]

    results = anyio.run(main)
    for case, result in zip(readers, results, strict=True):
        assert {path: dotted(result, path) for path in case.expect} == case.expect, case.label


TOOLS_READ_ONLY = {tool.name: tool.read_only for tool in TOOLS}


def dotted(value: Any, path: str) -> Any:
    for key in path.split("."):
        value = value[key]
    return value


def same_refusal(seen: dict[str, Any], expected: dict[str, Any]) -> bool:
    """The same refusal; a limit's sentence up to the time left until it resets (which moves with the clock)."""
    if RESETS_AT in expected["message"]:
        keep = ("message", "retryAfterSeconds")
        prefix = expected["message"].split(RESETS_AT)[0]
        return seen["message"].startswith(prefix) and {k: v for k, v in seen.items() if k not in keep} == {
            k: v for k, v in expected.items() if k not in keep
        }
    return seen == expected
