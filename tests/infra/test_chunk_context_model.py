"""A chunk context model, when an environment names one (issue 37 item 1): every function knows its id (the chunk step
sends the document's head with the batches, the API's re-index counts versions it has not situated), the embed
step's function alone may invoke it; without one no function knows one and the embed step may invoke the embedding
model only."""

from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from tests.infra.synthesis import synthesized_dev
from tests.infra.template import bedrock_models, function_with_handler, is_quire_handler

CONTEXT_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
EMBED_HANDLER = "functions.embed.handler.handler"


@pytest.fixture(scope="module")
def situating(tmp_path_factory: pytest.TempPathFactory, package_dirs: tuple[Path, Path]) -> Template:
    """The dev stack with a chunk context model, synthesized with the cdk-nag checks (a finding raises)."""
    return synthesized_dev(tmp_path_factory.mktemp("cdk-context"), package_dirs, chunk_context_model_id=CONTEXT_MODEL)


def test_the_embed_step_alone_may_invoke_the_chunk_context_model(situating: Template) -> None:
    embed_id, embed = function_with_handler(situating, EMBED_HANDLER)
    models = bedrock_models(situating, embed)
    assert CONTEXT_MODEL in models and all(m.startswith(("amazon.titan-embed", CONTEXT_MODEL)) for m in models)
    checked = 0
    for logical_id, function in situating.find_resources("AWS::Lambda::Function").items():
        if not is_quire_handler(function["Properties"].get("Handler")):
            continue
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        assert variables.get("QUIRE_CHUNK_CONTEXT_MODEL_ID") == CONTEXT_MODEL, logical_id
        if logical_id != embed_id:
            assert CONTEXT_MODEL not in bedrock_models(situating, function), logical_id
        checked += 1
    assert checked > 10  # the steps, the API, MCP, the sweeps


def test_without_a_chunk_context_model_the_embed_step_invokes_the_embedding_model_only(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    _, embed = function_with_handler(template, EMBED_HANDLER)
    assert "QUIRE_CHUNK_CONTEXT_MODEL_ID" not in embed["Properties"]["Environment"]["Variables"]
    assert all(model.startswith("amazon.titan-embed") for model in bedrock_models(template, embed))
