"""The reranker step of a search (seeds/000: "the reranker is switchable because its value is a claim";
docs/search.md#the-reranker): the reranker's order over the best fused candidates when it answers in time and the
tenant may spend on it; fusion order, and why, when it does not.

Decided here, the same way for every reranker, so that an adapter only reranks:
- it is given the best `depth` candidates (all for the booster), each text once: identical texts are one hit
  (domain/duplicates.py), so a text's copies follow it and do not spend its depth; the rest follow in fusion order;
- a metered one (a Bedrock rerank model) is first checked against the tenant's daily rerank limit, and booked in the
  usage ledger once it answered;
- one in process (the identifier booster: microseconds, no I/O) is called inline, on the search's thread;
- any other has `budget_seconds` to answer, on a worker thread: a late answer is not waited for (fusion order stands,
  said `timed_out`), and is booked when it comes, since the model was paid for all the same. A call is only made when
  a worker is free to make it now (else `timed_out` at once: no worker answered in time), and one still waiting for a
  worker when its budget ends is cancelled, so no search leaves a call behind that nobody will read;
- an error, an unreadable answer, or an answer that orders nothing it was given leaves fusion order: never an empty
  result, which would look like the honest "nothing matches".
"""

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from typing import Any, TypeVar

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

_T = TypeVar("_T")


class WorkersBusy(Exception):
    """Every worker is making a call: a call submitted now would wait in a queue, past any search's budget."""


class BoundedWorkers(Executor):
    """A thread pool that never queues: a call is submitted only when one of its `workers` threads is free for it,
    else WorkersBusy. So a burst of searches against a slow model costs at most `workers` calls in flight, never a
    backlog of calls made (and paid for) after their searches answered."""

    def __init__(self, workers: int, *, name: str = "quire-rerank") -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self._workers = workers
        self._free = threading.BoundedSemaphore(workers)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> "Future[_T]":
        if not self._free.acquire(blocking=False):
            raise WorkersBusy(f"all {self._workers} rerank workers are making calls")
        try:
            call = self._pool.submit(fn, *args, **kwargs)
        except BaseException:
            self._free.release()
            raise
        call.add_done_callback(lambda _: self._free.release())
        return call

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)


_WORKERS = BoundedWorkers(RERANK_WORKERS)


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
        try:
            reranked = self._answer(principal, query, candidates, collections)
        except (FutureTimeout, WorkersBusy) as late:
            logger.warning(
                "the reranker did not answer in time",
                extra={"model": model, "budget": self._budget, "busy": isinstance(late, WorkersBusy)},
            )
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

    def _answer(
        self, principal: Principal, query: str, candidates: list[RerankCandidate], collections: frozenset[str]
    ) -> Reranked:
        """The reranker's answer: inline for one in process, else from a worker within the budget (FutureTimeout
        past it, WorkersBusy when no worker is free to ask)."""
        if self._reranker.in_process:
            return self._reranker.rerank(query, candidates)
        call = self._workers.submit(self._reranker.rerank, query, candidates)
        try:
            return call.result(timeout=self._budget)
        except FutureTimeout:
            # Still waiting for a worker: never made. Else the call goes on, and what it answers is booked when it
            # comes (a late answer was paid for all the same).
            if not call.cancel():
                call.add_done_callback(partial(self._answered_late, principal, collections))
            raise

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
