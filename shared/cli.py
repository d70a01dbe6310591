"""`quire`: the command line for the local stack (and, later, a deployed one)."""

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from shared.domain.auth import Role, with_role
from shared.local.paths import StackPaths

if TYPE_CHECKING:
    from shared.local.api_client import ApiClient

Answer = TypeVar("Answer")


def _print_answer(args: argparse.Namespace, answer: Answer, as_text: Callable[[Answer], object]) -> None:
    """With --json the answer as indented JSON (as the API gave it), else as `as_text` prints it."""
    if args.json:
        # default=str: the stack's status report holds paths.
        print(json.dumps(answer, indent=2, default=str))
    else:
        as_text(answer)


def _print_status(report: dict[str, Any]) -> None:
    def line(name: str, ok: bool, detail: str) -> None:
        print(f"  {name:<14}{'ok ' if ok else 'no '} {detail}")

    print(f"Quire local stack: {'running' if report['running'] else 'not running'} ({report['stateDir']})")
    api = report["apiHealth"]
    line("api", api["ok"], report["api"] or api.get("reason", ""))
    database = report["database"]
    detail = (
        f"{database['url']}  PostgreSQL {database['postgres']}, pgvector {database['pgvector']}"
        if database.get("postgres")
        else database.get("reason", "")
    )
    line("database", database["ok"], detail)
    s3 = report["s3"]
    line("s3", s3["ok"], f"{s3['endpoint']} bucket {s3['bucket']}" if s3["ok"] else s3.get("reason", ""))
    for capability in ("embedder", "ocr", "vision", "transcription", "generator", "malware_scanning"):
        entry = report[capability]
        line(capability, entry["available"], entry["provider"] if entry["available"] else entry["reason"])


def _healthy(report: dict[str, Any]) -> bool:
    return bool(report["running"] and report["apiHealth"]["ok"] and report["database"]["ok"] and report["s3"]["ok"])


def cmd_up(args: argparse.Namespace) -> int:
    from shared.local.stack import StackError, up

    begun = time.monotonic()
    try:
        state, started = up(StackPaths.in_directory())
    except StackError as error:
        print(f"quire up failed: {error}", file=sys.stderr)
        return 1
    if started:
        print(f"Quire is up in {time.monotonic() - begun:.1f}s: API {state['api']}, S3 {state['s3']['endpoint']}")
    else:
        print(f"Quire is already running (pid {state['pid']}): API {state['api']}")
    print(f"Console: {console_address(state['api'], StackPaths.in_directory())}")
    return 0


def console_address(api: str, paths: StackPaths) -> str:
    """The console's address with the local sign-in key in its fragment (never sent to a server but ours, by the
    page itself): whoever opens it can sign in with one click, as whoever can read `.quire/` can mint tokens."""
    from shared.adapters.local.secret_files import read_or_create_secret

    key = read_or_create_secret(paths.console_sign_in_key).decode()
    return f"{api}/console/#sign-in={key}"


def cmd_down(args: argparse.Namespace) -> int:
    from shared.local.stack import down

    print("Quire is down." if down(StackPaths.in_directory()) else "Quire was not running.")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from shared.local.stack import status

    report = status(StackPaths.in_directory())
    _print_answer(args, report, _print_status)
    return 0 if _healthy(report) else 1


def cmd_token(args: argparse.Namespace) -> int:
    from shared.adapters.local.jwt_tokens import LocalTokenIssuer
    from shared.adapters.local.secret_files import read_or_create_secret
    from shared.domain.auth import Principal

    paths = StackPaths.in_directory()
    paths.ensure()
    try:
        principal = Principal(
            tenant_id=args.tenant,
            subject=args.sub,
            collections=_listed(args.collections),
            writable=_listed(args.write),
            administered=_listed(args.admin),
        )
    except ValueError as error:
        print(f"quire token: {error}", file=sys.stderr)
        return 2
    issuer = LocalTokenIssuer(read_or_create_secret(paths.jwt_secret))
    print(issuer.issue(principal, lifetime_seconds=args.ttl))
    return 0


def _listed(option: str) -> frozenset[str]:
    return frozenset(item.strip() for item in option.split(",") if item.strip())


def cmd_demo(args: argparse.Namespace) -> int:
    """Up, ingest a corpus of every format, search it with citations, down (if the demo started it)."""
    from pathlib import Path

    from shared.adapters.local.jwt_tokens import LocalTokenIssuer
    from shared.adapters.local.secret_files import read_or_create_secret
    from shared.local.api_client import ApiClient
    from shared.local.demo import DEMO_COLLECTION, DEMO_QUERIES, DEMO_QUESTIONS, DEMO_TENANT, run_demo
    from shared.local.stack import StackError, down, status, up

    paths = StackPaths.in_directory()
    begun = time.monotonic()
    try:
        state, started = up(paths)
    except StackError as error:
        print(f"quire demo: the stack did not start: {error}", file=sys.stderr)
        return 1
    print(f"Quire is up in {time.monotonic() - begun:.1f}s." if started else "Quire was already running.")
    try:
        report = status(paths)
        _print_status(report)
        if not _healthy(report):
            return 1
        if args.docs:
            documents = sorted(path for path in Path(args.docs).iterdir() if path.is_file())
            queries = args.query or None
            questions = list(args.query or ())
        else:
            from shared.local.demo_corpus import write_demo_corpus

            documents = write_demo_corpus(paths.root / "demo-documents")
            queries = args.query or list(DEMO_QUERIES)
            questions = list(args.query or DEMO_QUESTIONS)
        # The demo uploads and exports: the write role in its one collection, no more.
        principal = with_role(DEMO_TENANT, "demo", {DEMO_COLLECTION}, Role.WRITE)
        token = LocalTokenIssuer(read_or_create_secret(paths.jwt_secret)).issue(principal)
        return run_demo(ApiClient(state["api"], token), documents, queries, questions)
    finally:
        if started:
            down(paths)
            print("\nQuire is down (the demo started it, so the demo stopped it).")


def _api(args: argparse.Namespace, collections: list[str], role: Role) -> "ApiClient":
    """A client for the running local stack, with the caller's token: the one given, or one minted locally
    with the role the command needs (`role`) in `collections`."""
    import os

    from shared.adapters.local.jwt_tokens import LocalTokenIssuer
    from shared.adapters.local.secret_files import read_or_create_secret
    from shared.local.api_client import ApiClient
    from shared.local.stack import NOT_RUNNING, running_state

    paths = StackPaths.in_directory()
    state = running_state(paths)
    if state is None:
        raise SystemExit(f"quire: {NOT_RUNNING}")
    token = args.token or os.environ.get("QUIRE_TOKEN")
    if not token:
        principal = with_role(args.tenant, args.sub, collections, role)
        token = LocalTokenIssuer(read_or_create_secret(paths.jwt_secret)).issue(principal)
    return ApiClient(state["api"], token)


Command = Callable[[argparse.Namespace], int]


def reports_api_errors(what: str) -> Callable[[Command], Command]:
    """A command whose API refusals are printed as `quire <what>: <error>` (`what` is formatted with the
    command's arguments, e.g. "rm: {file_id}"), exiting 1."""

    def decorate(command: Command) -> Command:
        @functools.wraps(command)
        def run(args: argparse.Namespace) -> int:
            from shared.local.api_client import ApiError

            try:
                return command(args)
            except ApiError as error:
                print(f"quire {what.format(**vars(args))}: {error}", file=sys.stderr)
                return 1

        return run

    return decorate


def _client(args: argparse.Namespace, role: Role = Role.READ) -> "ApiClient":
    """`_api` for the collections the command's --collections names."""
    return _api(args, args.collections.split(","), role)


def _file_line(record: dict[str, Any]) -> str:
    current = record["current"]
    size = current["byteSize"] if current["byteSize"] is not None else current["declaredByteSize"]
    note = f"  ({current['rejectionReason']})" if current.get("rejectionReason") else ""
    ocr = current.get("ocr")
    if record.get("lowConfidence") and ocr:
        # The listing's marker: a reader choosing between files knows before opening one.
        note += f"  [LOW OCR CONFIDENCE {ocr['confidence']:.2f}: words may be misread]"
    elif ocr and ocr["state"] == "recognized":
        note += f"  [OCR: pages {_pages(ocr['pages'])}, confidence {ocr['confidence']:.2f}]"
    elif ocr:
        note += f"  [OCR {ocr['state']}]"
    return (
        f"{record['fileId']}  {current['state']:<8} {size:>10}  {record['collectionId']:<16} {record['filename']}{note}"
    )


def _print_file_lines(records: list[dict[str, Any]]) -> None:
    for record in records:
        print(_file_line(record))


def _pages(numbers: list[int]) -> str:
    shown = ",".join(str(number) for number in numbers[:10])
    return shown + (f" and {len(numbers) - 10} more" if len(numbers) > 10 else "")


def cmd_upload(args: argparse.Namespace) -> int:
    from pathlib import Path

    from shared.local.api_client import ApiError, progress_bar

    client = _api(args, [args.collection], Role.WRITE)
    failed = 0
    for name in args.paths:
        path = Path(name)
        try:
            ticket = client.upload(path, args.collection, progress_bar(path.name))
            record = client.wait_until_decided(ticket["fileId"])
        except (ApiError, OSError, ValueError) as error:
            print(f"quire upload: {path}: {error}", file=sys.stderr)
            failed += 1
            continue
        print(_file_line(record))
        failed += record["current"]["state"] != "stored"
    return 1 if failed else 0


def cmd_files(args: argparse.Namespace) -> int:
    client = _client(args)
    records: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = f"/v1/files?limit=100{'&cursor=' + cursor if cursor else ''}"
        page = client.call("GET", query)
        records.extend(page["files"])
        cursor = page["nextCursor"]
        if not cursor:
            break
    _print_answer(args, records, _print_file_lines)
    return 0


def cmd_read(args: argparse.Namespace) -> int:
    from shared.local.api_client import ApiError

    client = _client(args)
    cursor: str | None = None
    while True:
        path = f"/v1/files/{args.file_id}/document" + (f"?cursor={cursor}" if cursor else "")
        try:
            window = client.call("GET", path)
        except ApiError as error:
            body = error.body if isinstance(error.body, dict) else {}
            retry = " (trying again later may help)" if body.get("retryable") else ""
            print(f"quire read: {args.file_id}: {body.get('message', error)}{retry}", file=sys.stderr)
            return 1
        _print_answer(args, window, lambda window: print(window["markdown"], end=""))
        cursor = window["nextCursor"]
        if not cursor or not args.all:
            if cursor:
                print(f"\n[{window['totalBlocks'] - int(cursor)} more blocks: quire read {args.file_id} --all]")
            return 0


@reports_api_errors("rm: {file_id}")
def cmd_rm(args: argparse.Namespace) -> int:
    client = _client(args, Role.WRITE)
    client.call("DELETE", f"/v1/files/{args.file_id}")
    print(f"{args.file_id} deleting: gone from listings now; its bytes are swept by the next reconcile")
    return 0


@reports_api_errors("mv: {file_id}")
def cmd_mv(args: argparse.Namespace) -> int:
    # Moving takes the admin role in the collection the file is in and in the one it goes to.
    client = _api(args, [*args.collections.split(","), args.to], Role.ADMIN)
    moved = client.call("POST", f"/v1/files/{args.file_id}/move", {"collectionId": args.to})
    print(_file_line(moved))
    return 0


def cmd_reconcile(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from shared.bootstrap import Container
    from shared.local.stack import NOT_RUNNING, running_state, settings_for

    state = running_state(StackPaths.in_directory())
    if state is None:
        print(f"quire: {NOT_RUNNING}", file=sys.stderr)
        return 1
    container = Container(settings_for(state))
    report = container.reconciler.run(datetime.now(UTC)).as_dict()
    # Processing and renders asked for again run in this process locally: finish them before exiting.
    if "workflow" in container.__dict__ and hasattr(container.workflow, "drain"):
        container.workflow.drain()
    if report["rendersResubmitted"] and hasattr(container.render_queue, "drain"):
        container.render_queue.drain()
    container.database.close()
    _print_answer(args, report, _print_reconcile_report)
    return 0


def _print_reconcile_report(report: dict[str, Any]) -> None:
    print(
        f"deleted versions swept: {report['deletedVersions']};"
        f" uploads completed: {len(report['completedUploads'])};"
        f" pending without bytes: {len(report['pendingWithoutBytes'])};"
        f" processing asked again: {len(report['processingRequested'])};"
        f" stuck (attempts spent): {len(report['stuckVersions'])};"
        f" bytes without a row: {len(report['bytesWithoutRow'])};"
        f" rows without bytes: {len(report['rowsWithoutBytes'])};"
        f" stalled renders resubmitted: {report['rendersResubmitted']}"
    )


@reports_api_errors("search")
def cmd_search(args: argparse.Namespace) -> int:
    from shared.local.search_output import print_search_result

    client = _client(args)
    body: dict[str, Any] = {"query": args.query, "limit": args.limit, "mode": args.mode}
    if args.in_collections:
        body["filters"] = {"collections": args.in_collections.split(",")}
    result = client.call("POST", "/v1/search", body)
    _print_answer(args, result, lambda result: print_search_result(args.query, result))
    return 0


@reports_api_errors("ask")
def cmd_ask(args: argparse.Namespace) -> int:
    from shared.local.search_output import print_answer

    client = _client(args)
    body: dict[str, Any] = {"question": args.question, "mode": args.mode}
    if args.in_collections:
        body["filters"] = {"collections": args.in_collections.split(",")}
    result = client.call("POST", "/v1/answer", body)
    _print_answer(args, result, print_answer)
    return 0


@reports_api_errors("scan: {file_id}")
def cmd_scan(args: argparse.Namespace) -> int:
    client = _client(args, Role.WRITE)
    started = client.call("POST", f"/v1/files/{args.file_id}/scan")
    print(f"{args.file_id}: OCR of every page queued (attempt {started['attempt']}, {started['engine']})")
    record = client.wait_until_processed(args.file_id)
    print(_file_line(record))
    return 0 if record["current"]["processingState"] == "indexed" else 1


def cmd_usage(args: argparse.Namespace) -> int:
    client = _client(args)
    query = "&".join(f"{name}={value}" for name, value in (("since", args.since), ("until", args.until)) if value)
    report = client.call("GET", "/v1/usage" + (f"?{query}" if query else ""))
    _print_answer(args, report, _print_usage)
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
    client = _client(args)
    report = client.call("GET", "/v1/coverage")
    _print_answer(args, report, _print_coverage)
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
    client = _client(args, Role.ADMIN)
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


def cmd_eval(args: argparse.Namespace) -> int:
    """A BEIR dataset through the real index into a scratch tenant, measured per lane (starts the stack
    if it is not running, and stops it again)."""
    from pathlib import Path

    from shared.bootstrap import Container
    from shared.local.evaluation import Evaluation, load_beir, print_report, print_sweep
    from shared.local.stack import StackError, down, running_state, settings_for, up

    # Retrieval scores the test split unless told; answers are measured (and calibrated) on train.
    args.split = args.split or ("train" if args.answers else "test")
    if args.answers:
        return _eval_answers(args)
    if not args.dataset:
        print("quire eval: --dataset is required (without --answers)", file=sys.stderr)
        return 2
    directory = Path(args.dataset)
    try:
        dataset = load_beir(directory, args.split)
    except (OSError, ValueError) as error:
        print(f"quire eval: {error}", file=sys.stderr)
        return 2
    if args.queries:
        dataset.queries = dict(list(dataset.queries.items())[: args.queries])
    paths = StackPaths.in_directory()
    try:
        state, started = up(paths)
    except StackError as error:
        print(f"quire eval: the stack did not start: {error}", file=sys.stderr)
        return 1
    state = running_state(paths) or state
    container = Container(settings_for(state))
    evaluation = Evaluation(
        container, tenant=args.reuse, progress=lambda line: print(line, file=sys.stderr, flush=True)
    )
    try:
        if args.sweep:
            print_sweep(evaluation.sweep(dataset))
            return 0
        report = evaluation.run(dataset, name=directory.name, split=args.split)
    finally:
        if args.keep or args.reuse:
            print(f"the scratch tenant is kept: quire eval ... --reuse {evaluation.tenant}", file=sys.stderr)
        else:
            evaluation.remove()
        container.database.close()
        if started:
            down(paths)
    _print_answer(args, report.as_dict(), lambda _: print_report(report))
    return 0 if report.citations_failed == 0 else 1


def _eval_answers(args: argparse.Namespace) -> int:
    """`quire eval --answers`: the labelled questions of docs/answers.md ("Evaluation") through the answer service
    on the local stack (started if it is not running, and stopped again): the demo set, and SciFact's with
    --dataset."""
    import tempfile
    import uuid
    from pathlib import Path

    from shared.adapters.local.jwt_tokens import LocalTokenIssuer
    from shared.adapters.local.secret_files import read_or_create_secret
    from shared.bootstrap import Container
    from shared.local.answer_evaluation import (
        DEMO_COLLECTION,
        RESTRICTED,
        ScifactRun,
        evaluate,
        print_report,
        print_sweep,
    )
    from shared.local.api_client import ApiClient
    from shared.local.evaluation import load_beir
    from shared.local.stack import StackError, down, running_state, settings_for, up

    scifact = None
    if args.dataset:
        try:
            dataset = load_beir(Path(args.dataset), args.split)
        except (OSError, ValueError) as error:
            print(f"quire eval: {error}", file=sys.stderr)
            return 2
        scifact = ScifactRun(dataset, args.split, reuse=args.reuse, keep=args.keep, answerable=args.queries)
    if args.calibrate and args.split != "train":
        print("quire eval: --calibrate runs on the train split only (tune nothing on held-out splits)", file=sys.stderr)
        return 2
    paths = StackPaths.in_directory()
    try:
        state, started = up(paths)
    except StackError as error:
        print(f"quire eval: the stack did not start: {error}", file=sys.stderr)
        return 1
    state = running_state(paths) or state
    container = Container(settings_for(state))
    tenant = f"answers-{uuid.uuid4().hex[:10]}"
    principal = with_role(tenant, "quire-eval", {DEMO_COLLECTION, RESTRICTED}, Role.WRITE)
    client = ApiClient(state["api"], LocalTokenIssuer(read_or_create_secret(paths.jwt_secret)).issue(principal))

    def upload(files: Any) -> None:
        tickets = [client.upload(path, collection)["fileId"] for path, collection in files]
        for file_id in tickets:
            client.wait_until_processed(file_id)

    try:
        with tempfile.TemporaryDirectory() as directory:
            result = evaluate(
                container,
                demo_tenant=tenant,
                upload=upload,
                directory=Path(directory),
                scifact=scifact,
                calibrate=args.calibrate,
                progress=lambda line: print(line, file=sys.stderr, flush=True),
            )
    finally:
        container.database.close()
        if started:
            down(paths)

    def as_text(_: object) -> None:
        print_report(result["report"])
        if result["sweep"]:
            print()
            print_sweep(result["sweep"])

    _print_answer(args, result, as_text)
    failed = any(
        report["citation_resolvability"] not in (None, 1.0)
        or report["verbatim_share"] not in (None, 1.0)
        or report["cross_tenant_citations"]
        for report in result["report"].values()
    )
    return 1 if failed else 0


def _collections_option(parser: argparse.ArgumentParser) -> None:
    """The collections `_client` mints the caller's token for (no other use: a given token says its own)."""
    parser.add_argument("--collections", default="default", help="comma-separated collections the caller may read")


def _caller_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenant", default="local", help="tenant for the locally minted token (default: local)")
    parser.add_argument("--sub", default="local-user", help="subject for the locally minted token")
    parser.add_argument("--token", help="a bearer token to use instead (or QUIRE_TOKEN)")


def _add_move_command(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    move = commands.add_parser("mv", help="move a file (every version, and its chunks) to another collection")
    move.add_argument("file_id")
    move.add_argument("--to", required=True, help="the collection it goes to")
    _collections_option(move)
    _caller_options(move)
    move.set_defaults(run=cmd_mv)


def _add_index_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    search = commands.add_parser("search", help="hybrid search with citations")
    search.add_argument("query")
    search.add_argument("--mode", choices=["hybrid", "keyword", "semantic"], default="hybrid")
    search.add_argument("--limit", type=int, default=5)
    search.add_argument("--json", action="store_true", help="the API's answer as it is")
    _collections_option(search)
    search.add_argument("--in", dest="in_collections", help="only these collections (comma-separated)")
    _caller_options(search)
    search.set_defaults(run=cmd_search)

    ask = commands.add_parser("ask", help="a grounded answer: every claim cited from your documents")
    ask.add_argument("question")
    ask.add_argument("--mode", choices=["hybrid", "keyword", "semantic"], default="hybrid")
    ask.add_argument("--json", action="store_true", help="the API's answer as it is")
    _collections_option(ask)
    ask.add_argument("--in", dest="in_collections", help="only these collections (comma-separated)")
    _caller_options(ask)
    ask.set_defaults(run=cmd_ask)
    coverage = commands.add_parser("coverage", help="files, indexed, failed, stale and lexical-only per collection")
    _collections_option(coverage)
    coverage.add_argument("--json", action="store_true")
    _caller_options(coverage)
    coverage.set_defaults(run=cmd_coverage)
    reindex = commands.add_parser("reindex", help="re-embed what another model (or none) embedded, in batches")
    _collections_option(reindex)
    reindex.add_argument("--batch", type=int, default=20, help="versions queued per request (at most 100)")
    reindex.add_argument(
        "--wait", type=float, default=600, help="seconds to wait for the queued re-indexes to finish (default 600)"
    )
    _caller_options(reindex)
    reindex.set_defaults(run=cmd_reindex)
    scan = commands.add_parser("scan", help="OCR every page of a PDF or image again, and wait until indexed")
    scan.add_argument("file_id")
    _collections_option(scan)
    _caller_options(scan)
    scan.set_defaults(run=cmd_scan)
    usage = commands.add_parser("usage", help="metered OCR, vision and embedding calls (default: this month)")
    usage.add_argument("--since", help="ISO 8601 with a time zone, e.g. 2026-11-01T00:00:00Z")
    usage.add_argument("--until", help="ISO 8601 with a time zone")
    _collections_option(usage)
    usage.add_argument("--json", action="store_true")
    _caller_options(usage)
    usage.set_defaults(run=cmd_usage)
    _add_eval_command(commands)


def _add_eval_command(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    evaluate = commands.add_parser(
        "eval", help="nDCG@10, recall@10/100 and MRR@10 per lane on a BEIR dataset; --answers: grounded answers"
    )
    evaluate.add_argument(
        "--dataset", help="a BEIR directory: corpus.jsonl, queries.jsonl, qrels/ (required without --answers)"
    )
    evaluate.add_argument(
        "--split", help="the qrels split to score (default: test; train with --answers; tune only on train)"
    )
    evaluate.add_argument(
        "--queries", type=int, help="only the first N queries of the split (--answers: N sampled SciFact claims)"
    )
    evaluate.add_argument("--json", action="store_true")
    evaluate.add_argument("--keep", action="store_true", help="keep the scratch tenant (to --reuse it)")
    evaluate.add_argument("--reuse", help="a kept scratch tenant: skip ingesting the corpus again")
    evaluate.add_argument("--sweep", action="store_true", help="nDCG@10 over a grid of RRF k and BM25 k1, b")
    evaluate.add_argument(
        "--answers",
        action="store_true",
        help="grounded answers on labelled questions: the demo set, and SciFact's with --dataset (docs/answers.md)",
    )
    evaluate.add_argument(
        "--calibrate", action="store_true", help="with --answers: the sentence floor swept 0.2-0.45 (train only)"
    )
    evaluate.set_defaults(run=cmd_eval)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="quire", description="Quire: documents in, cited search out.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("up", help="start the local stack in the background").set_defaults(run=cmd_up)
    commands.add_parser("down", help="stop the local stack and everything it started").set_defaults(run=cmd_down)
    status_parser = commands.add_parser("status", help="probe the local stack and report capabilities")
    status_parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    status_parser.set_defaults(run=cmd_status)
    token = commands.add_parser("token", help="print a bearer token for the local API")
    token.add_argument("--tenant", required=True)
    token.add_argument("--collections", default="", help="comma-separated collection ids the token may read")
    token.add_argument(
        "--write", default="", help="comma-separated collections it may also write to (upload, edit, rescan, export)"
    )
    token.add_argument(
        "--admin", default="", help="comma-separated collections it may administer (delete, approve, re-index)"
    )
    token.add_argument("--sub", default="local-user", help="the subject (user id)")
    token.add_argument("--ttl", type=int, default=3600, help="lifetime in seconds (default 3600)")
    token.set_defaults(run=cmd_token)
    demo = commands.add_parser("demo", help="start the stack, ingest documents of every format, search, stop")
    demo.add_argument("--docs", help="a directory of your own documents instead of the generated corpus")
    demo.add_argument("--query", action="append", help="a search to run (repeatable); defaults fit the corpus")
    demo.set_defaults(run=cmd_demo)
    upload = commands.add_parser("upload", help="upload files through the API (presigned POST), wait until stored")
    upload.add_argument("paths", nargs="+")
    upload.add_argument("--collection", default="default", help="the collection to upload into (default: default)")
    _caller_options(upload)
    upload.set_defaults(run=cmd_upload)
    files = commands.add_parser("files", help="list files in the caller's collections")
    _collections_option(files)
    files.add_argument("--json", action="store_true")
    _caller_options(files)
    files.set_defaults(run=cmd_files)
    read = commands.add_parser("read", help="show a file's extracted document as Markdown")
    read.add_argument("file_id")
    read.add_argument("--all", action="store_true", help="every window, not just the first")
    read.add_argument("--json", action="store_true", help="the windows as the API returns them")
    _collections_option(read)
    _caller_options(read)
    read.set_defaults(run=cmd_read)
    remove = commands.add_parser("rm", help="delete a file (all its versions)")
    remove.add_argument("file_id")
    _collections_option(remove)
    _caller_options(remove)
    remove.set_defaults(run=cmd_rm)
    _add_move_command(commands)
    _add_index_commands(commands)
    from shared.local.cli_artifacts import add_artifact_commands

    add_artifact_commands(commands)
    from shared.local.cli_tools import add_tool_commands

    add_tool_commands(commands)
    reconcile = commands.add_parser("reconcile", help="sweep deletions, complete lost uploads, report orphans")
    reconcile.add_argument("--json", action="store_true")
    reconcile.set_defaults(run=cmd_reconcile)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
