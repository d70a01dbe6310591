"""Calling an agent tool through its HTTP twin (POST /v1/tools/{name}) on the integration stack: the result checked
against the tool's declared output schema, or the refusal; and what one fence of a result holds."""

import re
from typing import Any

import jsonschema

from functions.tools.catalog import TOOLS_BY_NAME
from shared.domain.fencing import Fence
from tests.integration.files_stack import Stack

# The real start marker (its brackets cannot appear unescaped inside a fence).
NONCE = re.compile(r"⟦quire-data ([0-9a-f]{16,64})⟧")


def tool(stack: Stack, token: str, name: str, /, **arguments: Any) -> dict[str, Any]:
    status, answer = stack.json("POST", f"/v1/tools/{name}", token, arguments)
    assert status == 200, answer
    definition = TOOLS_BY_NAME[name]
    if not answer["isError"]:
        jsonschema.validate(answer["result"], definition.output_schema())
    return answer  # type: ignore[no-any-return]


def result(stack: Stack, token: str, name: str, /, **arguments: Any) -> dict[str, Any]:
    answer = tool(stack, token, name, **arguments)
    assert not answer["isError"], answer
    return answer["result"]  # type: ignore[no-any-return]


def refusal(stack: Stack, token: str, name: str, /, **arguments: Any) -> dict[str, Any]:
    answer = tool(stack, token, name, **arguments)
    assert answer["isError"], answer
    return answer["error"]  # type: ignore[no-any-return]


def fenced_text(fenced: str) -> str:
    """What a fence holds, checked to be exactly one fence with one nonce."""
    nonces = set(NONCE.findall(fenced))
    assert len(nonces) == 1, fenced
    return Fence(nonce=nonces.pop()).unwrap(fenced)
