"""The file commands: upload, files, meta, read, rm and mv."""

import argparse
import sys
from typing import Any

from shared.cli.common import (
    add_caller_options,
    add_collections_option,
    caller_client,
    collections_client,
    print_result,
    reports_api_errors,
)
from shared.cli.metadata import add_meta_command, add_meta_options, add_where_option, metadata_line, metadata_of
from shared.domain.auth import Role


def add_file_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    upload = commands.add_parser("upload", help="upload files through the API (presigned POST), wait until stored")
    upload.add_argument("paths", nargs="+")
    upload.add_argument("--collection", default="default", help="the collection to upload into (default: default)")
    add_meta_options(upload)
    add_caller_options(upload)
    upload.set_defaults(run=cmd_upload)
    files = commands.add_parser("files", help="list files in the caller's collections")
    add_collections_option(files)
    add_where_option(files, "only the files")
    files.add_argument("--json", action="store_true")
    add_caller_options(files)
    files.set_defaults(run=cmd_files)
    add_meta_command(commands)
    read = commands.add_parser("read", help="show a file's extracted document as Markdown")
    read.add_argument("file_id")
    read.add_argument("--all", action="store_true", help="every window, not just the first")
    read.add_argument("--json", action="store_true", help="the windows as the API returns them")
    add_collections_option(read)
    add_caller_options(read)
    read.set_defaults(run=cmd_read)
    remove = commands.add_parser("rm", help="delete a file (all its versions)")
    remove.add_argument("file_id")
    add_collections_option(remove)
    add_caller_options(remove)
    remove.set_defaults(run=cmd_rm)
    move = commands.add_parser("mv", help="move a file (every version, and its chunks) to another collection")
    move.add_argument("file_id")
    move.add_argument("--to", required=True, help="the collection it goes to")
    add_collections_option(move)
    add_caller_options(move)
    move.set_defaults(run=cmd_mv)


def cmd_upload(args: argparse.Namespace) -> int:
    from pathlib import Path

    from shared.local.api_client import ApiError, progress_bar

    metadata = metadata_of("upload", args.meta, args.meta_json)
    client = collections_client(args, [args.collection], Role.WRITE)
    failed = 0
    for name in args.paths:
        path = Path(name)
        try:
            ticket = client.upload(path, args.collection, progress_bar(path.name), metadata)
            record = client.wait_until_decided(ticket["fileId"])
        except (ApiError, OSError, ValueError) as error:
            print(f"quire upload: {path}: {error}", file=sys.stderr)
            failed += 1
            continue
        print(file_line(record))
        failed += record["current"]["state"] != "stored"
    return 1 if failed else 0


@reports_api_errors("files")
def cmd_files(args: argparse.Namespace) -> int:
    records = caller_client(args).list_files(where=args.where)
    print_result(args, records, _print_file_lines)
    return 0


def cmd_read(args: argparse.Namespace) -> int:
    from shared.local.api_client import ApiError

    client = caller_client(args)
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
        print_result(args, window, lambda window: print(window["markdown"], end=""))
        cursor = window["nextCursor"]
        if not cursor or not args.all:
            if cursor:
                print(f"\n[{window['totalBlocks'] - int(cursor)} more blocks: quire read {args.file_id} --all]")
            return 0


@reports_api_errors("rm: {file_id}")
def cmd_rm(args: argparse.Namespace) -> int:
    client = caller_client(args, Role.WRITE)
    client.call("DELETE", f"/v1/files/{args.file_id}")
    print(f"{args.file_id} deleting: gone from listings now; its bytes are swept by the next reconcile")
    return 0


@reports_api_errors("mv: {file_id}")
def cmd_mv(args: argparse.Namespace) -> int:
    # Moving takes the admin role in the collection the file is in and in the one it goes to.
    client = collections_client(args, [*args.collections.split(","), args.to], Role.ADMIN)
    moved = client.call("POST", f"/v1/files/{args.file_id}/move", {"collectionId": args.to})
    print(file_line(moved))
    return 0


def file_line(record: dict[str, Any]) -> str:
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
    if record.get("metadata"):
        note += f"  {metadata_line(record['metadata'])}"
    return (
        f"{record['fileId']}  {current['state']:<8} {size:>10}  {record['collectionId']:<16} {record['filename']}{note}"
    )


def _print_file_lines(records: list[dict[str, Any]]) -> None:
    for record in records:
        print(file_line(record))


def _pages(numbers: list[int]) -> str:
    shown = ",".join(str(number) for number in numbers[:10])
    return shown + (f" and {len(numbers) - 10} more" if len(numbers) > 10 else "")
