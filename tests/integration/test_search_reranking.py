"""The reranker on the in-process stack, through POST /v1/search: the identifier booster (the local default) lifts the
chunk that holds the query's identifier over fusion's order and says so in `rerank`; without it fusion order stands,
said `off`; a metered rerank model (a named fake in the adapter's place) is booked in the usage report as one query a
search and, past the tenant's daily rerank limit, is not called and the response says `over_limit`."""

import threading
import uuid
from collections.abc import Sequence
from typing import Any

from shared.domain.reranking import RerankCandidate, Reranked
from shared.domain.usage import rerank_usage
from tests.builders.containers import replaced
from tests.integration.api_steps import indexed, search
from tests.integration.files_stack import Stack
from tests.integration.limited_stack import limited

# The query's words are all over the first section; its identifier only in the last, which says little else.
INCIDENTS = b"""# Payment incidents

## Declined payments at checkout

Payment declined at checkout: the card payment failed and the checkout showed payment declined. Card payments
declined at checkout are retried once; a declined payment at checkout is reported to the payment provider as
error ERR-40211.

## Stock levels

The warehouse counts stock every night and reorders below the safety level. Pallets are stacked by weight, heavy
ones at the bottom, and the forklift is serviced every quarter. The night shift logs every count in the ledger,
and one count in March was noted under ERR-4021 before it was corrected the next morning. Deliveries arrive on
Tuesdays and Fridays, and the loading dock closes at six.
"""
QUERY = "ERR-4021 payment declined at checkout"


def new_tenant() -> str:
    return f"r{uuid.uuid4().hex[:10]}"


def top_heading(answer: dict[str, Any]) -> str:
    return str(answer["hits"][0]["citation"]["headingPath"][-1])


class FakeRerankModel:
    """A fake of a metered rerank model (a Bedrock one in production): fusion order reversed, every call counted."""

    model_id = "fake-rerank-model"
    depth = 20
    metered = True
    in_process = False

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()  # it answers on the reranking service's worker threads

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> Reranked:
        with self._lock:
            self.calls += 1
        order = tuple(candidate.chunk_id for candidate in reversed(candidates))
        return Reranked.applied(self.model_id, order, candidates=len(candidates), usage=rerank_usage(self.model_id))


def usage_lines(stack: Stack, token: str) -> dict[str, dict[str, Any]]:
    status, usage = stack.json("GET", "/v1/usage", token)
    assert status == 200, usage
    return {line["step"]: line for line in usage["lines"]}


def test_the_identifier_booster_lifts_the_chunk_with_the_exact_code_and_says_it_applied(stack: Stack) -> None:
    token = stack.token(new_tenant(), ("docs",))
    indexed(stack, token, "incidents.md", INCIDENTS)

    # Given fusion alone ranks the section full of the query's other words first
    with replaced(stack.container, "reranker", None):
        fused = search(stack, token, QUERY)
    assert fused["outcome"] == "found"
    assert fused["rerank"] == {"applied": False, "model": None, "reason": "off", "candidates": 0}
    assert top_heading(fused) != "Stock levels", [h["citation"]["headingPath"] for h in fused["hits"]]

    # When the booster reranks (the local default), the chunk holding ERR-4021 verbatim comes first
    boosted = search(stack, token, QUERY)
    assert top_heading(boosted) == "Stock levels"
    assert boosted["rerank"] == {
        "applied": True,
        "model": "identifier-booster",
        "reason": None,
        "candidates": len(fused["hits"]),
    }
    # Then it reorders, never adds or drops: the same hits, and nothing is booked for it
    assert sorted(hit["chunkId"] for hit in boosted["hits"]) == sorted(hit["chunkId"] for hit in fused["hits"])
    assert "rerank" not in usage_lines(stack, token)


def test_a_query_without_an_identifier_keeps_fusion_order_under_the_booster(stack: Stack) -> None:
    token = stack.token(new_tenant(), ("docs",))
    indexed(stack, token, "incidents.md", INCIDENTS)
    with replaced(stack.container, "reranker", None):
        fused = search(stack, token, "payment declined at checkout")
    boosted = search(stack, token, "payment declined at checkout")
    assert [hit["chunkId"] for hit in boosted["hits"]] == [hit["chunkId"] for hit in fused["hits"]]
    assert boosted["rerank"]["applied"] is True


def test_a_metered_rerank_model_is_booked_as_one_query_a_search_and_stops_at_the_daily_limit(stack: Stack) -> None:
    tenant = new_tenant()
    token = stack.token(tenant, ("docs",))
    indexed(stack, token, "incidents.md", INCIDENTS)
    with replaced(stack.container, "reranker", None):
        fused = [hit["chunkId"] for hit in search(stack, token, QUERY)["hits"]]

    model = FakeRerankModel()
    with limited(stack, limit_rerank_queries_per_day=2) as container:
        container.reranker = model
        # Two searches under the limit: the model's order, booked one query each
        for _ in range(2):
            reranked = search(stack, token, QUERY)
            assert reranked["rerank"] == {
                "applied": True,
                "model": "fake-rerank-model",
                "reason": None,
                "candidates": len(fused),
            }
            assert [hit["chunkId"] for hit in reranked["hits"]] == fused[::-1]
        line = usage_lines(stack, token)["rerank"]
        assert (line["calls"], line["operation"], line["model"], line["priced"]) == (
            2,
            "bedrock:Rerank",
            "fake-rerank-model",
            True,
        )
        assert (line["inputTokens"], line["outputTokens"]) == (0, 0)
        # The third is over the limit: the model is not called, fusion order stands, and the response says why
        over = search(stack, token, QUERY)
        assert model.calls == 2
        assert over["rerank"]["reason"] == "over_limit" and over["rerank"]["applied"] is False
        assert [hit["chunkId"] for hit in over["hits"]] == fused
        assert usage_lines(stack, token)["rerank"]["calls"] == 2
    # Another tenant's day is its own.
    assert "rerank" not in usage_lines(stack, stack.token(new_tenant(), ("docs",)))
