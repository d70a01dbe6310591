"""`quire artifact ...`: artifacts from the command line, through the API like any other caller."""

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from shared import cli


def _read_markdown(source: str) -> str:
    return sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")


def _client(args: argparse.Namespace) -> Any:
    return cli._api(args, args.collections.split(","))


def _version_line(version: dict[str, Any]) -> str:
    provenance = version["provenance"]
    restored = f", restored from v{provenance['restoredFrom']}" if provenance.get("restoredFrom") else ""
    sources = len(provenance["sources"])
    return (
        f"v{version['version']:<4} {version['createdAt'][:19]}  {version['createdBy']:<12} {version['blockCount']:>6}"
        f" blocks  {provenance['producer']}{restored}  ({sources} source{'s' if sources != 1 else ''})"
    )


def _report(args: argparse.Namespace, answer: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(answer, indent=2))
        return
    print(f"{answer['artifactId']}  {answer['name']}  latest v{answer['latestVersion']}  ({answer['collectionId']})")
    print(_version_line(answer["version"]))


def _latest(client: Any, artifact_id: str) -> int:
    return int(client.call("GET", f"/v1/artifacts/{artifact_id}/versions?limit=1")["latestVersion"])


def _citations(args: argparse.Namespace) -> list[dict[str, str]]:
    return [{"chunkId": chunk_id} for chunk_id in (args.cite or [])]


def _sources(args: argparse.Namespace) -> list[dict[str, str]]:
    return [{"fileId": file_id} for file_id in (args.source or [])]


def cmd_new(args: argparse.Namespace) -> int:
    from shared.local.api_client import ApiError

    body = {
        "collectionId": args.collection,
        "name": args.name,
        "markdown": _read_markdown(args.markdown),
        "citations": _citations(args),
        "sources": _sources(args),
    }
    try:
        answer = cli._api(args, [args.collection]).call("POST", "/v1/artifacts", body)
    except ApiError as error:
        print(f"quire artifact new: {error}", file=sys.stderr)
        return 1
    _report(args, answer)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from shared.local.api_client import ApiError

    client = _client(args)
    cursor: str | None = None
    query = f"version={args.version}&" if args.version else ""
    while True:
        try:
            answer = client.call("GET", f"/v1/artifacts/{args.artifact_id}?{query}cursor={cursor or 0}")
        except ApiError as error:
            print(f"quire artifact show: {args.artifact_id}: {error}", file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps(answer, indent=2))
        else:
            if cursor is None:
                print(f"# {answer['name']} (v{answer['version']['version']} of {answer['latestVersion']})\n")
            print(answer["content"]["markdown"], end="")
        cursor = answer["content"]["nextCursor"]
        if not cursor:
            break
    if not args.json:
        for note in answer["content"]["citations"]:
            cited = note["citation"]
            print(f"[{note['number']}] {cited['filename']} (version {cited['versionId']}): {cited['excerpt'][:80]}")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from shared.local.api_client import ApiError

    client = _client(args)
    versions: list[dict[str, Any]] = []
    cursor = ""
    try:
        while True:
            page = client.call("GET", f"/v1/artifacts/{args.artifact_id}/versions?cursor={cursor}")
            versions.extend(page["versions"])
            cursor = page["nextCursor"] or ""
            if not cursor:
                break
    except ApiError as error:
        print(f"quire artifact history: {args.artifact_id}: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(versions, indent=2))
    else:
        for version in versions:
            print(_version_line(version))
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from shared.local.api_client import ApiError

    client = _client(args)
    try:
        latest = (
            args.expected or client.call("GET", f"/v1/artifacts/{args.artifact_id}/versions?limit=1")["latestVersion"]
        )
        answer = client.call(
            "POST",
            f"/v1/artifacts/{args.artifact_id}/restore",
            {"version": args.version, "expectedLatestVersion": latest},
        )
    except ApiError as error:
        print(f"quire artifact restore: {args.artifact_id}: {error}", file=sys.stderr)
        return 1
    _report(args, answer)
    return 0


def cmd_update(args: argparse.Namespace) -> int:
    """A whole new version from Markdown (an edit by proposal is `quire artifact edit`)."""
    from shared.local.api_client import ApiError

    client = _client(args)
    try:
        latest = (
            args.expected or client.call("GET", f"/v1/artifacts/{args.artifact_id}/versions?limit=1")["latestVersion"]
        )
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
    except ApiError as error:
        print(f"quire artifact update: {args.artifact_id}: {error}", file=sys.stderr)
        return 1
    _report(args, answer)
    return 0


def add_artifact_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    artifact = commands.add_parser("artifact", help="named, versioned content: new, show, history, restore")
    actions = artifact.add_subparsers(dest="action", required=True)

    def caller(parser: argparse.ArgumentParser, *, collections: bool = True) -> None:
        if collections:
            parser.add_argument(
                "--collections", default="default", help="comma-separated collections the caller may read"
            )
        parser.add_argument("--json", action="store_true", help="the API's answer as it is")
        cli._caller_options(parser)

    def content(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("markdown", help="a Markdown file, or - for standard input")
        parser.add_argument("--cite", action="append", help="a chunk id (from search) that [n] refers to, in order")
        parser.add_argument("--source", action="append", help="a file id the content was derived from")

    new = actions.add_parser("new", help="create an artifact from Markdown")
    new.add_argument("name")
    content(new)
    new.add_argument("--collection", default="default", help="the collection it belongs to (default: default)")
    caller(new, collections=False)
    new.set_defaults(run=cmd_new)
    show = actions.add_parser("show", help="print a version as Markdown, with its citations")
    show.add_argument("artifact_id")
    show.add_argument("--version", type=int, help="a version number (default: the latest)")
    caller(show)
    show.set_defaults(run=cmd_show)
    history = actions.add_parser("history", help="every version with its provenance")
    history.add_argument("artifact_id")
    caller(history)
    history.set_defaults(run=cmd_history)
    update = actions.add_parser("update", help="a new version from Markdown")
    update.add_argument("artifact_id")
    content(update)
    update.add_argument("--expected", type=int, help="the version you edited (default: the latest)")
    caller(update)
    update.set_defaults(run=cmd_update)
    restore = actions.add_parser("restore", help="a new version with an earlier version's content")
    restore.add_argument("artifact_id")
    restore.add_argument("version", type=int)
    restore.add_argument("--expected", type=int, help="the latest version you saw (default: the latest now)")
    caller(restore)
    restore.set_defaults(run=cmd_restore)
