"""Queries on a synthesized template that several infra tests share: one resource, a function by its handler,
the statements of its role."""

import json
from collections.abc import Mapping
from typing import Any

from aws_cdk.assertions import Template

API_HANDLER = "functions.api.handler.handler"
# The MCP function's handler is a path its Lambda Web Adapter wrapper executes, not a dotted name.
MCP_HANDLER = "functions/mcp/run.sh"


def is_quire_handler(handler: object) -> bool:
    """A handler of Quire's own code (a dotted path under functions/, or the MCP server's script), not one of the
    CDK's helper functions."""
    return isinstance(handler, str) and (handler.startswith("functions.") or handler == MCP_HANDLER)


def only(resources: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    assert len(resources) == 1, sorted(resources)
    return next(iter(resources.items()))


def function_with_handler(template: Template, handler: str) -> tuple[str, Mapping[str, Any]]:
    return only(template.find_resources("AWS::Lambda::Function", {"Properties": {"Handler": handler}}))


def role_statements(template: Template, function: Mapping[str, Any]) -> list[dict[str, Any]]:
    return statements_of_role(template, function["Properties"]["Role"]["Fn::GetAtt"][0])


def tenant_data_role_id(function: Mapping[str, Any]) -> str:
    """The role the function assumes per tenant (infra/constructs/tenant_data.py), named in its environment."""
    arn = function["Properties"]["Environment"]["Variables"]["QUIRE_TENANT_DATA_ROLE_ARN"]
    role_id, attribute = arn["Fn::GetAtt"]
    assert attribute == "Arn"
    return str(role_id)


def tenant_data_statements(template: Template, function: Mapping[str, Any]) -> list[dict[str, Any]]:
    return statements_of_role(template, tenant_data_role_id(function))


def statements_of_role(template: Template, role_id: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return statements


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def bedrock_models(template: Template, function: Any) -> set[str]:
    found: set[str] = set()
    for statement in role_statements(template, function):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if "bedrock:InvokeModel" in actions:
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            found.update(json.dumps(resource).split("foundation-model/")[-1].strip('"]}') for resource in resources)
    return found
