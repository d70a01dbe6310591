"""The index commands: search, ask, coverage, reindex, scan and usage."""

import argparse
import time
from typing import Any

from shared.cli.common import (
    add_caller_options,
    add_collections_option,
    caller_client,
    print_result,
    reports_api_errors,
)
from shared.cli.files import file_line
from shared.cli.metadata import add_where_option
from shared.domain.auth import Role


def add_index_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    search = commands.add_parser("search", help="hybrid search with citations")
    search.add_argument("query")
    search.add_argument("--mode", choices=["hybrid", "keyword", "semantic"], default="hybrid")
    search.add_argument("--limit", type=int, default=5)
    search.add_argument("--json", action="store_true", help="the API's answer as it is")
    add_collections_option(search)
    search.add_argument("--in", dest="in_collections", help="only these collections (comma-separated)")
    add_where_option(search, "only hits from files")
    add_caller_options(search)
    search.set_defaults(run=cmd_search)

    ask = commands.add_parser("ask", help="a grounded answer: every claim cited from your documents")
    ask.add_argument("question")
    ask.add_argument("--mode", choices=["hybrid", "keyword", "semantic"], default="hybrid")
    ask.add_argument("--json", action="store_true", help="the API's answer as it is")
    add_collections_option(ask)
    ask.add_argument("--in", dest="in_collections", help="only these collections (comma-separated)")
    add_where_option(ask, "an answer only from files")
    add_caller_options(ask)
    ask.set_defaults(run=cmd_ask)
    coverage = commands.add_parser("coverage", help="files, indexed, failed, stale and lexical-only per collection")
    add_collections_option(coverage)
    coverage.add_argument("--json", action="store_true")
    add_caller_options(coverage)
    coverage.set_defaults(run=cmd_coverage)
    reindex = commands.add_parser("reindex", help="re-embed what another model (or none) embedded, in batches")
    add_collections_option(reindex)
    reindex.add_argument("--batch", type=int, default=20, help="versions queued per request (at most 100)")
    reindex.add_argument(
        "--wait", type=float, default=600, help="seconds to wait for the queued re-indexes to finish (default 600)"
    )
    add_caller_options(reindex)
    reindex.set_defaults(run=cmd_reindex)
    scan = commands.add_parser("scan", help="OCR every page of a PDF or image again, and wait until indexed")
    scan.add_argument("file_id")
    add_collections_option(scan)
    add_caller_options(scan)
    scan.set_defaults(run=cmd_scan)
    usage = commands.add_parser("usage", help="metered OCR, vision and embedding calls (default: this month)")
    usage.add_argument("--since", help="ISO 8601 with a time zone, e.g. 2026-11-01T00:00:00Z")
    usage.add_argument("--until", help="ISO 8601 with a time zone")
    add_collections_option(usage)
    usage.add_argument("--json", action="store_true")
    add_caller_options(usage)
    usage.set_defaults(run=cmd_usage)


@reports_api_errors("search")
def cmd_search(args: argparse.Namespace) -> int:
    from shared.local.search_output import print_search_result

    client = caller_client(args)
    body: dict[str, Any] = {"query": args.query, "limit": args.limit, "mode": args.mode}
    if args.in_collections:
        body["filters"] = {"collections": args.in_collections.split(",")}
    if args.where is not None:
        body["filter"] = args.where
    result = client.call("POST", "/v1/search", body)
    print_result(args, result, lambda result: print_search_result(args.query, result))
    return 0


@reports_api_errors("ask")
def cmd_ask(args: argparse.Namespace) -> int:
    from shared.local.search_output import print_answer

    client = caller_client(args)
    body: dict[str, Any] = {"question": args.question, "mode": args.mode}
    if args.in_collections:
        body["filters"] = {"collections": args.in_collections.split(",")}
    if args.where is not None:
        body["filter"] = args.where
    result = client.call("POST", "/v1/answer", body)
    print_result(args, result, print_answer)
    return 0


@reports_api_errors("scan: {file_id}")
def cmd_scan(args: argparse.Namespace) -> int:
    client = caller_client(args, Role.WRITE)
    started = client.call("POST", f"/v1/files/{args.file_id}/scan")
    print(f"{args.file_id}: OCR of every page queued (attempt {started['attempt']}, {started['engine']})")
    record = client.wait_until_processed(args.file_id)
    print(file_line(record))
    return 0 if record["current"]["processingState"] == "indexed" else 1


def cmd_usage(args: argparse.Namespace) -> int:
    client = caller_client(args)
    query = "&".join(f"{name}={value}" for name, value in (("since", args.since), ("until", args.until)) if value)
    report = client.call("GET", "/v1/usage" + (f"?{query}" if query else ""))
    print_result(args, report, _print_usage)
    return 0


def _print_usage(report: dict[str, Any]) -> None:
    print(f"usage from {report['since']} to {report['until']}")
    print(f"{'step':<8} {'operation':<30} {'model':<40} {'priced':<6} {'calls':>6} {'pages':>6} {'tokens in/out':>15}")
    for line in report["lines"]:
        tokens = f"{line['inputTokens']}/{line['outputTokens']}"
        priced = "yes" if line["priced"] else "no"
        print(
            f"{line['step']:<8} {line['operation']:<30} {(line['model'] or '-'):<40} {priced:<6}"
            f" {line['calls']:>6} {line['pages']:>6} {tokens:>15}"
        )


def cmd_coverage(args: argparse.Namespace) -> int:
    client = caller_client(args)
    report = client.call("GET", "/v1/coverage")
    print_result(args, report, _print_coverage)
    return 0


def _print_coverage(report: dict[str, Any]) -> None:
    available = "" if report["embedderAvailable"] else " (unavailable)"
    print(f"embedding model: {report['embeddingModel']}{available}")
    print(f"{'collection':<20} {'files':>6} {'indexed':>8} {'failed':>7} {'working':>8} {'stale':>6} {'lexical':>8}")
    for entry in report["collections"]:
        print(
            f"{entry['collectionId']:<20} {entry['files']:>6} {entry['indexed']:>8} {entry['failed']:>7}"
            f" {entry['inProgress']:>8} {entry['stale']:>6} {entry['lexicalOnly']:>8}"
        )


@reports_api_errors("reindex")
def cmd_reindex(args: argparse.Namespace) -> int:
    client = caller_client(args, Role.ADMIN)
    total = 0
    remaining: int | None = None
    while True:
        batch = client.call("POST", f"/v1/reindex?limit={args.batch}")
        total += batch["queued"] + batch["dropped"]
        print(
            f"queued {batch['queued']}, dropped {batch['dropped']}, skipped {batch['skipped']};"
            f" {batch['remaining']} remaining ({batch['embeddingModel']})"
        )
        # Stop when done, or when a batch did not shrink the work (what remains cannot be re-indexed now).
        if batch["remaining"] == 0 or (remaining is not None and batch["remaining"] >= remaining):
            break
        remaining = batch["remaining"]
    # The re-indexes run in the stack's worker: wait until none is in progress, so "done" means done.
    deadline = time.monotonic() + args.wait
    while (working := sum(entry["inProgress"] for entry in client.call("GET", "/v1/coverage")["collections"])) > 0:
        if time.monotonic() > deadline:
            print(f"{working} versions are still being re-indexed: `quire coverage` shows when they are done")
            return 1
        time.sleep(1)
    print(f"done: {total} versions re-indexed or dropped")
    return 0
