"""The published output schemas accept and refuse exactly what pydantic's do (functions/tools/output_schemas.py)."""

import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from functions.tools.catalog import TOOLS
from functions.tools.output_schemas import published_output_schema
from functions.tools.registry import _schema

_OTHER_VALUES: list[Any] = [None, "text", "", 7, -1, 2.5, True, [], {}, ["x"], {"k": 1}]


class _Instances:
    """Documents drawn from a schema (pydantic's, with $defs): mostly valid, with a wrong value at random nodes."""

    def __init__(self, schema: dict[str, Any], seed: int) -> None:
        self._definitions = schema.get("$defs", {})
        self._random = random.Random(seed)

    def draw(self, node: dict[str, Any], depth: int = 0) -> Any:  # noqa: PLR0911 - one draw per kind of schema node
        if self._random.random() < 0.04:
            return self._random.choice(_OTHER_VALUES)
        if "$ref" in node:
            return self.draw(self._definitions[node["$ref"].rsplit("/", 1)[1]], depth)
        if "anyOf" in node:
            return self.draw(self._random.choice(node["anyOf"]), depth)
        if "const" in node:
            return node["const"]
        if "enum" in node:
            return self._random.choice(node["enum"])
        kind = node.get("type")
        if isinstance(kind, list):
            kind = self._random.choice(kind)
        if kind == "object":
            properties: dict[str, Any] = node.get("properties", {})
            required = set(node.get("required", ()))
            return {
                name: self.draw(child, depth + 1)
                for name, child in properties.items()
                if (name in required and self._random.random() > 0.03) or self._random.random() < 0.7
            }
        if kind == "array":
            count = 0 if depth > 4 else self._random.randint(0, 3)
            return [self.draw(node.get("items", {}), depth + 1) for _ in range(count)]
        return self._random.choice(_SCALARS.get(kind, _OTHER_VALUES))


_SCALARS: dict[Any, list[Any]] = {
    "string": ["a", "00000000-0000-4000-8000-000000000000", "2026-12-08T00:00:00Z", ""],
    "integer": [-2, 0, 1, 7, 50],
    "number": [0, 0.5, 1, 1.5, -0.1],
    "boolean": [True, False],
    "null": [None],
}


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.name)
def test_a_published_output_schema_accepts_and_refuses_what_pydantic_s_does(tool: Any) -> None:
    original = _schema(tool.result, "serialization")
    published = tool.output_schema()
    assert "$defs" not in published
    Draft202012Validator.check_schema(published)
    before, after = Draft202012Validator(original), Draft202012Validator(published)
    instances = _Instances(original, seed=sum(map(ord, tool.name)))
    verdicts = {True: 0, False: 0}
    for _ in range(300):
        document = instances.draw(original)
        valid = before.is_valid(document)
        assert after.is_valid(document) is valid, document
        verdicts[valid] += 1
    assert verdicts[True] > 0 and verdicts[False] > 0  # both kinds were compared


def test_optional_fields_become_type_unions_and_definitions_are_inlined() -> None:
    schema = {
        "$defs": {"Box": {"type": "object", "properties": {"left": {"type": "number", "minimum": 0}}}},
        "type": "object",
        "properties": {
            "box": {"anyOf": [{"$ref": "#/$defs/Box"}, {"type": "null"}], "default": None},
            "page": {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Page"},
            "kind": {"anyOf": [{"enum": ["a"], "type": "string"}, {"type": "null"}]},
        },
    }
    published = published_output_schema(schema)
    assert published["properties"]["page"] == {"type": ["integer", "null"], "title": "Page"}
    assert published["properties"]["box"] == {
        "type": ["object", "null"],
        "properties": {"left": {"type": "number", "minimum": 0}},
        "default": None,
    }
    # An enum constrains every type: it stays a union of branches.
    assert "anyOf" in published["properties"]["kind"]


def test_a_recursive_schema_is_published_as_it_was() -> None:
    schema = {
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node",
    }
    assert published_output_schema(schema) is schema


def test_a_constraint_beside_a_ref_or_a_type_beside_an_optional_keeps_applying() -> None:
    box = {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}
    schema = {
        "$defs": {"Box": box},
        "type": "object",
        "properties": {
            "box": {"$ref": "#/$defs/Box", "required": ["b"]},
            "count": {"type": "integer", "anyOf": [{"type": "string"}, {"type": "null"}]},
        },
    }
    before, after = Draft202012Validator(schema), Draft202012Validator(published_output_schema(schema))
    for document in ({"box": {"b": 1}}, {"box": {"a": 1}}, {"box": {"a": 1, "b": 2}}, {"count": "s"}, {"count": None}):
        assert after.is_valid(document) is before.is_valid(document), document
