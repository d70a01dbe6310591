"""A tool's output schema as published: the same constraints as pydantic's, in the shape a validator reads fastest.

An MCP client checks every result against the tool's output schema (the Python SDK with jsonschema, on each call).
pydantic writes an optional field as `anyOf: [{type: T, …}, {type: null}]` and a nested model as a `$ref` into
`$defs`: jsonschema then builds a validator per branch and resolves a reference per item, which cost the SDK
client 8.7 ms of CPU per `extract_text` call of a 40-section report, more than the call itself
(docs/benchmarks.md#agent-tools-over-mcp). The equivalent `type: [T, "null"]` and inlined definitions accept and
refuse exactly the same documents: a keyword that constrains one type (format, minimum, properties, required,
items…) ignores an instance of another type, so null passes it as it passed the null branch.
"""

from typing import Any

# Keywords that apply to an instance of any type: a branch holding one cannot be merged with `type: null`.
_ANY_TYPE_KEYWORDS = frozenset({"enum", "const", "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref"})
_DEFINITIONS = "#/$defs/"
# Keywords that describe and never constrain.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"})


def published_output_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` (pydantic's, serialization mode) with its definitions inlined and optional fields as type unions.
    A recursive definition (a model that holds itself) cannot be inlined: such a schema is returned as it was."""
    definitions: dict[str, Any] = schema.get("$defs", {})
    try:
        inlined = _inlined(schema, definitions, ())
    except _Recursive:
        return schema
    inlined.pop("$defs", None)
    flattened: dict[str, Any] = _flattened(inlined)
    return flattened


class _Recursive(Exception):
    pass


def _inlined(node: Any, definitions: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inlined(item, definitions, seen) for item in node]
    if not isinstance(node, dict):
        return node
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith(_DEFINITIONS):
        name = reference.removeprefix(_DEFINITIONS)
        if name in seen or name not in definitions:
            raise _Recursive(name)
        beside = {key: value for key, value in node.items() if key != "$ref"}
        definition = _inlined(definitions[name], definitions, (*seen, name))
        if beside.keys() <= _ANNOTATIONS:
            # A description or a default beside the $ref is the field's own: it wins over the definition's.
            return {**definition, **_inlined(beside, definitions, seen)}
        # A constraint beside it applies with the definition's, not instead of one of them.
        return {**_inlined(beside, definitions, seen), "allOf": [definition]}
    return {key: (value if key == "$defs" else _inlined(value, definitions, seen)) for key, value in node.items()}


def _flattened(node: Any) -> Any:
    if isinstance(node, list):
        return [_flattened(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _flattened(value) for key, value in node.items()}
    branches = node.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        typed = branches[0] if branches[1] == {"type": "null"} else branches[1]
        kind = typed.get("type") if isinstance(typed, dict) else None
        if isinstance(kind, str) and kind != "null" and not _ANY_TYPE_KEYWORDS & typed.keys():
            shared = _ANY_TYPE_KEYWORDS & (node.keys() - {"anyOf"})
            overlapping = (node.keys() - {"anyOf"}) & (typed.keys() - {"type"})
            if not shared and overlapping <= _ANNOTATIONS and "type" not in node:
                # The field's own title and description win over its model's, as a reader of the field expects.
                merged = {**typed, **{key: value for key, value in node.items() if key != "anyOf"}}
                merged["type"] = [kind, "null"]
                return merged
    return node
