"""A summary model, when an environment names one: the API and MCP functions (the two that serve
summarize_document) get its id and may invoke that model only; without one neither may invoke any model but the
embedding model, and summaries are extractive outlines."""

import dataclasses
from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from infra.app import build_app
from infra.constructs.api import API_HANDLER
from infra.constructs.mcp import MCP_HANDLER
from infra.environments import settings_for
from tests.infra.synthesis import stand_in_console
from tests.infra.template import bedrock_models, function_with_handler

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"


@pytest.fixture(scope="module")
def summarizing(tmp_path_factory: pytest.TempPathFactory, package_dirs: tuple[Path, Path]) -> Template:
    settings = dataclasses.replace(settings_for("dev"), summary_model_id=MODEL)
    code_dir, layer_dir = package_dirs
    root = tmp_path_factory.mktemp("cdk-summary")
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


@pytest.mark.parametrize("handler", [API_HANDLER, MCP_HANDLER])
def test_the_functions_serving_summaries_get_the_model_and_may_invoke_it_only(
    summarizing: Template, handler: str
) -> None:
    _, function = function_with_handler(summarizing, handler)
    assert function["Properties"]["Environment"]["Variables"]["QUIRE_SUMMARY_MODEL_ID"] == MODEL
    assert MODEL in bedrock_models(summarizing, function)
    assert all(model.startswith(("amazon.titan-embed", MODEL)) for model in bedrock_models(summarizing, function))


@pytest.mark.parametrize("handler", [API_HANDLER, MCP_HANDLER])
def test_without_a_summary_model_no_function_gets_one(synthesized: tuple[str, Template], handler: str) -> None:
    _, template = synthesized
    _, function = function_with_handler(template, handler)
    assert "QUIRE_SUMMARY_MODEL_ID" not in function["Properties"]["Environment"]["Variables"]
    assert all(model.startswith("amazon.titan-embed") for model in bedrock_models(template, function))
