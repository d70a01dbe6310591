"""An answer model, when an environment names one: the API and MCP functions (the two that serve answers) get its
id and may invoke that model only; no other function gets it; without one neither may invoke any model but the
embedding model, and answers are evidence only. A cross-region inference profile is granted with the model it
routes to, in any region, through that profile only."""

import dataclasses
import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from infra.app import build_app
from infra.constructs.api import API_HANDLER
from infra.constructs.mcp import MCP_HANDLER
from infra.environments import settings_for
from tests.infra.synthesis import stand_in_console
from tests.infra.template import as_list, bedrock_models, function_with_handler, is_quire_handler, role_statements

ANSWER_MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
SUMMARY_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
PROFILE = "us.anthropic.claude-sonnet-4-20250514-v1:0"


def synthesized_with(
    root: Path, package_dirs: tuple[Path, Path], *, answer_model_id: str, summary_model_id: str | None = None
) -> Template:
    """The dev stack with these models, synthesized with the cdk-nag checks (a finding raises)."""
    settings = dataclasses.replace(
        settings_for("dev"), answer_model_id=answer_model_id, summary_model_id=summary_model_id
    )
    code_dir, layer_dir = package_dirs
    app, stack = build_app(
        "dev",
        outdir=str(root),
        code_dir=code_dir,
        layer_dir=layer_dir,
        console_dir=stand_in_console(root),
        settings=settings,
    )
    app.synth()
    return Template.from_stack(stack)


@pytest.fixture(scope="module")
def answering(tmp_path_factory: pytest.TempPathFactory, package_dirs: tuple[Path, Path]) -> Template:
    # A summary model beside it: each function's grants must name both, and each variable its own model.
    root = tmp_path_factory.mktemp("cdk-answer")
    return synthesized_with(root, package_dirs, answer_model_id=ANSWER_MODEL, summary_model_id=SUMMARY_MODEL)


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory, package_dirs: tuple[Path, Path]) -> Template:
    return synthesized_with(tmp_path_factory.mktemp("cdk-profile"), package_dirs, answer_model_id=PROFILE)


@pytest.mark.parametrize("handler", [API_HANDLER, MCP_HANDLER])
def test_the_functions_serving_answers_get_the_model_and_may_invoke_it_only(answering: Template, handler: str) -> None:
    _, function = function_with_handler(answering, handler)
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables["QUIRE_ANSWER_MODEL_ID"] == ANSWER_MODEL
    assert variables["QUIRE_SUMMARY_MODEL_ID"] == SUMMARY_MODEL
    models = bedrock_models(answering, function)
    assert {ANSWER_MODEL, SUMMARY_MODEL} <= models
    assert all(model.startswith(("amazon.titan-embed", ANSWER_MODEL, SUMMARY_MODEL)) for model in models)


def test_no_other_function_gets_the_answer_model(answering: Template) -> None:
    serving = {function_with_handler(answering, handler)[0] for handler in (API_HANDLER, MCP_HANDLER)}
    for logical_id, function in answering.find_resources("AWS::Lambda::Function").items():
        if logical_id in serving or not is_quire_handler(function["Properties"].get("Handler")):
            continue
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        assert "QUIRE_ANSWER_MODEL_ID" not in variables, logical_id
        assert ANSWER_MODEL not in bedrock_models(answering, function), logical_id


@pytest.mark.parametrize("handler", [API_HANDLER, MCP_HANDLER])
def test_without_an_answer_model_no_function_gets_one(synthesized: tuple[str, Template], handler: str) -> None:
    _, template = synthesized
    _, function = function_with_handler(template, handler)
    assert "QUIRE_ANSWER_MODEL_ID" not in function["Properties"]["Environment"]["Variables"]
    assert all(model.startswith("amazon.titan-embed") for model in bedrock_models(template, function))


@pytest.mark.parametrize("handler", [API_HANDLER, MCP_HANDLER])
def test_an_inference_profile_is_granted_with_its_model_through_that_profile_only(
    profiled: Template, handler: str
) -> None:
    _, function = function_with_handler(profiled, handler)
    assert function["Properties"]["Environment"]["Variables"]["QUIRE_ANSWER_MODEL_ID"] == PROFILE
    invoking = [s for s in role_statements(profiled, function) if "bedrock:InvokeModel" in as_list(s["Action"])]
    [profile_grant] = [s for s in invoking if "inference-profile/" in json.dumps(s["Resource"])]
    [profile_arn] = as_list(profile_grant["Resource"])
    assert json.dumps(profile_arn).endswith(f':inference-profile/{PROFILE}"]]}}')
    [model_grant] = [s for s in invoking if "foundation-model/anthropic.claude-sonnet-4" in json.dumps(s["Resource"])]
    [model_arn] = as_list(model_grant["Resource"])
    assert f":bedrock:*::foundation-model/{PROFILE.removeprefix('us.')}" in json.dumps(model_arn)
    assert model_grant["Condition"] == {"StringEquals": {"bedrock:InferenceProfileArn": profile_arn}}
    # Nothing else: the embedding model, the profile, and its model through it.
    assert len(invoking) == 3
