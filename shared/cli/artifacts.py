"""`quire artifact ...`, `quire convert` and `quire pdf ...`: artifacts and exports from the command line, through
the API like any other caller."""

import argparse
import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

from shared.cli.common import add_api_options, caller_client, collections_client, print_result, reports_api_errors
from shared.domain.auth import Role
from shared.domain.exports import ExportFormat


def _read_markdown(source: str) -> str:
    return sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")


def _version_line(version: dict[str, Any]) -> str:
    provenance = version["provenance"]
    restored = f", restored from v{provenance['restoredFrom']}" if provenance.get("restoredFrom") else ""
    sources = len(provenance["sources"])
    return (
        f"v{version['version']:<4} {version['createdAt'][:19]}  {version['createdBy']:<12} {version['blockCount']:>6}"
        f" blocks  {provenance['producer']}{restored}  ({sources} source{'s' if sources != 1 else ''})"
    )


def _print_version_result(args: argparse.Namespace, answer: dict[str, Any]) -> None:
    print_result(args, answer, _print_latest)


def _print_latest(answer: dict[str, Any]) -> None:
    print(f"{answer['artifactId']}  {answer['name']}  latest v{answer['latestVersion']}  ({answer['collectionId']})")
    print(_version_line(answer["version"]))


def _latest(client: Any, artifact_id: str) -> int:
    return int(client.call("GET", f"/v1/artifacts/{artifact_id}/versions?limit=1")["latestVersion"])


def _citations(args: argparse.Namespace) -> list[dict[str, str]]:
    return [{"chunkId": chunk_id} for chunk_id in (args.cite or [])]


def _sources(args: argparse.Namespace) -> list[dict[str, str]]:
    return [{"fileId": file_id} for file_id in (args.source or [])]


@reports_api_errors("artifact new")
def cmd_new(args: argparse.Namespace) -> int:
    body = {
        "collectionId": args.collection,
        "name": args.name,
        "markdown": _read_markdown(args.markdown),
        "citations": _citations(args),
        "sources": _sources(args),
    }
    answer = collections_client(args, [args.collection], Role.WRITE).call("POST", "/v1/artifacts", body)
    _print_version_result(args, answer)
    return 0


@reports_api_errors("artifact show: {artifact_id}")
def cmd_show(args: argparse.Namespace) -> int:
    client = caller_client(args)
    cursor: str | None = None
    query = f"version={args.version}&" if args.version else ""
    while True:
        answer = client.call("GET", f"/v1/artifacts/{args.artifact_id}?{query}cursor={cursor or 0}")
        print_result(args, answer, partial(_print_window, first=cursor is None))
        cursor = answer["content"]["nextCursor"]
        if not cursor:
            break
    if not args.json:
        for note in answer["content"]["citations"]:
            cited = note["citation"]
            print(f"[{note['number']}] {cited['filename']} (version {cited['versionId']}): {cited['excerpt'][:80]}")
    return 0


def _print_window(answer: dict[str, Any], *, first: bool) -> None:
    if first:
        print(f"# {answer['name']} (v{answer['version']['version']} of {answer['latestVersion']})\n")
    print(answer["content"]["markdown"], end="")


@reports_api_errors("artifact history: {artifact_id}")
def cmd_history(args: argparse.Namespace) -> int:
    client = caller_client(args)
    versions: list[dict[str, Any]] = []
    cursor = ""
    while True:
        page = client.call("GET", f"/v1/artifacts/{args.artifact_id}/versions?cursor={cursor}")
        versions.extend(page["versions"])
        cursor = page["nextCursor"] or ""
        if not cursor:
            break
    print_result(args, versions, _print_versions)
    return 0


def _print_versions(versions: list[dict[str, Any]]) -> None:
    for version in versions:
        print(_version_line(version))


@reports_api_errors("artifact restore: {artifact_id}")
def cmd_restore(args: argparse.Namespace) -> int:
    client = caller_client(args, Role.WRITE)
    latest = args.expected or client.call("GET", f"/v1/artifacts/{args.artifact_id}/versions?limit=1")["latestVersion"]
    answer = client.call(
        "POST",
        f"/v1/artifacts/{args.artifact_id}/restore",
        {"version": args.version, "expectedLatestVersion": latest},
    )
    _print_version_result(args, answer)
    return 0


@reports_api_errors("artifact update: {artifact_id}")
def cmd_update(args: argparse.Namespace) -> int:
    """A whole new version from Markdown (an edit by proposal is `quire artifact edit`)."""

    client = caller_client(args, Role.WRITE)
    latest = args.expected or client.call("GET", f"/v1/artifacts/{args.artifact_id}/versions?limit=1")["latestVersion"]
    answer = client.call(
        "POST",
        f"/v1/artifacts/{args.artifact_id}/versions",
        {
            "expectedLatestVersion": latest,
            "markdown": _read_markdown(args.markdown),
            "citations": _citations(args),
            "sources": _sources(args),
        },
    )
    _print_version_result(args, answer)
    return 0


def wait_for_export(client: Any, export: dict[str, Any], *, timeout: float = 600) -> dict[str, Any]:
    """Poll the export until it is rendered or failed, drawing a progress line on stderr meanwhile."""
    import time

    started = time.monotonic()
    frames = "|/-\\"
    tick = 0
    while export["state"] == "pending":
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"the render did not finish in {timeout:g} seconds; see quire reconcile")
        if sys.stderr.isatty():
            sys.stderr.write(f"\r  rendering {export['format']} {frames[tick % 4]} {time.monotonic() - started:5.1f}s")
            sys.stderr.flush()
        tick += 1
        time.sleep(0.25)
        export = client.call("GET", f"/v1/exports/{export['exportId']}")
    if sys.stderr.isatty():
        sys.stderr.write("\r" + " " * 40 + "\r")
    return export


def save_export(client: Any, export: dict[str, Any], out: str | None) -> Path:
    """Download a rendered export through its signed URL into `out` (a file or a directory)."""
    import urllib.request

    name = client.call("GET", f"/v1/files/{export['fileId']}")["filename"]
    target = Path(out) if out else Path(name)
    if target.is_dir():
        target = target / name
    with urllib.request.urlopen(export["url"], timeout=120) as response:  # noqa: S310 - our own signed URL
        target.write_bytes(response.read())
    return target


def _export_line(export: dict[str, Any], saved: Path | None) -> str:
    if export["state"] == "failed" or not export.get("url"):
        return f"{export['exportId']}  {export['state']}  {export['failure'] or ''}"
    pages = f", {export['pageCount']} pages" if export.get("pageCount") else ""
    missing = export.get("unsupportedCharacters") or []
    note = f"  [{len(missing)} characters the font lacks were left out]" if missing else ""
    return f"{export['exportId']}  rendered {export['format']} ({export['byteSize']} bytes{pages}) → {saved}{note}"


def _finish_export(args: argparse.Namespace, client: Any, claimed: dict[str, Any]) -> int:
    from shared.local.api_client import ApiError

    try:
        export = wait_for_export(client, claimed)
        saved = save_export(client, export, args.out) if export["state"] == "rendered" and export.get("url") else None
    except (ApiError, TimeoutError, OSError) as error:
        print(f"quire: export {claimed['exportId']}: {error}", file=sys.stderr)
        return 1
    shown = {**export, "savedTo": str(saved) if saved else None}
    print_result(args, shown, lambda shown: print(_export_line(shown, saved)))
    return 0 if saved else 1


@reports_api_errors("artifact export: {artifact_id}")
def cmd_export(args: argparse.Namespace) -> int:
    client = caller_client(args, Role.WRITE)
    version = args.version or _latest(client, args.artifact_id)
    claimed = client.call(
        "POST", f"/v1/artifacts/{args.artifact_id}/versions/{version}/exports", {"format": args.format}
    )
    return _finish_export(args, client, claimed)


@reports_api_errors("convert: {file_id}")
def cmd_convert(args: argparse.Namespace) -> int:
    client = caller_client(args, Role.WRITE)
    body: dict[str, Any] = {"format": args.to}
    if args.version_id:
        body["versionId"] = args.version_id
    claimed = client.call("POST", f"/v1/files/{args.file_id}/conversions", body)
    return _finish_export(args, client, claimed)


@reports_api_errors("artifact edit: {artifact_id}")
def cmd_edit(args: argparse.Namespace) -> int:
    """Apply an edit proposal (a JSON list of operations, or {"operations": [...]}) to a version."""

    client = caller_client(args, Role.WRITE)
    try:
        raw = json.loads(_read_markdown(args.operations))
    except (OSError, ValueError) as error:
        print(f"quire artifact edit: {args.operations}: {error}", file=sys.stderr)
        return 2
    operations = raw["operations"] if isinstance(raw, dict) else raw
    base = args.base or _latest(client, args.artifact_id)
    answer = client.call(
        "POST",
        f"/v1/artifacts/{args.artifact_id}/proposals",
        {"baseVersion": base, "operations": operations, "dryRun": args.dry_run},
    )
    print_result(args, answer, partial(_print_changes, base=base))
    return 0


def _print_changes(answer: dict[str, Any], *, base: int) -> None:
    for change in answer["changes"]:
        block = change.get("after") or change.get("before") or {}
        text = (change.get("textAfter") or block.get("text") or ("[table]" if block.get("table") else ""))[:70]
        print(f"  {change['op']:<15} {change['blockId']:<6} {text}")
    if answer["dryRun"]:
        print(f"dry run: version {base} would become {answer['blockCount']} blocks; nothing was written")
    else:
        print(f"v{answer['version']} written (proposal {answer['proposalId']}), {answer['blockCount']} blocks")


def _pdf_source(text: str) -> dict[str, str]:
    """FILE_ID or FILE_ID:PAGES (pages like 1-3,5)."""
    file_id, _, pages = text.partition(":")
    return {"fileId": file_id, **({"pages": pages} if pages else {})}


@reports_api_errors("pdf {tool}")
def cmd_pdf(args: argparse.Namespace) -> int:
    client = caller_client(args, Role.WRITE)
    if args.tool == "merge":
        body: dict[str, Any] = {"sources": [_pdf_source(source) for source in args.sources]}
    elif args.tool == "compose":
        body = {"pages": [_pdf_source(source) for source in args.sources]}
    elif args.tool == "split":
        body = {"fileId": args.file_id, "ranges": args.ranges}
    else:
        body = {"fileId": args.file_id, "text": args.text, "opacity": args.opacity}
    if getattr(args, "name", None):
        body["name"] = args.name
    answer = client.call("POST", f"/v1/pdf/{args.tool}", body)
    failed = 0
    for claimed in answer["exports"]:
        failed += _finish_export(args, client, claimed)
    return 1 if failed else 0


def add_artifact_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    artifact = commands.add_parser("artifact", help="named, versioned content: new, show, history, restore")
    actions = artifact.add_subparsers(dest="action", required=True)

    def content(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("markdown", help="a Markdown file, or - for standard input")
        parser.add_argument("--cite", action="append", help="a chunk id (from search) that [n] refers to, in order")
        parser.add_argument("--source", action="append", help="a file id the content was derived from")

    new = actions.add_parser("new", help="create an artifact from Markdown")
    new.add_argument("name")
    content(new)
    new.add_argument("--collection", default="default", help="the collection it belongs to (default: default)")
    add_api_options(new, collections=False)
    new.set_defaults(run=cmd_new)
    show = actions.add_parser("show", help="print a version as Markdown, with its citations")
    show.add_argument("artifact_id")
    show.add_argument("--version", type=int, help="a version number (default: the latest)")
    add_api_options(show)
    show.set_defaults(run=cmd_show)
    history = actions.add_parser("history", help="every version with its provenance")
    history.add_argument("artifact_id")
    add_api_options(history)
    history.set_defaults(run=cmd_history)
    update = actions.add_parser("update", help="a new version from Markdown")
    update.add_argument("artifact_id")
    content(update)
    update.add_argument("--expected", type=int, help="the version you edited (default: the latest)")
    add_api_options(update)
    update.set_defaults(run=cmd_update)
    restore = actions.add_parser("restore", help="a new version with an earlier version's content")
    restore.add_argument("artifact_id")
    restore.add_argument("version", type=int)
    restore.add_argument("--expected", type=int, help="the latest version you saw (default: the latest now)")
    add_api_options(restore)
    restore.set_defaults(run=cmd_restore)
    edit = actions.add_parser("edit", help="apply an edit proposal (JSON operations on block ids) to a version")
    edit.add_argument("artifact_id")
    edit.add_argument("operations", help='a JSON file (or -): [{"op": "rename_heading", "blockId": "b1", ...}]')
    edit.add_argument("--base", type=int, help="the version the operations were written against (default: latest)")
    edit.add_argument("--dry-run", action="store_true", help="show the changes, write nothing")
    add_api_options(edit)
    edit.set_defaults(run=cmd_edit)
    _add_export_commands(commands, actions)
    _add_pdf_commands(commands)


def _add_pdf_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    pdf = commands.add_parser("pdf", help="merge, split, watermark or compose stored PDFs into new files")
    tools = pdf.add_subparsers(dest="tool", required=True)
    merge = tools.add_parser("merge", help="several PDFs into one, an outline entry per source")
    merge.add_argument("sources", nargs="+", help="FILE_ID or FILE_ID:PAGES, in order")
    compose = tools.add_parser("compose", help="pages of several PDFs in a given order")
    compose.add_argument("sources", nargs="+", help="FILE_ID:PAGES (pages like 1-3,5), in order")
    for parser in (merge, compose):
        parser.add_argument("--name", help="the new file's name (without .pdf)")
    split = tools.add_parser("split", help="page ranges of one PDF as new files")
    split.add_argument("file_id")
    split.add_argument("ranges", nargs="+", help="page ranges like 1-3 5 7-")
    watermark = tools.add_parser("watermark", help="text across every page (upright on rotated pages)")
    watermark.add_argument("file_id")
    watermark.add_argument("text")
    watermark.add_argument("--opacity", type=float, default=0.25)
    for parser in (merge, compose, split, watermark):
        parser.add_argument("--out", help="a directory to save the results in (default: here)")
        add_api_options(parser)
        parser.set_defaults(run=cmd_pdf)


def _add_export_commands(
    commands: "argparse._SubParsersAction[argparse.ArgumentParser]",
    actions: "argparse._SubParsersAction[argparse.ArgumentParser]",
) -> None:
    export = actions.add_parser("export", help="render a version as PDF, DOCX, HTML or Markdown and download it")
    export.add_argument("artifact_id")
    export.add_argument("--version", type=int, help="the version to export (default: the latest)")
    export.add_argument("--format", choices=[f.value for f in ExportFormat], default="pdf")
    export.add_argument("--out", help="where to save it (a file or a directory; default: its name, here)")
    add_api_options(export)
    export.set_defaults(run=cmd_export)
    convert = commands.add_parser("convert", help="render an uploaded file's document as PDF, DOCX, HTML or Markdown")
    convert.add_argument("file_id")
    convert.add_argument("--to", choices=[f.value for f in ExportFormat], required=True)
    convert.add_argument("--version-id", help="a version of the file (default: the current one)")
    convert.add_argument("--out", help="where to save it (a file or a directory; default: its name, here)")
    add_api_options(convert)
    convert.set_defaults(run=cmd_convert)
