"""A file's metadata on the command line (issue 33): `--meta key=value` and `--meta-json` at upload, `quire meta
FILE_ID [set|rm ...]`, `--where` (a filter in JSON), and metadata shown compactly on a file's line.

A `--meta` value is read as JSON when it is a JSON number, boolean, string in double quotes or list
(`amount=12` a number, `signed=true` a boolean, `tags=["nda","renewal"]` a list, `id='"12"'` the string "12");
anything else is the text as written (`customer=acme`, `zip=02139`, `effective=2026-01-01`, which the server reads
as a date). `metadata_text` writes a value back in the same form, so what `quire files` shows can be pasted into
`--meta` again.
"""

import argparse
import json
import math
import sys
from typing import Any

from shared.cli.common import CommandFailed, add_caller_options, add_collections_option, collections_client
from shared.domain.auth import Role

META_VALUE_RULE = (
    'a JSON number, true/false, a list or a "quoted string" is read as JSON; anything else is the text as written'
)


def _not_json(constant: str) -> Any:
    # NaN and Infinity are Python's extensions to JSON, not JSON: such a value is taken as text.
    raise ValueError(constant)


def meta_value(text: str) -> Any:
    """A `--meta` value: JSON when it is a number, boolean, quoted string or list, else the text itself."""
    try:
        parsed = json.loads(text, parse_constant=_not_json)
    except ValueError:
        return text
    if parsed is None or isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(
            f"{text} is not a metadata value: a string, a number, a boolean, a date or a list of strings"
            " (quire meta FILE_ID rm KEY removes a key)"
        )
    if isinstance(parsed, float) and not math.isfinite(parsed):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number")
    return parsed


def meta_pair(text: str) -> tuple[str, Any]:
    """`key=value` (split at the first `=`), as argparse's type for --meta: a malformed one is a usage error."""
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not key=value (e.g. customer=acme; {META_VALUE_RULE})")
    try:
        return key, meta_value(value)
    except argparse.ArgumentTypeError as error:
        raise argparse.ArgumentTypeError(f"{key}: {error}") from None


def json_object(text: str) -> dict[str, Any]:
    """argparse's type for --meta-json and --where: a JSON object, else a usage error before any request."""
    try:
        parsed = json.loads(text, parse_constant=_not_json)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not JSON ({error})") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, not {type(parsed).__name__}: {text}")
    return parsed


def add_where_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--where",
        type=json_object,
        metavar="FILTER_JSON",
        help=f'{what} whose metadata the filter keeps, e.g. \'{{"equals": {{"key": "customer", "value": "acme"}}}}\'',
    )


def add_meta_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--meta",
        type=meta_pair,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"set a metadata key on every file uploaded (repeatable; {META_VALUE_RULE})",
    )
    parser.add_argument("--meta-json", type=json_object, metavar="JSON", help="metadata as one JSON object")


def metadata_of(command: str, pairs: list[tuple[str, Any]], whole: dict[str, Any] | None = None) -> dict[str, Any]:
    """The metadata `pairs` (and `whole`) name; a key given twice is a usage error (exit 2): which was meant?"""
    metadata = dict(whole or {})
    seen: set[str] = set()
    for key, value in pairs:
        if key in seen or key in metadata:
            raise CommandFailed(f"quire {command}: error: metadata key {key!r} is given twice", status=2)
        seen.add(key)
        metadata[key] = value
    return metadata


def metadata_text(value: Any) -> str:
    """A value as `--meta` reads it back: a string bare when it would be read as that string, else JSON."""
    if isinstance(value, str) and value and not any(c.isspace() for c in value):
        try:
            if meta_value(value) == value:
                return value
        except argparse.ArgumentTypeError:  # "null", "{}": text that --meta would refuse bare
            pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def metadata_line(metadata: dict[str, Any] | None) -> str:
    """`customer=acme amount=12`: a file's metadata on one line, keys sorted."""
    return " ".join(f"{key}={metadata_text(value)}" for key, value in sorted((metadata or {}).items()))


def add_meta_command(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    meta = commands.add_parser(
        "meta",
        help="show a file's metadata, or set or remove keys (set KEY=VALUE ..., rm KEY ...)",
        description=f"Without an action, show the file's metadata and revision. set KEY=VALUE ...: {META_VALUE_RULE}.",
    )
    meta.add_argument("file_id")
    meta.add_argument("action", nargs="?", choices=["set", "rm"])
    meta.add_argument("items", nargs="*", metavar="KEY[=VALUE]", help="set: KEY=VALUE pairs; rm: keys")
    meta.add_argument(
        "--expect", type=int, metavar="REVISION", help="change only if the metadata is still at this revision"
    )
    meta.add_argument("--json", action="store_true", help="the file view as the API returns it")
    add_collections_option(meta)
    add_caller_options(meta)
    meta.set_defaults(run=cmd_meta)


def cmd_meta(args: argparse.Namespace) -> int:
    from shared.local.api_client import ApiError

    change = _change_of(args)
    client = collections_client(args, args.collections.split(","), Role.WRITE if change else Role.READ)
    try:
        if change is None:
            record = client.call("GET", f"/v1/files/{args.file_id}")
        else:
            record = client.change_metadata(args.file_id, **change)
    except ApiError as error:
        body = error.body if isinstance(error.body, dict) else {}
        if error.status == 409 and "metadataRevision" in body:
            current = body["metadataRevision"]
            print(
                f"quire meta: {args.file_id}: the metadata is at revision {current}, not {args.expect}: nothing was"
                f" changed; read it again (quire meta {args.file_id}) and retry with --expect {current}",
                file=sys.stderr,
            )
        else:
            print(f"quire meta: {args.file_id}: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    print(f"{record['fileId']}  {record['filename']}  metadata revision {record['metadataRevision']}")
    for key, value in sorted(record["metadata"].items()):
        print(f"  {key}={metadata_text(value)}")
    return 0


def _change_of(args: argparse.Namespace) -> dict[str, Any] | None:
    """The change `set`/`rm` asks for (None: only show), or CommandFailed (usage, exit 2) before any request."""
    if args.action is None:
        if args.items or args.expect is not None:
            raise CommandFailed("quire meta: error: KEY[=VALUE] and --expect need an action: set or rm", status=2)
        return None
    if not args.items:
        wanted = "KEY=VALUE pairs" if args.action == "set" else "keys"
        raise CommandFailed(f"quire meta: error: {args.action} needs one or more {wanted}", status=2)
    if args.action == "rm":
        return {"remove": list(args.items), "expected_revision": args.expect}
    try:
        pairs = [meta_pair(item) for item in args.items]
    except argparse.ArgumentTypeError as error:
        raise CommandFailed(f"quire meta: error: set: {error}", status=2) from None
    return {"set_values": metadata_of("meta", pairs), "expected_revision": args.expect}
