"""The render function on the synthesized template: its own grants only (what a render reads and the rendered
file's key), asynchronous invocation with retries and a dead-letter queue, and who may hand it work."""

import json
import re
from collections.abc import Mapping
from typing import Any

from aws_cdk.assertions import Template

from infra.constructs.rendering import RENDER_HANDLER, RENDER_TIMEOUT_SECONDS
from tests.infra.template import (
    API_HANDLER,
    MCP_HANDLER,
    as_list,
    function_with_handler,
    role_statements,
    tenant_data_statements,
)

RECONCILE_HANDLER = "functions.reconcile.handler.handler"


def grants(template: Template, function: Mapping[str, Any], *, tenant_data: bool = False) -> dict[str, list[str]]:
    """What the function's own role grants, or with `tenant_data`, what a session of one tenant's does."""
    granted: dict[str, list[str]] = {}
    statements = tenant_data_statements(template, function) if tenant_data else role_statements(template, function)
    for statement in statements:
        assert statement["Effect"] == "Allow"
        for action in as_list(statement["Action"]):
            granted.setdefault(action, []).extend(json.dumps(resource) for resource in as_list(statement["Resource"]))
    return granted


def prefixes(resources: list[str]) -> list[str]:
    return sorted(re.search(r'"(/[^"]*)"\]\]\}$', resource)[1] for resource in resources)  # type: ignore[index]


def test_the_render_function_reads_what_it_renders_and_writes_only_file_versions(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    _, function = function_with_handler(template, RENDER_HANDLER)
    properties = function["Properties"]
    assert properties["Timeout"] > RENDER_TIMEOUT_SECONDS and properties["MemorySize"] >= 3008
    assert properties["Environment"]["Variables"]["QUIRE_RENDER_TIMEOUT_SECONDS"] == str(RENDER_TIMEOUT_SECONDS)
    assert properties["VpcConfig"]["SecurityGroupIds"]  # it reaches the database, in the VPC
    granted = grants(template, function)
    # No tenant's objects through its own role; each render reads and writes through its job's tenant's session.
    assert not [action for action in granted if action.startswith("s3:")]
    s3 = grants(template, function, tenant_data=True)
    tenant = "${aws:PrincipalTag/tenant}"
    assert set(s3) == {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:ListBucket"}
    assert prefixes(s3["s3:PutObject"]) == [f"/tenants/{tenant}/files/*"]
    assert prefixes(s3["s3:GetObject"]) == [
        f"/derived/tenants/{tenant}/artifacts/*",
        f"/derived/tenants/{tenant}/files/*",
        f"/tenants/{tenant}/*",
    ]
    assert prefixes(s3["s3:GetObjectVersion"]) == [f"/tenants/{tenant}/*"]
    # Nothing else: no deletes, no models, no workflow, no other function.
    everything = {**granted, **s3}
    assert not [a for a in everything if a.startswith(("s3:Delete", "bedrock:", "states:", "lambda:", "textract:"))]
    assert "rds-db:connect" in granted


def test_renders_are_asynchronous_with_retries_and_a_dead_letter_queue(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    function_id, _ = function_with_handler(template, RENDER_HANDLER)
    configs = template.find_resources("AWS::Lambda::EventInvokeConfig")
    (config,) = [c for c in configs.values() if c["Properties"]["FunctionName"] == {"Ref": function_id}]
    assert config["Properties"]["MaximumRetryAttempts"] == 2
    assert "OnFailure" in config["Properties"]["DestinationConfig"]


def test_the_api_the_mcp_server_and_the_sweep_may_hand_it_renders_and_nothing_else_may(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    render_id, _ = function_with_handler(template, RENDER_HANDLER)
    callers = []
    for function_id, function in template.find_resources("AWS::Lambda::Function").items():
        invoke = grants(template, function).get("lambda:InvokeFunction", [])
        if any(render_id in resource for resource in invoke):
            callers.append(function["Properties"]["Handler"])
            assert function["Properties"]["Environment"]["Variables"]["QUIRE_RENDER_FUNCTION_NAME"] == {
                "Ref": render_id
            }
            assert function_id != render_id
    assert sorted(callers) == sorted([API_HANDLER, MCP_HANDLER, RECONCILE_HANDLER])
