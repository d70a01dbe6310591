"""The file commands: upload, files, meta, read, rm and mv."""

import argparse
import sys
from typing import TYPE_CHECKING, Any

from shared.cli.common import (
    CommandFailed,
    add_caller_options,
    add_collections_option,
    caller_client,
    collections_client,
    print_result,
    reports_api_errors,
)
from shared.cli.metadata import add_meta_command, add_meta_options, add_where_option, metadata_line, metadata_of
from shared.domain.auth import Role

if TYPE_CHECKING:
    from pathlib import Path

    from shared.cli.upload_state import UploadState


def add_file_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    upload = commands.add_parser(
        "upload",
        help="upload files through the API (a presigned POST, or by parts past its limit), wait until stored",
    )
    upload.add_argument("paths", nargs="+")
    upload.add_argument("--collection", default="default", help="the collection to upload into (default: default)")
    upload.add_argument(
        "--multipart", action="store_true", help="upload by parts (resumable) even below the single POST's limit"
    )
    upload.add_argument(
        "--part-size", type=_mib, metavar="MIB", help="by parts of this many MiB (at least 5; 16 by default)"
    )
    upload.add_argument("--checksums", action="store_true", help="by parts, each signed with its SHA-256")
    upload.add_argument(
        "--language",
        type=_language,
        metavar="CODE",
        help="the documents' language (ISO 639-1, e.g. de), declared instead of detected per chunk (docs/search.md)",
    )
    upload.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="UPLOAD_ID",
        help="finish an interrupted upload by parts (after the file): the session UPLOAD_ID, or without it the one"
        " written down in .quire/uploads/ for this file; only the parts storage lacks are sent",
    )
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

    from quire_client import UploadInterrupted, UploadSessionEnded

    from shared.cli.upload_state import UploadState
    from shared.local.api_client import ApiError

    metadata = metadata_of("upload", args.meta, args.meta_json)
    if args.resume and len(args.paths) > 1:
        raise CommandFailed("quire upload: error: --resume UPLOAD_ID names the session of one file", status=2)
    if args.resume is not None and args.language is not None:
        # The version's language was declared when its session opened; what resumes sends is only bytes.
        raise CommandFailed(
            "quire upload: error: --resume finishes an upload as it was opened, with the language declared then;"
            " to declare another, upload the file again with --language",
            status=2,
        )
    state = UploadState.in_directory()
    failed = 0
    for name in args.paths:
        path = Path(name)
        try:
            record = _upload_one(args, path, metadata, state)
        except UploadInterrupted as stopped:
            print(f"quire upload: {path}: {_interrupted(path, stopped.upload_id, stopped)}", file=sys.stderr)
            failed += 1
            continue
        except UploadSessionEnded as ended:
            state.forget(path)
            print(f"quire upload: {path}: {ended} (run quire upload without --resume)", file=sys.stderr)
            failed += 1
            continue
        except KeyboardInterrupt:
            found = state.find(path) if path.exists() else None
            upload_id = args.resume or (str(found["uploadId"]) if found else None)
            print(f"\nquire upload: {path}: {_interrupted(path, upload_id)}", file=sys.stderr)
            return 130
        except (ApiError, OSError, ValueError) as error:
            print(f"quire upload: {path}: {error}", file=sys.stderr)
            failed += 1
            continue
        print(file_line(record))
        failed += record["current"]["state"] != "stored"
    return 1 if failed else 0


def _upload_one(
    args: argparse.Namespace, path: "Path", metadata: dict[str, Any], state: "UploadState"
) -> dict[str, Any]:
    """One file: by a presigned POST or by parts (a new upload), or the rest of its parts (--resume); then waits
    until its version is decided. The session of an upload by parts is written down as it opens, and forgotten once
    it is complete."""
    from shared.local.api_client import media_type_for, progress_bar

    if args.resume is not None:
        found = state.find(path)
        upload_id = args.resume or (found and found["uploadId"])
        if not upload_id:
            raise ValueError(
                f"no interrupted upload of this file is written down in {state.folder} (a changed file is another"
                " file): give its session, --resume UPLOAD_ID"
            )
        collection = found["collectionId"] if found and found["uploadId"] == upload_id else args.collection
        client = collections_client(args, [collection], Role.WRITE)
        uploaded = client.quire.resume(str(upload_id), path, wait=False, progress=progress_bar(path.name))
        assert uploaded.parts is not None
        parts = uploaded.parts
        replaced = f" ({len(parts.replaced)} held parts did not match and were sent again)" if parts.replaced else ""
        print(
            f"{path.name}: resumed upload session {parts.upload_id}: {len(parts.kept)} of {parts.part_count} parts"
            f" were held and match the file; sent {len(parts.sent)}{replaced}",
            file=sys.stderr,
        )
    else:
        client = collections_client(args, [args.collection], Role.WRITE)

        def opened(ticket: Any) -> None:
            state.remember(path, ticket, args.collection)
            print(
                f"{path.name}: uploading by parts ({ticket['partCount']} parts of {ticket['partSize'] // 2**20} MiB),"
                f" upload session {ticket['uploadId']}; if it is interrupted: quire upload {path} --resume",
                file=sys.stderr,
            )

        uploaded = client.quire.upload(
            path,
            args.collection,
            media_type=media_type_for(path),
            metadata=metadata,
            language=args.language,
            wait=False,
            progress=progress_bar(path.name),
            multipart=args.multipart,
            part_size=args.part_size,
            checksums=args.checksums,
            on_session=opened,
        )
    state.forget(path)
    return client.wait_until_decided(uploaded.file_id)


def _interrupted(path: "Path", upload_id: str | None, stopped: Any = None) -> str:
    """What an interrupted upload says: how far it got and how to go on."""
    if upload_id is None:
        return "interrupted before its upload session opened: upload it again"
    held = f" with {stopped.held} of {stopped.part_count} parts confirmed stored ({stopped.cause})" if stopped else ""
    return (
        f"interrupted{held}; upload session {upload_id} stays open for a day."
        f" Resume it with: quire upload {path} --resume {upload_id}"
    )


def _language(value: str) -> str:
    """An ISO 639-1 code (a tag such as de-CH is read as its language), checked before anything is uploaded."""
    from shared.domain.languages import UnknownLanguage, language_code

    try:
        return language_code(value)
    except UnknownLanguage as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _mib(value: str) -> int:
    if not value.isdigit() or int(value) < 5:
        raise argparse.ArgumentTypeError(f"{value!r}: a whole number of MiB, at least 5 (S3's smallest part)")
    return int(value) * 2**20


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
    same = current.get("duplicateOf")
    if same:
        # Taken all the same: the collection holds these bytes already.
        note += f"  [same bytes as {same['filename']} {same['fileId']}]"
    return (
        f"{record['fileId']}  {current['state']:<8} {size:>10}  {record['collectionId']:<16} {record['filename']}{note}"
    )


def _print_file_lines(records: list[dict[str, Any]]) -> None:
    for record in records:
        print(file_line(record))


def _pages(numbers: list[int]) -> str:
    shown = ",".join(str(number) for number in numbers[:10])
    return shown + (f" and {len(numbers) - 10} more" if len(numbers) > 10 else "")
