"""The reranker's vocabulary (seeds/000, "The reranker is switchable because its value is a claim"): what a reranker
is given, what it answers, and what a search says about it.

A reranker reorders the best fused candidates of a search; when it cannot (it failed, ran out of its time, the
tenant's limit is spent, or it had no opinion) fusion order stands and the search says why. It never empties a
result: a reranker returning nothing is "no opinion", not "nothing matches".
"""

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from shared.domain.usage import Usage


class RerankCandidate(BaseModel):
    """One fused candidate as a reranker reads it: its chunk id and the text that was indexed."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    text: str


class RerankSkip(StrEnum):
    """Why fusion order stood: the `reason` a search response gives."""

    OFF = "off"  # no reranker is configured
    NO_OPINION = "no_opinion"  # it answered nothing it was given
    FAILED = "failed"  # it answered an error, or an answer that could not be read
    TIMED_OUT = "timed_out"  # it did not answer within its time budget
    OVER_LIMIT = "over_limit"  # the tenant's daily rerank limit is spent: it was not called


class RerankOutcome(BaseModel):
    """What a search says about its reranker: whether its order was applied, which model, and if not, why."""

    model_config = ConfigDict(frozen=True)

    applied: bool
    model: str | None
    reason: RerankSkip | None = None  # None exactly when applied
    candidates: int = Field(default=0, ge=0)  # how many of the fused candidates it was given

    @classmethod
    def off(cls) -> "RerankOutcome":
        return cls(applied=False, model=None, reason=RerankSkip.OFF)

    @classmethod
    def skipped(cls, model: str, reason: RerankSkip, *, candidates: int = 0) -> "RerankOutcome":
        return cls(applied=False, model=model, reason=reason, candidates=candidates)


class Reranked(BaseModel):
    """A reranker's answer: chunk ids best first (a permutation of some of the candidates it was given) and its
    outcome; `usage` is what the call consumed, for a reranker whose calls are metered. A skip has no order."""

    model_config = ConfigDict(frozen=True)

    order: tuple[str, ...] = ()
    outcome: RerankOutcome
    usage: Usage | None = None

    @classmethod
    def applied(cls, model: str, order: tuple[str, ...], *, candidates: int, usage: Usage | None = None) -> "Reranked":
        return cls(order=order, outcome=RerankOutcome(applied=True, model=model, candidates=candidates), usage=usage)

    @classmethod
    def skipped(cls, model: str, reason: RerankSkip, *, candidates: int = 0) -> "Reranked":
        return cls(outcome=RerankOutcome.skipped(model, reason, candidates=candidates))


def reranked_order(given: list[str], reranked: Reranked) -> list[str] | None:
    """The candidates a reranker was `given` (in fusion order), its order first and the rest in fusion order after it;
    None when its answer is no opinion (nothing, an id it was not given, or an id twice): fusion order stands then,
    never an empty result."""
    order = reranked.order
    if not order or len(set(order)) != len(order) or not set(order) <= set(given):
        return None
    placed = set(order)
    return [*order, *(chunk_id for chunk_id in given if chunk_id not in placed)]
