"""What CloudFormation and Step Functions would reject (tests/infra/linting.py): cfn-lint over each environment's
synthesized template and asl-validator over its state machine definition find nothing that is not acknowledged,
and each checker does fail on a deliberately broken input."""

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.infra.linting import (
    Finding,
    asl_findings,
    cfn_lint_findings,
    unacknowledged,
    unused_acknowledgements,
)
from tests.infra.synthesis import Synthesis, state_machine_definition


class _PlaceholderArn(dict[str, str]):
    """Until the definition comes resolved from a deployment into moto: a well-formed Lambda ARN per function."""

    def __missing__(self, logical_id: str) -> str:
        return f"arn:aws:lambda:us-east-1:123456789012:function:{logical_id}"


@pytest.fixture(scope="session")
def template_findings(synthesis: Synthesis) -> list[Finding]:
    (template_path,) = synthesis.outdir.glob("*.template.json")
    return cfn_lint_findings(template_path)


@pytest.fixture
def definition(synthesis: Synthesis) -> dict[str, Any]:
    return state_machine_definition(synthesis.template, _PlaceholderArn())[0]


def test_cfn_lint_finds_nothing_unacknowledged_in_the_template(template_findings: list[Finding]) -> None:
    assert unacknowledged(template_findings) == []


def test_every_acknowledged_finding_is_still_found(template_findings: list[Finding]) -> None:
    assert unused_acknowledgements(template_findings) == []


def test_an_acknowledgement_covers_its_rule_on_its_own_resource_only() -> None:
    own_role = Finding(
        rule="W3005",
        location="Resources/ApiFunction6BF808ED/DependsOn/1",
        message="'ApiFunctionRole63D8AA64' dependency already enforced by a 'GetAtt' at "
        "'Resources/ApiFunction6BF808ED/Properties/Role'",
    )
    anothers_role = Finding(
        rule="W3005",
        location="Resources/ApiFunction6BF808ED/DependsOn/2",
        message="'McpFunctionRoleC453FA28' dependency already enforced by a 'GetAtt' at "
        "'Resources/McpFunctionD30E3E93/Properties/Role'",
    )
    other_rule = Finding(rule="W3037", location=own_role.location, message=own_role.message)

    assert unacknowledged([own_role, anothers_role, other_rule]) == [anothers_role, other_rule]


def test_asl_validator_finds_nothing_in_the_state_machine_definition(definition: dict[str, Any]) -> None:
    assert unacknowledged(asl_findings(definition)) == []


def test_asl_validator_finds_a_next_to_nowhere_and_a_state_nothing_reaches(definition: dict[str, Any]) -> None:
    broken = copy.deepcopy(definition)
    start = broken["StartAt"]
    assert "Next" in broken["States"][start], "the first state leads somewhere"
    broken["States"][start]["Next"] = "Nowhere"
    broken["States"]["Orphan"] = {"Type": "Succeed"}

    messages = {(finding.rule, finding.message) for finding in asl_findings(broken)}

    assert ("MISSING_TRANSITION_TARGET", "Missing 'StartAt'|'Next'|'Default' target: Nowhere") in messages
    assert ("MISSING_TRANSITION_TARGET", "State Orphan is not reachable") in messages


# A function, its role and the role's policy, as the CDK writes them: the smallest template both mistakes fit in.
def _function_template(*, timeout: int, action: str) -> dict[str, Any]:
    return {
        "Resources": {
            "HandlerRole": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "AssumeRolePolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "lambda.amazonaws.com"},
                                "Action": "sts:AssumeRole",
                            }
                        ],
                    }
                },
            },
            "HandlerRoleDefaultPolicy": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "PolicyName": "HandlerRoleDefaultPolicy",
                    "Roles": [{"Ref": "HandlerRole"}],
                    "PolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [{"Effect": "Allow", "Action": action, "Resource": "arn:aws:s3:::originals/*"}],
                    },
                },
            },
            "Handler": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Runtime": "python3.12",
                    "Architectures": ["arm64"],
                    "Handler": "functions.api.handler.handler",
                    "Code": {"ZipFile": "def handler(event, context): return event"},
                    "Role": {"Fn::GetAtt": ["HandlerRole", "Arn"]},
                    "Timeout": timeout,
                },
            },
        }
    }


def _lint(template: dict[str, Any], path: Path) -> list[Finding]:
    path.write_text(json.dumps(template))
    return cfn_lint_findings(path)


def test_cfn_lint_finds_a_lambda_timeout_over_900_seconds_and_a_misspelt_iam_action(tmp_path: Path) -> None:
    assert _lint(_function_template(timeout=900, action="s3:GetObject"), tmp_path / "sound.json") == []

    findings = _lint(_function_template(timeout=901, action="s3:GetObjekt"), tmp_path / "broken.json")

    by_location = {finding.location: finding.rule for finding in findings}
    assert by_location == {
        "Resources/Handler/Properties/Timeout": "E3717",
        "Resources/HandlerRoleDefaultPolicy/Properties/PolicyDocument/Statement/0/Action": "W3037",
    }, findings


def test_cfn_lint_leaves_a_joined_definition_string_to_asl_validator(tmp_path: Path) -> None:
    """Why both checkers: the CDK joins a definition that names a function's ARN (`Fn::Join`), and cfn-lint checks
    the ASL of a literal definition string only. A misspelt state type passes cfn-lint when joined."""
    misspelt = {
        "StartAt": "Inspect",
        "States": {"Inspect": {"Type": "Taskk", "Resource": "FUNCTION", "End": True}},
    }
    text = json.dumps(misspelt)
    before, after = text.split("FUNCTION")
    joined = {"Fn::Join": ["", [before, {"Fn::GetAtt": ["Handler", "Arn"]}, after]]}
    template = _function_template(timeout=30, action="s3:GetObject")
    template["Resources"]["Machine"] = {
        "Type": "AWS::StepFunctions::StateMachine",
        "Properties": {"RoleArn": {"Fn::GetAtt": ["HandlerRole", "Arn"]}, "DefinitionString": joined},
    }

    assert _lint(template, tmp_path / "joined.json") == []

    template["Resources"]["Machine"]["Properties"]["DefinitionString"] = text
    assert [finding.rule for finding in _lint(template, tmp_path / "literal.json")] == ["E3601"]

    resolved = json.loads(text.replace("FUNCTION", "arn:aws:lambda:us-east-1:123456789012:function:Handler"))
    assert [(finding.rule, finding.location) for finding in asl_findings(resolved)] == [
        ("SCHEMA_VALIDATION_FAILED", "/States/Inspect/Type")
    ]
