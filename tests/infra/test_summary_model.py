"""A summary model, when an environment names one: the API and MCP functions (the two that serve
summarize_document) get its id and may invoke that model only; without one neither may invoke any model but the
embedding model, and summaries are extractive outlines."""

from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from infra.constructs.api import API_HANDLER
from infra.constructs.mcp import MCP_HANDLER
from tests.infra.synthesis import synthesized_dev
from tests.infra.template import bedrock_models, function_with_handler

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"


@pytest.fixture(scope="module")
def summarizing(tmp_path_factory: pytest.TempPathFactory, package_dirs: tuple[Path, Path]) -> Template:
    return synthesized_dev(tmp_path_factory.mktemp("cdk-summary"), package_dirs, summary_model_id=MODEL)


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
