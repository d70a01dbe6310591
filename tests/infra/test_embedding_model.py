"""The embedding model is an environment's setting: every Quire function gets its id, and the three that embed (the
pipeline's embed step, the API and MCP functions' query embeddings) may invoke that one foundation model and no other;
no function may invoke the model the environment did not choose. Synthesized with the cdk-nag checks."""

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.constructs.api import API_HANDLER
from infra.constructs.mcp import MCP_HANDLER
from infra.environments import EMBEDDING_MODELS, settings_for
from tests.infra.synthesis import synthesized_dev
from tests.infra.template import as_list, as_text, function_with_handler, is_quire_handler, role_statements

TITAN = "amazon.titan-embed-text-v2:0"
COHERE = "cohere.embed-multilingual-v3"
EMBEDDING_FUNCTIONS = ("functions.embed.handler.handler", API_HANDLER, MCP_HANDLER)


def synthesized_with(root: Path, package_dirs: tuple[Path, Path], *, embedding_model_id: str) -> Template:
    """The dev stack with this embedding model, synthesized with the cdk-nag checks (a finding raises)."""
    return synthesized_dev(root, package_dirs, embedding_model_id=embedding_model_id)


@pytest.fixture(scope="module", params=[TITAN, COHERE])
def configured(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, package_dirs: tuple[Path, Path]
) -> tuple[str, Template]:
    model: str = request.param
    root = tmp_path_factory.mktemp(f"cdk-embedding-{model.split('.', maxsplit=1)[0]}")
    return model, synthesized_with(root, package_dirs, embedding_model_id=model)


def invoked_models(template: Template, function: Any) -> list[str]:
    """Every resource the function's role may call bedrock:InvokeModel on, as text."""
    return [
        as_text(resource)
        for statement in role_statements(template, function)
        if "bedrock:InvokeModel" in as_list(statement["Action"])
        for resource in as_list(statement["Resource"])
    ]


def quire_functions(template: Template) -> dict[str, Any]:
    return {
        logical_id: function
        for logical_id, function in template.find_resources("AWS::Lambda::Function").items()
        if is_quire_handler(function["Properties"].get("Handler"))
    }


@pytest.mark.parametrize("handler", EMBEDDING_FUNCTIONS)
def test_the_functions_that_embed_may_invoke_exactly_the_configured_model(
    configured: tuple[str, Template], handler: str
) -> None:
    model, template = configured
    _, function = function_with_handler(template, handler)
    assert invoked_models(template, function) == [
        f"arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/{model}"
    ]


def test_every_function_is_told_the_model_and_none_may_invoke_the_other(configured: tuple[str, Template]) -> None:
    model, template = configured
    (other,) = set(EMBEDDING_MODELS) - {model}
    functions = quire_functions(template)
    assert len(functions) > len(EMBEDDING_FUNCTIONS)
    for logical_id, function in functions.items():
        assert function["Properties"]["Environment"]["Variables"]["QUIRE_BEDROCK_EMBEDDING_MODEL_ID"] == model
        assert not [arn for arn in invoked_models(template, function) if other in arn], logical_id


def test_an_embedding_model_quire_does_not_read_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"dev: embedding_model_id 'cohere.embed-english-v3' .* one of") as raised:
        dataclasses.replace(settings_for("dev"), embedding_model_id="cohere.embed-english-v3")
    assert TITAN in str(raised.value) and COHERE in str(raised.value)


def test_the_runtime_takes_the_models_the_environments_offer() -> None:
    # infra never imports runtime code: this test holds the two lists together.
    from shared.adapters.aws.bedrock_embeddings import TITAN_V2_MODEL_ID
    from shared.adapters.aws.cohere_embeddings import COHERE_MULTILINGUAL_V3_MODEL_ID

    assert EMBEDDING_MODELS == (TITAN_V2_MODEL_ID, COHERE_MULTILINGUAL_V3_MODEL_ID)
    assert settings_for("dev").embedding_model_id == settings_for("prod").embedding_model_id == TITAN
