"""A rerank model, when an environment names one: the API and MCP functions (the two that search) get its id, may
invoke that foundation model only and call the agent runtime's Rerank (an action with no resource type), reached
through an agent runtime endpoint in the VPC; no other function gets any of it; without one nothing of it is in the
template and the identifier booster reranks. Synthesized with the cdk-nag checks (a finding raises)."""

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.constructs.api import API_HANDLER
from infra.constructs.mcp import MCP_HANDLER
from infra.environments import RERANK_MODELS, settings_for
from tests.infra.synthesis import synthesized_dev
from tests.infra.template import as_list, as_text, function_with_handler, is_quire_handler, role_statements

COHERE = "cohere.rerank-v3-5:0"
AMAZON = "amazon.rerank-v1:0"
SEARCHING = (API_HANDLER, MCP_HANDLER)


@pytest.fixture(scope="module")
def reranking(tmp_path_factory: pytest.TempPathFactory, package_dirs: tuple[Path, Path]) -> Template:
    return synthesized_dev(tmp_path_factory.mktemp("cdk-rerank"), package_dirs, rerank_model_id=COHERE)


def granted(template: Template, function: Any, action: str) -> list[str]:
    """Every resource the function's role may `action`, as text."""
    return [
        as_text(resource)
        for statement in role_statements(template, function)
        if action in as_list(statement["Action"])
        for resource in as_list(statement["Resource"])
    ]


def agent_runtime_endpoints(template: Template) -> list[str]:
    return [
        logical_id
        for logical_id, endpoint in template.find_resources("AWS::EC2::VPCEndpoint").items()
        if as_text(endpoint["Properties"]["ServiceName"]).endswith(".bedrock-agent-runtime")
    ]


@pytest.mark.parametrize("handler", SEARCHING)
def test_the_functions_that_search_get_the_model_and_may_rerank_with_it_alone(
    reranking: Template, handler: str
) -> None:
    _, function = function_with_handler(reranking, handler)
    assert function["Properties"]["Environment"]["Variables"]["QUIRE_RERANK_MODEL_ID"] == COHERE
    invoked = granted(reranking, function, "bedrock:InvokeModel")
    assert f"arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/{COHERE}" in invoked
    # Besides the embedding model, nothing: no other rerank model, no wildcard.
    assert [arn for arn in invoked if "titan-embed" not in arn] == [
        f"arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/{COHERE}"
    ]
    assert granted(reranking, function, "bedrock:Rerank") == ["*"]


def test_no_other_function_may_rerank_or_is_told_the_model(reranking: Template) -> None:
    searching = {function_with_handler(reranking, handler)[0] for handler in SEARCHING}
    others = 0
    for logical_id, function in reranking.find_resources("AWS::Lambda::Function").items():
        if logical_id in searching or not is_quire_handler(function["Properties"].get("Handler")):
            continue
        others += 1
        assert "QUIRE_RERANK_MODEL_ID" not in function["Properties"].get("Environment", {}).get("Variables", {})
        assert granted(reranking, function, "bedrock:Rerank") == [], logical_id
        assert not [arn for arn in granted(reranking, function, "bedrock:InvokeModel") if "rerank" in arn], logical_id
    assert others > 5


def test_the_agent_runtime_is_reached_through_an_endpoint_of_its_own_in_the_vpc(reranking: Template) -> None:
    assert len(agent_runtime_endpoints(reranking)) == 1


@pytest.mark.parametrize("handler", SEARCHING)
def test_without_a_rerank_model_nothing_of_it_is_deployed(synthesized: tuple[str, Template], handler: str) -> None:
    _, template = synthesized
    _, function = function_with_handler(template, handler)
    assert "QUIRE_RERANK_MODEL_ID" not in function["Properties"]["Environment"]["Variables"]
    assert granted(template, function, "bedrock:Rerank") == []
    assert agent_runtime_endpoints(template) == []


def test_a_rerank_model_quire_does_not_call_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"dev: rerank_model_id 'cohere.rerank-english-v3' is not one") as raised:
        dataclasses.replace(settings_for("dev"), rerank_model_id="cohere.rerank-english-v3")
    assert COHERE in str(raised.value) and AMAZON in str(raised.value)


def test_the_runtime_calls_the_models_the_environments_offer() -> None:
    # infra never imports runtime code: this test holds the two lists together.
    from shared.adapters.aws.bedrock_rerank import RERANK_MODELS as CALLED

    assert RERANK_MODELS == CALLED == (COHERE, AMAZON)
    assert settings_for("dev").rerank_model_id is None and settings_for("prod").rerank_model_id is None
