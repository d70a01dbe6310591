"""The `quire` parser: each module of shared/cli/ adds its commands, in the order `quire --help` lists them."""

import argparse
import sys

from shared.cli.artifacts import add_artifact_commands
from shared.cli.common import CommandFailed
from shared.cli.evaluate import add_eval_command
from shared.cli.events import add_event_commands
from shared.cli.files import add_file_commands
from shared.cli.index import add_index_commands
from shared.cli.smoke import add_smoke_command
from shared.cli.stack import add_reconcile_command, add_stack_commands
from shared.cli.tools import add_tool_commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="quire", description="Quire: documents in, cited search out.")
    commands = parser.add_subparsers(dest="command", required=True)
    add_stack_commands(commands)
    add_file_commands(commands)
    add_index_commands(commands)
    add_eval_command(commands)
    add_artifact_commands(commands)
    add_tool_commands(commands)
    add_event_commands(commands)
    add_reconcile_command(commands)
    add_smoke_command(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result: int = args.run(args)
    except CommandFailed as failure:
        print(failure.message, file=sys.stderr)
        return failure.status
    return result
