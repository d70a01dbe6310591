"""The reranker step of a search (shared/services/reranking.py) through Retrieval.search, over fake lanes and fake
rerankers (named as fakes): applied, failed, timed out, over the tenant's limit, no opinion; what is given to it and
what is booked in the usage ledger."""

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from typing import Any

import pytest

from shared.domain.identifier_booster import IdentifierBooster
from shared.domain.limits import TenantLimits
from shared.domain.reranking import RerankCandidate, Reranked, RerankOutcome, RerankSkip
from shared.domain.search import Found, RetrievalTuning, SearchQuery
from shared.domain.usage import RequestKind, rerank_usage
from shared.services.authorization import ClaimsAuthorizationPolicy
from shared.services.limits import SpendLimits
from shared.services.metering import Metering
from shared.services.reranking import BoundedWorkers, Reranking
from shared.services.retrieval import Retrieval
from tests.fakes import FakeFileMetadataStore, FakeUsageLedger
from tests.unit.retrieval_fakes import NOW, FakeEmbedder, FakeLanes, caller

MODEL = "fake-rerank"
# Fused, b (high in both lanes) leads a (the vector lane's best) and c.
FUSION_ORDER = ["b", "a", "c"]
EVERY_DAY = 30.0  # a budget no fake here comes near, where the budget is not what a test is about


class FakeRerankModel:
    """A fake of a metered rerank model: answers `answer(candidates)`, records what it was given."""

    model_id = MODEL
    metered = True
    in_process = False

    def __init__(
        self, answer: Callable[[Sequence[RerankCandidate]], Reranked] | None = None, depth: int | None = None
    ) -> None:
        self.depth = depth
        self.given: list[list[str]] = []
        self._answer = answer or reversed_order

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> Reranked:
        self.given.append([candidate.chunk_id for candidate in candidates])
        return self._answer(candidates)


def reversed_order(candidates: Sequence[RerankCandidate]) -> Reranked:
    order = tuple(candidate.chunk_id for candidate in reversed(candidates))
    return Reranked.applied(MODEL, order, candidates=len(candidates), usage=rerank_usage(MODEL))


class HeldWorkers(Executor):
    """A fake executor: a call is held until the test runs it, so a budget always runs out first; `started` says
    whether a worker took it up already (it runs on) or it still waits for one (a queued call, which can be
    cancelled)."""

    def __init__(self, *, started: bool = True) -> None:
        self.held: list[tuple[Future[Any], Callable[[], Any]]] = []
        self._started = started

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        if self._started:
            future.set_running_or_notify_cancel()
        self.held.append((future, lambda: fn(*args, **kwargs)))
        return future

    def run_held(self) -> None:
        for future, call in self.held:
            if self._started or future.set_running_or_notify_cancel():  # False: it was cancelled
                future.set_result(call())


class Searching:
    def __init__(self, reranker: Any, *, limit: int | None = None, spent_today: int = 0, **reranking: Any) -> None:
        self.ledger = FakeUsageLedger(clock=lambda: NOW)
        for _ in range(spent_today):
            self.ledger.record_request(
                "acme", kind=RequestKind.RERANK, collections=frozenset({"docs"}), subject="x", usage=rerank_usage(MODEL)
            )
        spend = SpendLimits(
            self.ledger, FakeFileMetadataStore(), TenantLimits(rerank_queries_per_day=limit), clock=lambda: NOW
        )
        self.lanes = FakeLanes([("a", 0.9), ("b", 0.85), ("c", 0.7)], [("b", 3.0), ("c", 2.9), ("a", 1.0)], {})
        self.retrieval = Retrieval(
            authorization=ClaimsAuthorizationPolicy(),
            knowledge=self.lanes,
            vectors=self.lanes,
            keywords=self.lanes,
            embedder=FakeEmbedder(),
            tuning=RetrievalTuning(),
            reranking=Reranking(
                reranker,
                budget_seconds=reranking.pop("budget_seconds", EVERY_DAY),
                spend=spend,
                metering=Metering(self.ledger),
                **reranking,
            )
            if reranker is not None
            else None,
            clock=lambda: NOW,
        )

    def search(self, text: str = "q") -> Found:
        outcome = self.retrieval.search(caller("docs"), SearchQuery(text=text))
        assert isinstance(outcome, Found)
        return outcome

    def queries_booked(self) -> int:
        return self.ledger.spent_since("acme", NOW.replace(hour=0)).rerank_queries


def ids(found: Found) -> list[str]:
    return [hit.chunk_id for hit in found.hits]


def test_without_a_reranker_fusion_order_stands_and_the_response_says_it_is_off() -> None:
    found = Searching(None).search()
    assert ids(found) == FUSION_ORDER
    assert found.rerank == RerankOutcome(applied=False, model=None, reason=RerankSkip.OFF, candidates=0)


def test_a_rerank_models_order_is_applied_said_in_the_response_and_booked_as_one_query() -> None:
    searching = Searching(FakeRerankModel())
    found = searching.search()
    assert ids(found) == ["c", "a", "b"]
    assert found.rerank == RerankOutcome(applied=True, model=MODEL, reason=None, candidates=3)
    assert searching.queries_booked() == 1
    [line] = searching.ledger.totals("acme", frozenset({"docs"}), since=NOW.replace(hour=0), until=NOW.replace(hour=23))
    assert (line.step, line.operation, line.model, line.calls) == ("rerank", "bedrock:Rerank", MODEL, 1)


def test_only_the_best_depth_candidates_are_given_and_the_rest_follow_in_fusion_order() -> None:
    model = FakeRerankModel(depth=2)
    found = Searching(model).search()
    assert model.given == [["b", "a"]]
    assert ids(found) == ["a", "b", "c"]
    assert found.rerank.candidates == 2


def test_a_rerank_model_that_failed_leaves_fusion_order_says_failed_and_books_nothing() -> None:
    model = FakeRerankModel(lambda given: Reranked.skipped(MODEL, RerankSkip.FAILED, candidates=len(given)))
    searching = Searching(model)
    found = searching.search()
    assert ids(found) == FUSION_ORDER
    assert found.rerank == RerankOutcome(applied=False, model=MODEL, reason=RerankSkip.FAILED, candidates=3)
    assert searching.queries_booked() == 0


def test_a_reranker_that_raises_is_a_failed_rerank_never_a_failed_search() -> None:
    def broken(candidates: Sequence[RerankCandidate]) -> Reranked:
        raise RuntimeError("an adapter's bug")

    found = Searching(FakeRerankModel(broken)).search()
    assert ids(found) == FUSION_ORDER
    assert found.rerank.reason is RerankSkip.FAILED


def test_a_rerank_model_past_its_budget_leaves_fusion_order_and_its_late_answer_is_still_booked() -> None:
    # Given a model whose call is held past the budget
    workers = HeldWorkers()
    searching = Searching(FakeRerankModel(), budget_seconds=0.01, workers=workers)
    # When the search is made, it does not wait: fusion order, said timed_out, nothing booked yet
    found = searching.search()
    assert ids(found) == FUSION_ORDER
    assert found.rerank == RerankOutcome(applied=False, model=MODEL, reason=RerankSkip.TIMED_OUT, candidates=3)
    assert searching.queries_booked() == 0
    # Then when the model answers after all, the query it was paid for is booked once
    workers.run_held()
    assert searching.queries_booked() == 1


def test_a_late_failure_books_nothing() -> None:
    workers = HeldWorkers()
    model = FakeRerankModel(lambda given: Reranked.skipped(MODEL, RerankSkip.FAILED))
    searching = Searching(model, budget_seconds=0.01, workers=workers)
    assert searching.search().rerank.reason is RerankSkip.TIMED_OUT
    workers.run_held()
    assert searching.queries_booked() == 0


def test_over_the_tenants_daily_limit_the_model_is_not_called_and_the_response_says_over_limit() -> None:
    model = FakeRerankModel()
    searching = Searching(model, limit=2, spent_today=2)
    found = searching.search()
    assert model.given == []
    assert ids(found) == FUSION_ORDER
    assert found.rerank == RerankOutcome(applied=False, model=MODEL, reason=RerankSkip.OVER_LIMIT, candidates=3)
    assert searching.queries_booked() == 2


def test_under_the_limit_the_last_query_of_the_day_is_reranked() -> None:
    searching = Searching(FakeRerankModel(), limit=2, spent_today=1)
    assert searching.search().rerank.applied
    assert searching.queries_booked() == 2
    assert searching.search().rerank.reason is RerankSkip.OVER_LIMIT


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param((), id="nothing"),
        pytest.param(("a", "zzz"), id="an id it was not given"),
        pytest.param(("a", "a"), id="an id twice"),
    ],
)
def test_an_answer_that_orders_nothing_it_was_given_is_no_opinion_and_never_an_empty_result(
    answer: tuple[str, ...],
) -> None:
    model = FakeRerankModel(
        lambda given: Reranked.applied(MODEL, answer, candidates=len(given), usage=rerank_usage(MODEL))
    )
    searching = Searching(model)
    found = searching.search()
    assert ids(found) == FUSION_ORDER
    assert found.rerank.reason is RerankSkip.NO_OPINION
    assert searching.queries_booked() == 1  # the model answered: it was paid for


def test_a_partial_order_puts_the_ordered_first_and_the_rest_in_fusion_order() -> None:
    model = FakeRerankModel(lambda given: Reranked.applied(MODEL, ("c",), candidates=len(given)))
    found = Searching(model).search()
    assert ids(found) == ["c", "b", "a"]
    assert found.rerank.applied


def test_the_identifier_booster_is_never_held_to_the_rerank_limit_nor_booked() -> None:
    # Given a tenant whose rerank queries for the day are spent
    searching = Searching(IdentifierBooster(), limit=1, spent_today=1)
    searching.lanes.bodies = {"c": "incident ERR-4021 root cause"}
    # When it searches for an identifier, the booster (free, in process) still reranks
    found = searching.search("what caused ERR-4021")
    assert ids(found) == ["c", "b", "a"]
    assert found.rerank == RerankOutcome(applied=True, model="identifier-booster", reason=None, candidates=3)
    assert searching.queries_booked() == 1


def test_a_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="budget_seconds"):
        Reranking(IdentifierBooster(), budget_seconds=0)


def test_the_answer_caches_fingerprint_names_the_reranker() -> None:
    assert Searching(FakeRerankModel()).retrieval.fingerprint.endswith(f"|{MODEL}")
    assert Searching(None).retrieval.fingerprint.endswith("|none")


def test_the_rerank_limits_refusal_names_the_limit_in_queries_and_when_it_resets() -> None:
    searching = Searching(FakeRerankModel(), limit=1, spent_today=1)
    spend = SpendLimits(
        searching.ledger, FakeFileMetadataStore(), TenantLimits(rerank_queries_per_day=1), clock=lambda: NOW
    )
    refusal = spend.rerank_refusal("acme")
    assert refusal is not None and refusal.limit == "rerank_queries_per_day"
    assert str(refusal).startswith(
        "the tenant's daily rerank limit of 1 query is spent (1 reranked today, 1 more needed)"
    )
    assert "searches are reranked again after 00:00 UTC" in str(refusal)
    assert spend.rerank_refusal("another tenant") is None


def test_identical_texts_are_given_to_the_reranker_once_so_its_depth_is_spent_on_different_texts() -> None:
    # Given b and a, the two best fused candidates, with the same text (the same PDF uploaded twice)
    model = FakeRerankModel(depth=2)
    searching = Searching(model)
    searching.lanes.bodies = {"a": "the same paragraph", "b": "the same paragraph"}
    # When the search is reranked, the model reads that text once and the next different one
    found = searching.search()
    assert model.given == [["b", "c"]]
    assert found.rerank.candidates == 2
    # Then its order stands, and the copy is one hit with its text, listed under it
    assert ids(found) == ["c", "b"]
    assert len(found.hits[1].also_in) == 1


def test_a_call_still_waiting_for_a_worker_when_the_budget_ends_is_cancelled_never_made_nor_booked() -> None:
    # Given every worker busy: the call waits, unstarted, past the budget
    workers = HeldWorkers(started=False)
    model = FakeRerankModel()
    searching = Searching(model, budget_seconds=0.01, workers=workers)
    assert searching.search().rerank.reason is RerankSkip.TIMED_OUT
    # When the workers come free, the search's call is not made: nobody would read its answer
    workers.run_held()
    assert model.given == []
    assert searching.queries_booked() == 0


class BlockedRerankModel(FakeRerankModel):
    """A fake of a rerank model that does not answer until the test lets it."""

    def __init__(self) -> None:
        super().__init__()
        self.answering = threading.Event()

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> Reranked:
        self.given.append([candidate.chunk_id for candidate in candidates])
        self.answering.wait(timeout=EVERY_DAY)
        return reversed_order(candidates)


def test_with_every_worker_making_a_call_a_search_is_not_reranked_and_leaves_no_call_queued() -> None:
    # Given one worker, making a call past its search's budget
    workers = BoundedWorkers(1)
    model = BlockedRerankModel()
    searching = Searching(model, budget_seconds=0.05, workers=workers)
    try:
        assert searching.search().rerank.reason is RerankSkip.TIMED_OUT
        # When another search comes meanwhile, its call is not queued behind: fusion order, said timed_out, at once
        found = searching.search()
        assert found.rerank == RerankOutcome(applied=False, model=MODEL, reason=RerankSkip.TIMED_OUT, candidates=3)
        assert ids(found) == FUSION_ORDER
    finally:
        model.answering.set()
        workers.shutdown(wait=True)
    # Then the model was asked once, by the first search, whose late answer is booked
    assert model.given == [["b", "a", "c"]]
    assert searching.queries_booked() == 1


def test_a_worker_is_free_again_once_its_call_ended() -> None:
    workers = BoundedWorkers(1)
    searching = Searching(FakeRerankModel(), workers=workers)
    try:
        assert searching.search().rerank.applied
        assert searching.search().rerank.applied
    finally:
        workers.shutdown(wait=True)


def test_the_identifier_booster_runs_inline_on_the_searchs_own_thread() -> None:
    # Given an in-process reranker and workers that would hold any call submitted to them
    threads: list[threading.Thread] = []

    class InProcessBooster(IdentifierBooster):
        def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> Reranked:
            threads.append(threading.current_thread())
            return super().rerank(query, candidates)

    workers = HeldWorkers(started=False)
    searching = Searching(InProcessBooster(), budget_seconds=0.01, workers=workers)
    searching.lanes.bodies = {"c": "incident ERR-4021 root cause"}
    # When it searches, the booster answers on the caller's thread, without a worker or a budget
    found = searching.search("what caused ERR-4021")
    assert found.rerank.applied and ids(found) == ["c", "b", "a"]
    assert threads == [threading.current_thread()]
    assert workers.held == []
