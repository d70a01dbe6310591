"""Retrieval metrics as BEIR reports them (graded relevance; binary for recall and MRR)."""

import math
from collections.abc import Mapping, Sequence


def ndcg_at(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    gains = sum((2 ** relevant.get(doc, 0) - 1) / math.log2(position + 2) for position, doc in enumerate(ranking[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    best = sum((2**grade - 1) / math.log2(position + 2) for position, grade in enumerate(ideal))
    return gains / best if best else 0.0


def recall_at(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    wanted = {doc for doc, grade in relevant.items() if grade > 0}
    return len(wanted & set(ranking[:k])) / len(wanted) if wanted else 0.0


def reciprocal_rank_at(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    for position, doc in enumerate(ranking[:k], start=1):
        if relevant.get(doc, 0) > 0:
            return 1.0 / position
    return 0.0
