"""The dev template deployed into moto's CloudFormation: what CloudFormation resolves is what the functions and
the state machine run with, so every reference must land on a resource the stack created (or on one that
stands in, listed in tests/builders/moto_stack.py:STAND_INS)."""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.cloudformation.parsing import get_model_map

from tests.builders.deployed_functions import client
from tests.builders.moto_stack import ACCOUNT, STAND_INS, DeployedStack, deploy


@pytest.fixture(scope="module")
def deployed(dev_assembly: Path, aws_credentials: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # Other modules' S3 servers keep their data in moto's process-wide backend: nothing is reset or removed.
    mock = mock_aws(config={"lambda": {"use_docker": False}})
    mock.start(reset=False)
    stack = None
    try:
        stack = deploy(
            dev_assembly,
            tmp_path_factory.mktemp("assets"),
            supported=lambda kind: kind in get_model_map(),
            stack_name="Quire-dev-resolved",
            clients=lambda service: client(boto3.Session(), service),
        )
        yield stack
    finally:
        if stack is not None:
            stack.release_names(client(boto3.Session(), "logs"))
        mock.stop(remove_data=False)


def test_every_resource_is_created_or_stood_in_for_with_a_reason(deployed: DeployedStack, dev_assembly: Path) -> None:
    import json

    (template_path,) = dev_assembly.glob("*.template.json")
    declared = json.loads(template_path.read_text())["Resources"]
    stood_in = {s.logical_id for s in deployed.stand_ins}
    assert set(declared) == set(deployed.physical_ids) | stood_in
    assert not set(deployed.physical_ids) & stood_in
    # What stands in is named per type, and a type is only stood in for when moto cannot create it.
    assert {s.resource_type for s in deployed.stand_ins} <= set(STAND_INS)
    assert all(s.stood_in_by for s in deployed.stand_ins)
    assert "AWS::Lambda::Function" not in {s.resource_type for s in deployed.stand_ins}
    assert "AWS::StepFunctions::StateMachine" not in {s.resource_type for s in deployed.stand_ins}


def _arns(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _arns(item)
    elif isinstance(value, list):
        for item in value:
            yield from _arns(item)
    elif isinstance(value, str) and value.startswith("arn:"):
        yield value


def test_the_state_machine_invokes_only_functions_the_stack_created(deployed: DeployedStack) -> None:
    function_arns = {f.arn for f in deployed.functions.values()}
    invoked = {
        state["Resource"] if state["Resource"].startswith("arn:aws:lambda") else state["Parameters"]["FunctionName"]
        for state in _task_states(deployed.definition)
    }
    assert invoked, "the definition invokes functions"
    assert invoked <= function_arns, invoked - function_arns
    assert deployed.outputs["StateMachineArn"] == deployed.state_machine_arn


def _task_states(definition: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for state in definition["States"].values():
        if state["Type"] == "Task":
            yield state
        for branch in [state.get("ItemProcessor") or state.get("Iterator"), *state.get("Branches", [])]:
            if branch:
                yield from _task_states(branch)


def test_every_environment_reference_resolves_to_what_the_stack_created(deployed: DeployedStack) -> None:
    function_names = {f.name for f in deployed.functions.values()}
    iam = client(boto3.Session(), "iam")
    role_arns = {role["Arn"] for page in iam.get_paginator("list_roles").paginate() for role in page["Roles"]}
    buckets = {b["Name"] for b in client(boto3.Session(), "s3").list_buckets()["Buckets"]}
    checked = 0
    for function in deployed.functions.values():
        env = function.environment
        assert not any("${Token" in value or "{{resolve" in value for value in env.values()), function.logical_id
        if "QUIRE_STATE_MACHINE_ARN" in env:
            assert env["QUIRE_STATE_MACHINE_ARN"] == deployed.state_machine_arn
            checked += 1
        if "QUIRE_BUCKET" in env:
            assert env["QUIRE_BUCKET"] in buckets and env["QUIRE_BUCKET"] == deployed.outputs["OriginalsBucketName"]
            checked += 1
        if "QUIRE_RENDER_FUNCTION_NAME" in env:
            assert env["QUIRE_RENDER_FUNCTION_NAME"] in function_names
            checked += 1
        if "QUIRE_TENANT_DATA_ROLE_ARN" in env:
            assert env["QUIRE_TENANT_DATA_ROLE_ARN"] in role_arns
            checked += 1
    assert checked >= 20


def test_every_arn_a_function_role_is_granted_names_a_created_or_stood_in_resource(deployed: DeployedStack) -> None:
    iam = client(boto3.Session(), "iam")
    # A physical id may be a URL or an ARN (a queue's is its URL): its last segment names the resource too.
    created = {name for p in deployed.physical_ids.values() for name in (p, re.split(r"[:/]", p)[-1])}
    # A stand-in's id as a policy may take it apart (a proxy's prx-… id split out of its ARN).
    stand_in_parts = {part for value in deployed.stand_in_values for part in re.split(r"[:/]", value) if len(part) >= 8}
    unresolved = []
    for function in deployed.functions.values():
        for name in iam.list_role_policies(RoleName=function.role_name)["PolicyNames"]:
            document = iam.get_role_policy(RoleName=function.role_name, PolicyName=name)["PolicyDocument"]
            for statement in document["Statement"]:
                for arn in _arns(statement.get("Resource", [])):
                    named = re.split(r"[:/]", arn)
                    account_ok = arn.split(":")[4] in ("", ACCOUNT, "aws")
                    known = any(part in created or part in stand_in_parts for part in named)
                    foundation_model = ":foundation-model/" in arn or ":inference-profile/" in arn
                    if not account_ok or not (known or foundation_model or "*" in arn):
                        unresolved.append((function.logical_id, arn))
    assert unresolved == []


def test_the_definition_cloudformation_resolved_passes_asl_validator(deployed: DeployedStack) -> None:
    from tests.infra.linting import asl_findings

    # Every function ARN real (as CloudFormation made it), not a placeholder.
    assert asl_findings(deployed.definition) == []
