"""BedrockReranker against a real bedrock-agent-runtime client whose calls botocore's Stubber answers with the shapes
of the service model (results of index and relevanceScore; each error of the Rerank operation), transport failures
raised where the client would meet them, and the setting that chooses it."""

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError
from botocore.stub import Stubber

from shared.adapters.aws.bedrock_rerank import (
    AMAZON_RERANK_V1_MODEL_ID,
    COHERE_RERANK_V35_MODEL_ID,
    MAX_DOCUMENT_CHARACTERS,
    BedrockReranker,
    model_arn,
)
from shared.bootstrap import ConfigurationError, Container
from shared.config import Settings
from shared.domain.identifier_booster import IdentifierBooster
from shared.domain.reranking import RerankCandidate, RerankSkip
from shared.domain.usage import Usage
from shared.ports import Reranker

REGION = "us-west-2"


def client() -> Any:
    """A real client, offline: dummy keys, a fixed region, one attempt a call (as the adapter's own)."""
    return boto3.client(
        "bedrock-agent-runtime",
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}),
    )


def candidates(*texts: str) -> list[RerankCandidate]:
    return [RerankCandidate(chunk_id=f"v:{index}", text=text) for index, text in enumerate(texts)]


def expected_request(query: str, texts: list[str], model: str = COHERE_RERANK_V35_MODEL_ID) -> dict[str, Any]:
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
        "sources": [
            {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": text}}}
            for text in texts
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "numberOfResults": len(texts),
                "modelConfiguration": {"modelArn": f"arn:aws:bedrock:{REGION}::foundation-model/{model}"},
            },
        },
    }


def results(*scored: tuple[int, float]) -> dict[str, Any]:
    """A Rerank answer as the service model shapes it: each source's index and relevance, best first."""
    return {"results": [{"index": index, "relevanceScore": score} for index, score in scored]}


TEXTS = ["The refund window is 30 days.", "Error ERR-4021 means the card was declined.", "Shipping takes a week."]


@pytest.mark.parametrize("model", [COHERE_RERANK_V35_MODEL_ID, AMAZON_RERANK_V1_MODEL_ID])
def test_one_call_ranks_the_candidates_by_relevance_and_is_metered_as_one_query(model: str) -> None:
    rerank_client = client()
    stub = Stubber(rerank_client)
    query = "why was the card declined?"
    stub.add_response("rerank", results((1, 0.91), (0, 0.12), (2, 0.03)), expected_request(query, TEXTS, model))
    with stub:
        reranked = BedrockReranker(rerank_client, model_id=model, region=REGION).rerank(query, candidates(*TEXTS))
    stub.assert_no_pending_responses()
    assert reranked.order == ("v:1", "v:0", "v:2")
    assert reranked.outcome.applied and reranked.outcome.model == model and reranked.outcome.candidates == 3
    assert reranked.usage == Usage(provider="bedrock", operation="bedrock:Rerank", model=model, priced=True)


def test_results_are_ordered_by_score_whatever_order_they_come_in_and_ties_keep_fusion_order() -> None:
    rerank_client = client()
    stub = Stubber(rerank_client)
    stub.add_response("rerank", results((2, 0.5), (0, 0.2), (1, 0.5)), expected_request("q", TEXTS))
    with stub:
        reranked = BedrockReranker(rerank_client, model_id=COHERE_RERANK_V35_MODEL_ID, region=REGION).rerank(
            "q", candidates(*TEXTS)
        )
    assert reranked.order == ("v:1", "v:2", "v:0")


def test_only_the_best_depth_candidates_are_sent() -> None:
    rerank_client = client()
    stub = Stubber(rerank_client)
    stub.add_response("rerank", results((1, 0.9), (0, 0.1)), expected_request("q", TEXTS[:2]))
    with stub:
        reranked = BedrockReranker(rerank_client, model_id=COHERE_RERANK_V35_MODEL_ID, region=REGION, depth=2).rerank(
            "q", candidates(*TEXTS)
        )
    stub.assert_no_pending_responses()
    assert reranked.order == ("v:1", "v:0")
    assert reranked.outcome.candidates == 2


def test_a_long_chunk_is_sent_by_its_start_cut_on_a_word() -> None:
    long_text = "word " * 2_000  # 10,000 characters
    rerank_client = client()
    sent: list[str] = []
    rerank_client.meta.events.register(
        "before-parameter-build.bedrock-agent-runtime.Rerank",
        lambda params, **_: sent.extend(s["inlineDocumentSource"]["textDocument"]["text"] for s in params["sources"]),
    )
    stub = Stubber(rerank_client)
    stub.add_response("rerank", results((0, 0.5)))
    with stub:
        BedrockReranker(rerank_client, model_id=COHERE_RERANK_V35_MODEL_ID, region=REGION).rerank(
            "q", candidates(long_text)
        )
    [text] = sent
    assert len(text) <= MAX_DOCUMENT_CHARACTERS
    assert long_text.startswith(text) and text.endswith("word")


# Each error the Rerank operation declares (botocore's service model), with the status Bedrock answers it with.
ERRORS = [
    ("ThrottlingException", 429, "Too many requests, please wait before trying again."),
    ("ValidationException", 400, "The provided model identifier is invalid."),
    ("AccessDeniedException", 403, "You don't have access to the model with the specified model ID."),
    ("ResourceNotFoundException", 404, "Model not found."),
    ("ServiceQuotaExceededException", 400, "Your request exceeds the service quota for your account."),
    ("ConflictException", 409, "Conflict."),
    ("DependencyFailedException", 424, "A dependency failed."),
    ("BadGatewayException", 502, "Bad gateway."),
    ("InternalServerException", 500, "Internal server error."),
]


@pytest.mark.parametrize(("code", "status", "message"), ERRORS, ids=[code for code, _, _ in ERRORS])
def test_an_error_the_service_answers_is_a_failed_rerank_never_raised_nor_metered(
    code: str, status: int, message: str
) -> None:
    rerank_client = client()
    stub = Stubber(rerank_client)
    stub.add_client_error("rerank", service_error_code=code, service_message=message, http_status_code=status)
    with stub:
        reranked = BedrockReranker(rerank_client, model_id=COHERE_RERANK_V35_MODEL_ID, region=REGION).rerank(
            "q", candidates(*TEXTS)
        )
    stub.assert_no_pending_responses()
    assert reranked.order == ()
    assert reranked.outcome.reason is RerankSkip.FAILED and not reranked.outcome.applied
    assert reranked.outcome.candidates == 3
    assert reranked.usage is None


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ReadTimeoutError(endpoint_url="https://bedrock-agent-runtime.us-west-2.amazonaws.com"), RerankSkip.TIMED_OUT),
        (
            ConnectTimeoutError(endpoint_url="https://bedrock-agent-runtime.us-west-2.amazonaws.com"),
            RerankSkip.TIMED_OUT,
        ),
        (
            EndpointConnectionError(endpoint_url="https://bedrock-agent-runtime.us-west-2.amazonaws.com"),
            RerankSkip.FAILED,
        ),
    ],
    ids=["read timeout", "connect timeout", "no connection"],
)
def test_no_answer_in_time_is_timed_out_and_no_connection_is_failed(error: Exception, reason: RerankSkip) -> None:
    # Raised where the client sends (no Stubber: it answers before that), as the HTTP layer would.
    rerank_client = client()

    def unreachable(**_: Any) -> None:
        raise error

    rerank_client.meta.events.register("before-send.bedrock-agent-runtime.Rerank", unreachable)
    reranked = BedrockReranker(rerank_client, model_id=COHERE_RERANK_V35_MODEL_ID, region=REGION).rerank(
        "q", candidates(*TEXTS)
    )
    assert reranked.outcome.reason is reason
    assert reranked.order == () and reranked.usage is None


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(results((0, 0.9), (3, 0.5)), id="an index past the sources"),
        pytest.param(results((1, 0.9), (1, 0.5)), id="an index twice"),
    ],
)
def test_an_answer_that_is_not_a_ranking_of_what_was_sent_is_a_failed_rerank(answer: dict[str, Any]) -> None:
    rerank_client = client()
    stub = Stubber(rerank_client)
    stub.add_response("rerank", answer)
    with stub:
        reranked = BedrockReranker(rerank_client, model_id=COHERE_RERANK_V35_MODEL_ID, region=REGION).rerank(
            "q", candidates(*TEXTS)
        )
    assert reranked.outcome.reason is RerankSkip.FAILED
    assert reranked.usage is None


def test_an_empty_answer_is_no_opinion_for_the_service_to_keep_fusion_order() -> None:
    rerank_client = client()
    stub = Stubber(rerank_client)
    stub.add_response("rerank", results())
    with stub:
        reranked = BedrockReranker(rerank_client, model_id=COHERE_RERANK_V35_MODEL_ID, region=REGION).rerank(
            "q", candidates(*TEXTS)
        )
    # Applied with nothing in it: shared/services/reranking.py reads it as no opinion (fusion order stands).
    assert reranked.order == ()


def test_a_model_quire_does_not_call_and_a_depth_past_one_query_are_refused() -> None:
    with pytest.raises(ValueError, match=r"'cohere.rerank-v3-0' is not a rerank model Quire calls"):
        BedrockReranker(client(), model_id="cohere.rerank-v3-0", region=REGION)
    with pytest.raises(ValueError, match=r"depth must be 1..100"):
        BedrockReranker(client(), model_id=COHERE_RERANK_V35_MODEL_ID, region=REGION, depth=101)


def test_the_model_is_named_by_its_arn_in_the_regions_partition() -> None:
    assert model_arn("eu-central-1", AMAZON_RERANK_V1_MODEL_ID) == (
        "arn:aws:bedrock:eu-central-1::foundation-model/amazon.rerank-v1:0"
    )
    assert model_arn("us-gov-west-1", COHERE_RERANK_V35_MODEL_ID).startswith("arn:aws-us-gov:bedrock:us-gov-west-1::")


def aws_container(**settings: Any) -> Container:
    return Container(Settings(runtime="aws", region=REGION, **settings))


def test_on_aws_the_setting_chooses_the_bedrock_reranker_over_the_booster() -> None:
    reranker = aws_container(rerank_model_id=AMAZON_RERANK_V1_MODEL_ID, rerank_top_n=20).reranker
    assert isinstance(reranker, BedrockReranker)
    assert (reranker.model_id, reranker.depth, reranker.metered) == (AMAZON_RERANK_V1_MODEL_ID, 20, True)
    assert isinstance(aws_container().reranker, IdentifierBooster)
    assert aws_container(search_identifier_boost=False).reranker is None


def test_locally_the_booster_reranks_whatever_the_model_setting_says() -> None:
    reranker = Container(Settings(runtime="local", rerank_model_id=COHERE_RERANK_V35_MODEL_ID)).reranker
    assert isinstance(reranker, IdentifierBooster)
    booster: Reranker = reranker
    assert (booster.model_id, booster.depth, booster.metered) == ("identifier-booster", None, False)


def test_a_rerank_model_id_quire_does_not_call_is_a_configuration_error_naming_the_setting() -> None:
    with pytest.raises(ConfigurationError, match=r"QUIRE_RERANK_MODEL_ID: 'cohere.rerank-english-v3' is not"):
        _ = aws_container(rerank_model_id="cohere.rerank-english-v3").reranker
