"""The reranker step of a search (seeds/000: "the reranker is switchable because its value is a claim";
docs/search.md#the-reranker): the reranker's order over the best fused candidates when it answers in time and the
tenant may spend on it; fusion order, and why, when it does not.

Decided here, the same way for every reranker, so that an adapter only reranks:
- it is given the best `depth` candidates (all for the booster), each text once: identical texts are one hit
  (domain/duplicates.py), so a text's copies follow it and do not spend its depth; the rest follow in fusion order;
- a metered one (a Bedrock rerank model) is first checked against the tenant's daily rerank limit, and booked in the
  usage ledger once it answered;
- it has `budget_seconds` to answer, on a worker thread: a late answer is not waited for (fusion order stands, said
  `timed_out`), and is booked when it comes, since the model was paid for all the same;
- an error, an unreadable answer, or an answer that orders nothing it was given leaves fusion order: never an empty
  result, which would look like the honest "nothing matches".
"""

from collections.abc import Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial

from shared.domain.auth import Principal
from shared.domain.reranking import RerankCandidate, Reranked, RerankOutcome, RerankSkip, reranked_order
from shared.domain.search import ChunkSnapshot
from shared.domain.usage import RequestKind
from shared.observability import logger
from shared.ports import Reranker
from shared.services.limits import SpendLimits
from shared.services.metering import Metering

# Rerank calls in flight at once in this process; a call past its budget holds its worker until the adapter's own
# timeout ends it (the Bedrock adapter's read timeout is the budget), so late calls cannot pile up without bound.
RERANK_WORKERS = 8
_WORKERS = ThreadPoolExecutor(max_workers=RERANK_WORKERS, thread_name_prefix="quire-rerank")


class Reranking:
    def __init__(
        self,
        reranker: Reranker,
        *,
        budget_seconds: float,
        spend: SpendLimits | None = None,
        metering: Metering | None = None,
        workers: Executor = _WORKERS,
    ) -> None:
        if budget_seconds <= 0:
            raise ValueError("budget_seconds must be positive")
        self._reranker = reranker
        self._budget = budget_seconds
        self._spend = spend
        self._metering = metering
        self._workers = workers

    @property
    def model_id(self) -> str:
        return self._reranker.model_id

    def rerank(
        self, principal: Principal, query: str, fused: Sequence[ChunkSnapshot]
    ) -> tuple[list[str], RerankOutcome]:
        """`fused` in fusion order → every one of their chunk ids, the reranker's order first where it was applied,
        and the outcome the search response carries."""
        order = [snapshot.chunk_id for snapshot in fused]
        # Identical texts are one hit (domain/duplicates.py): the reranker is given each text once, so its depth is
        # spent on different texts, and a text's copies follow it wherever it is placed.
        first_copies: dict[str, ChunkSnapshot] = {}
        for snapshot in fused:
            first_copies.setdefault(snapshot.body, snapshot)
        distinct = list(first_copies.values())
        depth = self._reranker.depth
        given = distinct if depth is None else distinct[:depth]
        model = self._reranker.model_id
        if not given:
            return order, RerankOutcome.skipped(model, RerankSkip.NO_OPINION)
        if self._reranker.metered and self._spend is not None:
            refusal = self._spend.rerank_refusal(principal.tenant_id)
            if refusal is not None:
                logger.info("search not reranked", extra={"reason": str(refusal)})
                return order, RerankOutcome.skipped(model, RerankSkip.OVER_LIMIT, candidates=len(given))
        outcome, placed = self._called(principal, query, given)
        return (order if placed is None else _with_copies(placed, fused)), outcome

    def _called(
        self, principal: Principal, query: str, given: Sequence[ChunkSnapshot]
    ) -> tuple[RerankOutcome, list[str] | None]:
        """The reranker called on `given` within the budget: its outcome, and its order of them when applied."""
        model, count = self._reranker.model_id, len(given)
        collections = frozenset(snapshot.collection_id for snapshot in given)
        # The context (title, headings, caption) with the body: what the lanes read, never quoted.
        candidates = [
            RerankCandidate(chunk_id=snapshot.chunk_id, text=snapshot.context + snapshot.body) for snapshot in given
        ]
        call = self._workers.submit(self._reranker.rerank, query, candidates)
        try:
            reranked = call.result(timeout=self._budget)
        except FutureTimeout:
            # The call goes on; what it answers is booked when it comes (a late answer was paid for all the same).
            call.add_done_callback(partial(self._answered_late, principal, collections))
            logger.warning("the reranker did not answer in time", extra={"model": model, "budget": self._budget})
            return RerankOutcome.skipped(model, RerankSkip.TIMED_OUT, candidates=count), None
        except Exception:
            # An adapter's bug is not the caller's problem: fusion order still answers.
            logger.exception("the reranker failed unexpectedly", extra={"model": model})
            return RerankOutcome.skipped(model, RerankSkip.FAILED, candidates=count), None
        self._book(principal, collections, reranked)
        if not reranked.outcome.applied:
            return RerankOutcome.skipped(model, reranked.outcome.reason or RerankSkip.FAILED, candidates=count), None
        placed = reranked_order([candidate.chunk_id for candidate in candidates], reranked)
        if placed is None:
            return RerankOutcome.skipped(model, RerankSkip.NO_OPINION, candidates=count), None
        return RerankOutcome(applied=True, model=model, candidates=count), placed

    def _book(self, principal: Principal, collections: frozenset[str], reranked: Reranked) -> None:
        if reranked.usage is None or self._metering is None:
            return
        self._metering.record_request(principal, kind=RequestKind.RERANK, collections=collections, usage=reranked.usage)

    def _answered_late(self, principal: Principal, collections: frozenset[str], call: "Future[Reranked]") -> None:
        if call.cancelled() or call.exception() is not None:
            return
        self._book(principal, collections, call.result())


def _with_copies(placed: Sequence[str], fused: Sequence[ChunkSnapshot]) -> list[str]:
    """Every one of `fused`: the texts `placed` in the reranker's order, each followed by its copies in fusion order,
    then the rest in fusion order."""
    copies: dict[str, list[str]] = {}
    for snapshot in fused:
        copies.setdefault(snapshot.body, []).append(snapshot.chunk_id)
    body_of = {snapshot.chunk_id: snapshot.body for snapshot in fused}
    ordered = [chunk_id for placed_id in placed for chunk_id in copies[body_of[placed_id]]]
    seen = set(ordered)
    return [*ordered, *(snapshot.chunk_id for snapshot in fused if snapshot.chunk_id not in seen)]
