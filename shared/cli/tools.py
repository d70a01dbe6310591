"""`quire tools ...`: the agent tools from the command line, through POST /v1/tools/{name} like any agent that
does not speak MCP. `quire tools` lists them; `quire tools call NAME '{"fileId": "…"}'` calls one."""

import argparse
import json
import sys
from typing import Any

from shared.cli.common import add_api_options, caller_client, print_result, reports_api_errors
from shared.domain.auth import Role


def _arguments(raw: str | None) -> dict[str, Any]:
    text = sys.stdin.read() if raw == "-" else (raw or "{}")
    try:
        arguments = json.loads(text)
    except ValueError as error:
        raise SystemExit(f"quire tools call: the arguments are not JSON ({error}): pass an object") from None
    if not isinstance(arguments, dict):
        raise SystemExit('quire tools call: the arguments must be a JSON object, e.g. \'{"fileId": "…"}\'')
    return arguments


@reports_api_errors("tools")
def cmd_list(args: argparse.Namespace) -> int:
    answer = caller_client(args).call("GET", "/v1/tools")
    print_result(args, answer, _print_tools)
    return 0


def _print_tools(answer: dict[str, Any]) -> None:
    for tool in answer["tools"]:
        kind = "reads" if tool["annotations"]["readOnlyHint"] else "writes"
        print(f"{tool['name']:<28} {kind:<7} {tool['description']}")


@reports_api_errors("tools show: {name}")
def cmd_show(args: argparse.Namespace) -> int:
    answer = caller_client(args).call("GET", "/v1/tools")
    tool = next((tool for tool in answer["tools"] if tool["name"] == args.name), None)
    if tool is None:
        print(f"quire tools show: there is no tool {args.name!r} (quire tools lists them)", file=sys.stderr)
        return 1
    print(json.dumps(tool, indent=2))
    return 0


@reports_api_errors("tools call: {name}")
def cmd_call(args: argparse.Namespace) -> int:
    # A locally minted token needs the role the tool needs: the write tools write.
    role = Role.WRITE if args.write else Role.READ
    answer = caller_client(args, role).call("POST", f"/v1/tools/{args.name}", _arguments(args.arguments))
    if answer["isError"]:
        error = answer["error"]
        hint = f" (call {error['nextTool']} instead)" if error.get("nextTool") else ""
        print(f"quire tools call {args.name}: {error['error']}: {error['message']}{hint}", file=sys.stderr)
        if args.json:
            print(json.dumps(answer, indent=2))
        return 1
    print(json.dumps(answer if args.json else answer["result"], indent=2))
    return 0


def add_tool_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    tools = commands.add_parser("tools", help="the agent tools (as MCP serves them at /mcp): list, show, call")

    add_api_options(tools)
    tools.set_defaults(run=cmd_list)
    actions = tools.add_subparsers(dest="action")
    listing = actions.add_parser("list", help="every tool, what it does, whether it writes")
    add_api_options(listing)
    listing.set_defaults(run=cmd_list)
    show = actions.add_parser("show", help="one tool's definition: input and output JSON Schemas")
    show.add_argument("name")
    add_api_options(show)
    show.set_defaults(run=cmd_show)
    call = actions.add_parser("call", help="call a tool with JSON arguments and print its result")
    call.add_argument("name")
    call.add_argument("arguments", nargs="?", help="the arguments as a JSON object, or - for standard input")
    call.add_argument("--write", action="store_true", help="mint the local token with the write role")
    add_api_options(call)
    call.set_defaults(run=cmd_call)
