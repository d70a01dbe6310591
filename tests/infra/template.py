"""Queries on a synthesized template that several infra tests share: one resource, a function by its handler,
the statements of its role."""

from collections.abc import Mapping
from typing import Any

from aws_cdk.assertions import Template

API_HANDLER = "functions.api.handler.handler"


def only(resources: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    assert len(resources) == 1, sorted(resources)
    return next(iter(resources.items()))


def function_with_handler(template: Template, handler: str) -> tuple[str, Mapping[str, Any]]:
    return only(template.find_resources("AWS::Lambda::Function", {"Properties": {"Handler": handler}}))


def role_statements(template: Template, function: Mapping[str, Any]) -> list[dict[str, Any]]:
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    statements: list[dict[str, Any]] = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return statements


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
