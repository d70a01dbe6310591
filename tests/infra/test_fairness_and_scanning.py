"""Reserved concurrency (an upload flood cannot starve search or sign-in) and the optional GuardDuty malware
scan (its verdict, not the upload, starts processing), on the synthesized template."""

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.app import build_app
from infra.constructs.pipeline import MALWARE_SCAN_RESULT
from infra.environments import (
    DEFAULT_ACCOUNT_CONCURRENCY,
    ENVIRONMENTS,
    UNRESERVED_CONCURRENCY_MINIMUM,
    settings_for,
)
from tests.infra.synthesis import stand_in_console, synthesized_dev
from tests.infra.template import (
    API_HANDLER,
    MCP_HANDLER,
    function_with_handler,
    is_quire_handler,
    role_statements,
    tenant_data_statements,
)

VERDICT_HANDLER = "functions.malware_verdict.handler.handler"
OBJECT_CREATED_HANDLER = "functions.on_object_created.handler.handler"
PIPELINE_HANDLERS = (
    OBJECT_CREATED_HANDLER,
    *(
        f"functions.{step}.handler.handler"
        for step in ("inspect", "extract", "recognize", "chunk", "embed", "index", "publish", "record_failure")
    ),
    "functions.render.handler.handler",
    "functions.reconcile.handler.handler",
)


def reservations(template: Template) -> dict[str, int | None]:
    return {
        function["Properties"]["Handler"]: function["Properties"].get("ReservedConcurrentExecutions")
        for function in template.find_resources("AWS::Lambda::Function").values()
        if is_quire_handler(function["Properties"].get("Handler"))
    }


@pytest.fixture(scope="module")
def scanning(tmp_path_factory: pytest.TempPathFactory, package_dirs: tuple[Path, Path]) -> Template:
    """dev with malware scanning on: synthesized with the cdk-nag checks like every environment."""
    return synthesized_dev(tmp_path_factory.mktemp("cdk-scanning"), package_dirs, malware_scanning="guardduty")


def test_prod_reserves_concurrency_for_the_api_sign_in_and_every_pipeline_function(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    reserved = settings_for(env).reserved_concurrency
    found = reservations(template)
    if reserved is None:
        # dev: a new account's quota is often below what Lambda keeps unreserved; nothing is reserved.
        assert set(found.values()) == {None}
        return
    assert found[API_HANDLER] == reserved.api
    assert found[MCP_HANDLER] == reserved.mcp
    assert found["functions.token_claims.handler.handler"] == reserved.sign_in
    for handler in PIPELINE_HANDLERS:
        assert found[handler] is not None, handler
    assert found["functions.reconcile.handler.handler"] == 1
    # The pipeline's whole share cannot take the API's: they are separate reservations.
    assert (found[API_HANDLER] or 0) > max(found[handler] or 0 for handler in PIPELINE_HANDLERS)


@pytest.mark.parametrize("env", sorted(ENVIRONMENTS))
def test_the_reservations_leave_lambdas_unreserved_minimum_of_the_default_quota(
    env: str, tmp_path_factory: pytest.TempPathFactory, package_dirs: tuple[Path, Path]
) -> None:
    """Lambda refuses a reservation that leaves fewer than 100 unreserved executions in the account."""
    code_dir, layer_dir = package_dirs
    scanning_on = dataclasses.replace(settings_for(env), malware_scanning="guardduty")
    root = tmp_path_factory.mktemp("cdk-sum")
    _, stack = build_app(
        env,
        outdir=str(root),
        code_dir=code_dir,
        layer_dir=layer_dir,
        console_dir=stand_in_console(root),
        settings=scanning_on,
    )
    # With the largest set of functions: scanning adds the verdict's.
    total = sum(value or 0 for value in reservations(Template.from_stack(stack)).values())
    assert total <= DEFAULT_ACCOUNT_CONCURRENCY - UNRESERVED_CONCURRENCY_MINIMUM


def test_scanning_is_off_by_default_everywhere(synthesized: tuple[str, Template]) -> None:
    env, template = synthesized
    assert settings_for(env).malware_scanning == "off"
    assert template.find_resources("AWS::GuardDuty::MalwareProtectionPlan") == {}
    assert VERDICT_HANDLER not in reservations(template)
    # Off is said to every function, so none of them holds processing back for a verdict that never comes.
    for function in template.find_resources("AWS::Lambda::Function").values():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        if "QUIRE_RUNTIME" in variables:
            assert variables["QUIRE_MALWARE_SCANNING"] == "off", function["Properties"].get("Handler")


def test_with_scanning_on_guardduty_scans_the_originals_under_tenants_and_tags_its_verdict(scanning: Template) -> None:
    ((_, plan),) = scanning.find_resources("AWS::GuardDuty::MalwareProtectionPlan").items()
    properties = plan["Properties"]
    bucket = properties["ProtectedResource"]["S3Bucket"]
    assert bucket["ObjectPrefixes"] == ["tenants/"]
    assert "Originals" in bucket["BucketName"]["Ref"]
    assert properties["Actions"] == {"Tagging": {"Status": "ENABLED"}}
    role_id = properties["Role"]["Fn::GetAtt"][0]
    role = scanning.to_json()["Resources"][role_id]
    (trust,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "malware-protection-plan.guardduty.amazonaws.com"}
    assert role_id in plan.get("DependsOn", [])
    granted = {
        action
        for policy in scanning.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        for action in statement["Action"]
    }
    assert {
        "s3:GetObjectVersion",
        "s3:PutObjectVersionTagging",
        "events:PutRule",
        "s3:PutBucketNotification",
    } <= granted
    assert not [action for action in granted if action.startswith("s3:Delete")]


def test_with_scanning_on_the_verdict_starts_processing_and_the_upload_does_not(scanning: Template) -> None:
    verdict_id, verdict = function_with_handler(scanning, VERDICT_HANDLER)
    _, created = function_with_handler(scanning, OBJECT_CREATED_HANDLER)
    # on_object_created records the upload but leaves starting its processing to the verdict; and so does every
    # other function that may ask for processing (the sweeps, the API, the verdict itself, the steps): one that
    # did not know would start it unscanned.
    assert created["Properties"]["Environment"]["Variables"]["QUIRE_MALWARE_SCANNING"] == "guardduty"
    quire_functions = {
        function["Properties"]["Handler"]: function["Properties"]["Environment"]["Variables"]
        for function in scanning.find_resources("AWS::Lambda::Function").values()
        if "QUIRE_RUNTIME" in function["Properties"].get("Environment", {}).get("Variables", {})
    }
    assert {"functions.reconcile.handler.handler", "functions.api.handler.handler", VERDICT_HANDLER} <= set(
        quire_functions
    )
    assert {handler: v["QUIRE_MALWARE_SCANNING"] for handler, v in quire_functions.items()} == dict.fromkeys(
        quire_functions, "guardduty"
    )
    plan_id = next(iter(scanning.find_resources("AWS::GuardDuty::MalwareProtectionPlan")))
    rules: list[Mapping[str, Any]] = [
        rule["Properties"]
        for rule in scanning.find_resources("AWS::Events::Rule").values()
        if rule["Properties"]["EventPattern"]["source"] == ["aws.guardduty"]
    ]
    (rule,) = rules
    pattern = rule["EventPattern"]
    assert pattern["detail-type"] == [MALWARE_SCAN_RESULT] == ["GuardDuty Malware Protection Object Scan Result"]
    # This stack's plan and bucket only: another bucket's results never reach the function.
    assert pattern["resources"] == [{"Fn::GetAtt": [plan_id, "Arn"]}]
    assert "Originals" in pattern["detail"]["s3ObjectDetails"]["bucketName"][0]["Ref"]
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [verdict_id, "Arn"]} and "DeadLetterConfig" in target
    # It may start the version's execution and remove an infected upload's bytes, for its tenant only.
    assert any("states:StartExecution" in str(s["Action"]) for s in role_statements(scanning, verdict))
    data = tenant_data_statements(scanning, verdict)
    deletes = [s for s in data if "s3:DeleteObjectVersion" in s["Action"]]
    assert deletes and all("${aws:PrincipalTag/tenant}" in str(s["Resource"]) for s in deletes)
