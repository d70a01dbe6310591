"""The demo's output half: a cited report artifact built from its search results, edited with a proposal,
exported to PDF and DOCX, and each export parsed back with Quire's own extractors."""

import time
import urllib.request
from typing import Any

from shared.adapters.parsers.docx import DocxParser
from shared.adapters.parsers.pdf import PdfParser
from shared.domain.document import BlockKind, ExtractedDocument, ExtractionLimits
from shared.local.api_client import ApiClient, ApiError

MAX_FINDINGS = 5


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "/")


def report_markdown(findings: list[tuple[str, dict[str, Any]]]) -> str:
    """Each finding a sentence citing its hit as [n], and a table of where each one came from."""
    lines = ["# Demo findings", "", "What the demo's searches found, each with its source.", "", "## Findings", ""]
    for number, (query, hit) in enumerate(findings, start=1):
        excerpt = _cell(hit["excerpt"])[:160].replace("[", "(").replace("]", ")")
        lines.append(f"- {_cell(query)}: {excerpt} [{number}]")
    lines += ["", "## Sources", "", "| Query | File | Kind |", "| --- | --- | --- |"]
    for query, hit in findings:
        citation = hit["citation"]
        lines.append(f"| {_cell(query)[:40]} | {_cell(citation['filename'])} | {citation['kind']} |")
    return "\n".join(lines) + "\n"


def _wait(client: ApiClient, export: dict[str, Any], timeout: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while export["state"] == "pending" and time.monotonic() < deadline:
        time.sleep(0.25)
        export = client.call("GET", f"/v1/exports/{export['exportId']}")
    return export


def _parsed_back(fmt: str, content: bytes) -> ExtractedDocument | None:
    parser = PdfParser() if fmt == "pdf" else DocxParser()
    document = parser.parse(content, ExtractionLimits())
    return document if isinstance(document, ExtractedDocument) else None


def run_report(client: ApiClient, collection_id: str, results: list[tuple[str, dict[str, Any]]]) -> int:
    findings = [(query, result["hits"][0]) for query, result in results if result.get("outcome") == "found"]
    findings = findings[:MAX_FINDINGS]
    if not findings:
        print("\nNo search found anything, so there is no report to write.")
        return 0
    print("\nA cited report from those results (artifact, edit proposal, PDF and DOCX exports, parsed back):")
    try:
        made = client.call(
            "POST",
            "/v1/artifacts",
            {
                "collectionId": collection_id,
                "name": "Demo findings",
                "markdown": report_markdown(findings),
                "citations": [{"chunkId": hit["chunkId"]} for _, hit in findings],
            },
        )
        provenance = made["version"]["provenance"]
        print(
            f"  artifact {made['artifactId']} v1: {made['version']['blockCount']} blocks,"
            f" {len(made['content']['citations'])} citations from {len(provenance['sources'])} file versions"
        )
        edited = client.call(
            "POST",
            f"/v1/artifacts/{made['artifactId']}/proposals",
            {
                "baseVersion": 1,
                "operations": [
                    {"op": "rename_heading", "blockId": "b1", "text": "Demo findings (reviewed)"},
                    {"op": "insert", "after": "b2", "markdown": "Reviewed by the demo's edit proposal."},
                ],
            },
        )
        changes = ", ".join(f"{change['op']} {change['blockId']}" for change in edited["changes"])
        print(f"  proposal {edited['proposalId']} → v{edited['version']}: {changes}")
        failed = 0
        for fmt in ("pdf", "docx"):
            claimed = client.call(
                "POST", f"/v1/artifacts/{made['artifactId']}/versions/{edited['version']}/exports", {"format": fmt}
            )
            failed += _show_export(client, fmt, _wait(client, claimed), len(findings))
    except ApiError as error:
        print(f"  the report failed: {error}")
        return 1
    return 1 if failed else 0


def _show_export(client: ApiClient, fmt: str, export: dict[str, Any], notes: int) -> int:
    if export["state"] != "rendered" or not export.get("url"):
        print(f"  {fmt}: {export['state']}: {export.get('failure')}")
        return 1
    with urllib.request.urlopen(export["url"], timeout=60) as response:  # noqa: S310 - the stack's signed URL
        content = response.read()
    pages = f", {export['pageCount']} pages" if export.get("pageCount") else ""
    print(f"  {fmt.upper()}: {len(content)} bytes{pages}, rendered once as file {export['fileId']}")
    back = _parsed_back(fmt, content)
    if back is None:
        print(f"    parsed back: {fmt} could not be read back")
        return 1
    headings = [block.text for block in back.blocks if block.kind is BlockKind.HEADING]
    rows = sum(len(block.table.rows) for block in back.blocks if block.table is not None)
    text = " ".join(block.text for block in back.blocks)
    found_notes = sum(f"[{number}]" in text for number in range(1, notes + 1))
    print(f"    parsed back: headings {headings}")
    print(f"    parsed back: {rows} table rows; citation notes [1]..[{notes}] found: {found_notes} of {notes}")
    return 0
