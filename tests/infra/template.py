"""Queries on a synthesized template that several infra tests share: one resource, a function by its handler,
the statements of its role."""

import json
import re
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


def as_text(value: Any) -> str:
    """A CloudFormation string as text, each reference named: {"Ref": X} reads <X>, {"Fn::GetAtt": [X, A]}
    reads <X.A>, Fn::Join joins its parts so rendered, Fn::Sub (without variables of its own) is its text, and
    any other function is its JSON."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::GetAtt" in value:
        resource, attribute = value["Fn::GetAtt"]
        return f"<{resource}.{attribute}>"
    if "Fn::Sub" in value and isinstance(value["Fn::Sub"], str):
        return str(value["Fn::Sub"])
    if "Fn::Join" not in value:
        return json.dumps(value, sort_keys=True)
    separator, parts = value["Fn::Join"]
    return str(separator).join(as_text(part) for part in parts)


def dependencies(template: Template) -> dict[str, set[str]]:
    """Each resource's logical id, and the resources it refers to (Ref, Fn::GetAtt, Fn::Sub) or DependsOn."""
    resources = template.to_json()["Resources"]

    def referred(value: Any) -> set[str]:
        if isinstance(value, list):
            return set().union(*(referred(item) for item in value))
        if not isinstance(value, dict):
            return set()
        found = set().union(*(referred(item) for item in value.values()))
        if "Ref" in value:
            found.add(value["Ref"])
        if "Fn::GetAtt" in value:
            target = value["Fn::GetAtt"]
            found.add(target[0] if isinstance(target, list) else target.split(".")[0])
        if "Fn::Sub" in value:
            text = value["Fn::Sub"] if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"][0]
            found.update(re.findall(r"\$\{([^}.!]+)", text))
        return found

    graph = {}
    for logical_id, resource in resources.items():
        depends_on = resource.get("DependsOn", [])
        named = referred(resource.get("Properties", {})) | set(as_list(depends_on))
        graph[logical_id] = {name for name in named if name in resources}
    return graph
