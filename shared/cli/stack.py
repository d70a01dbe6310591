"""The local stack's own commands: up, down, status, token, demo and reconcile."""

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from shared.cli.common import print_result, running_stack
from shared.domain.auth import Role, with_role
from shared.local.paths import StackPaths


def add_stack_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
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


def add_reconcile_command(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    reconcile = commands.add_parser("reconcile", help="sweep deletions, complete lost uploads, report orphans")
    reconcile.add_argument("--json", action="store_true")
    reconcile.set_defaults(run=cmd_reconcile)


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
    print_result(args, report, _print_status)
    return 0 if _healthy(report) else 1


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

    from shared.adapters.local.jwt_tokens import LocalTokenIssuer
    from shared.adapters.local.secret_files import read_or_create_secret
    from shared.local.api_client import ApiClient
    from shared.local.demo import DEMO_COLLECTION, DEMO_QUERIES, DEMO_QUESTIONS, DEMO_TENANT, run_demo
    from shared.local.stack import status

    with running_stack("demo", stopped_note="\nQuire is down (the demo started it, so the demo stopped it).") as stack:
        print(f"Quire is up in {stack.startup_seconds:.1f}s." if stack.started else "Quire was already running.")
        report = status(stack.paths)
        _print_status(report)
        if not _healthy(report):
            return 1
        if args.docs:
            documents = sorted(path for path in Path(args.docs).iterdir() if path.is_file())
            queries = args.query or None
            questions = list(args.query or ())
        else:
            from shared.local.demo_corpus import write_demo_corpus, write_demo_recording

            documents = write_demo_corpus(stack.paths.root / "demo-documents")
            recording = write_demo_recording(stack.paths.root / "demo-documents")
            if isinstance(recording, Path):
                documents.append(recording)
            else:
                print(f"(no stand-up recording in this demo: {recording})")
            queries = args.query or list(DEMO_QUERIES)
            questions = list(args.query or DEMO_QUESTIONS)
        # The demo uploads and exports: the write role in its one collection, no more.
        principal = with_role(DEMO_TENANT, "demo", {DEMO_COLLECTION}, Role.WRITE)
        token = LocalTokenIssuer(read_or_create_secret(stack.paths.jwt_secret)).issue(principal)
        return run_demo(ApiClient(stack.state["api"], token), documents, queries, questions)


def cmd_reconcile(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    with running_stack("reconcile", start=False) as stack:
        container = stack.container
        report = container.reconciler.run(datetime.now(UTC)).as_dict()
        # Processing and renders asked for again run in this process locally: finish them before exiting.
        if "workflow" in container.__dict__ and hasattr(container.workflow, "drain"):
            container.workflow.drain()
        if report["rendersResubmitted"] and hasattr(container.render_queue, "drain"):
            container.render_queue.drain()
    print_result(args, report, _print_reconcile_report)
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
