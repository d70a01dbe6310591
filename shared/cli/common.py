"""What every `quire` command shares: printing a result, the API client with the caller's token, the options
that choose that caller, reporting API refusals, and the local stack a command runs on."""

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from shared.domain.auth import Role, with_role
from shared.local.paths import StackPaths

if TYPE_CHECKING:
    from shared.bootstrap import Container
    from shared.local.api_client import ApiClient

Answer = TypeVar("Answer")
Command = Callable[[argparse.Namespace], int]


class CommandFailed(Exception):
    """A command that cannot go on: `main` prints the message on stderr and exits with `status`."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def print_result(args: argparse.Namespace, answer: Answer, as_text: Callable[[Answer], object]) -> None:
    """With --json the answer as indented JSON (as the API gave it), else as `as_text` prints it."""
    if args.json:
        # default=str: the stack's status report holds paths.
        print(json.dumps(answer, indent=2, default=str))
    else:
        as_text(answer)


def collections_client(args: argparse.Namespace, collections: list[str], role: Role) -> "ApiClient":
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


def caller_client(args: argparse.Namespace, role: Role = Role.READ) -> "ApiClient":
    """`collections_client` for the collections the command's --collections names."""
    return collections_client(args, args.collections.split(","), role)


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


# The options below are added where each command's help lists them (argparse's parents= would list them first).


def add_collections_option(parser: argparse.ArgumentParser) -> None:
    """The collections `caller_client` mints the caller's token for (no other use: a given token says its own)."""
    parser.add_argument("--collections", default="default", help="comma-separated collections the caller may read")


def add_caller_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenant", default="local", help="tenant for the locally minted token (default: local)")
    parser.add_argument("--sub", default="local-user", help="subject for the locally minted token")
    parser.add_argument("--token", help="a bearer token to use instead (or QUIRE_TOKEN)")


def add_api_options(parser: argparse.ArgumentParser, *, collections: bool = True) -> None:
    """The caller's options with --json between: the artifact, export, PDF and tool commands."""
    if collections:
        add_collections_option(parser)
    parser.add_argument("--json", action="store_true", help="the API's answer as it is")
    add_caller_options(parser)


class RunningStack:
    """The local stack a command runs on, and (built when first asked for) a container wired to it."""

    def __init__(self, paths: StackPaths, state: dict[str, Any], started: bool, startup_seconds: float) -> None:
        self.paths = paths
        self.state = state
        self.started = started  # by this command, which stops it again
        self.startup_seconds = startup_seconds
        self._container: Container | None = None

    @property
    def container(self) -> "Container":
        if self._container is None:
            from shared.bootstrap import Container
            from shared.local.stack import settings_for

            self._container = Container(settings_for(self.state))
        return self._container

    def close(self) -> None:
        if self._container is not None:
            self._container.database.close()


@contextmanager
def running_stack(command: str, *, start: bool = True, stopped_note: str | None = None) -> Iterator[RunningStack]:
    """The local stack: started when it is not running (`start`), else CommandFailed. On leaving, the container's
    database is closed, and a stack this started is stopped (then `stopped_note` is printed)."""
    from shared.local.stack import NOT_RUNNING, StackError, down, running_state, up

    paths = StackPaths.in_directory()
    begun = time.monotonic()
    if start:
        try:
            state, started = up(paths)
        except StackError as error:
            raise CommandFailed(f"quire {command}: the stack did not start: {error}") from None
        state = running_state(paths) or state
    elif (running := running_state(paths)) is not None:
        state, started = running, False
    else:
        raise CommandFailed(f"quire: {NOT_RUNNING}")
    stack = RunningStack(paths, state, started, time.monotonic() - begun)
    try:
        yield stack
    finally:
        stack.close()
        if started:
            down(paths)
            if stopped_note:
                print(stopped_note)
