"""Duplicates: the same text in several places collapsed into one search hit, and the same bytes uploaded twice.

A search hit stands for its text: where the very same chunk text is stored more than once (the same PDF uploaded
twice, a clause every contract repeats), the best-ranked copy is the hit and the others are listed under it
(`also_in`), so a page of ten hits is ten different texts. Text identical is the rule: the chunk's body exactly as
stored (what an excerpt quotes), whatever heading path or document it sits under (docs/search.md#duplicates).
"""

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from shared.domain.search import ChunkSnapshot, Citation, matching_regions

# The other places listed under one hit, oldest upload first: a text stored a thousand times is not a thousand rows.
MAX_ALSO_IN = 20


def text_sha256(text: str) -> str:
    """The key a chunk's text is found by (knowledge_chunks.text_sha256): SHA-256 of its UTF-8 bytes, in hex."""
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Collapsed:
    """One hit of a collapsed ranking: the chunk kept, the candidate whose place (and fused score) it takes, and the
    same text's other places (oldest upload first)."""

    chunk_id: str
    ranked_as: str
    others: tuple[ChunkSnapshot, ...] = ()


# A snapshot stored without its upload time sorts after every dated one; the chunk id settles the rest.
_UNDATED = datetime.max.replace(tzinfo=UTC)


def _upload_order(snapshot: ChunkSnapshot) -> tuple[datetime, str]:
    return (snapshot.uploaded_at or _UNDATED, snapshot.chunk_id)


# Lane scores that differ by less than this (relatively) are the same evidence: PostgreSQL sums a chunk's BM25 over
# its terms in no fixed order, so two identical chunks can score 3.1804877619608916 and 3.180487761960891.
SAME_SCORE = 1e-9

Evidence = tuple[float | bool | None, ...]


def _alike(one: Evidence, other: Evidence) -> bool:
    return len(one) == len(other) and all(
        a == b or (isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=SAME_SCORE))
        for a, b in zip(one, other, strict=True)
    )


def collapse(
    order: Sequence[str],
    snapshots: Mapping[str, ChunkSnapshot],
    *,
    evidence: Mapping[str, Evidence],
    copies: Iterable[ChunkSnapshot] = (),
    limit: int = MAX_ALSO_IN,
) -> list[Collapsed]:
    """`order` (the ranked chunk ids, every one in `snapshots`) with each text once, at the place of its best-ranked
    copy. That copy is kept, unless other copies were ranked on the same `evidence` (each lane's score, alike to
    SAME_SCORE, and whether the question names it): of those equals the oldest upload is kept, then the smallest
    chunk id, so the same PDF uploaded twice is cited from its first upload whichever copy a lane happened to list
    first (a lane's tie is two ranks to reciprocal rank, and a rounding apart decides which comes first). The others
    are every other copy among the candidates and `copies` (the same texts found elsewhere, each one the caller may
    read), oldest upload first, at most `limit`."""
    groups: dict[str, list[ChunkSnapshot]] = {}
    for chunk_id in order:
        snapshot = snapshots[chunk_id]
        groups.setdefault(snapshot.body, []).append(snapshot)
    elsewhere: dict[str, dict[str, ChunkSnapshot]] = {}
    for copy in copies:
        if copy.body in groups:
            elsewhere.setdefault(copy.body, {})[copy.chunk_id] = copy
    collapsed: list[Collapsed] = []
    for chunk_id in order:
        members = groups.pop(snapshots[chunk_id].body, None)
        if members is None:
            continue  # a copy of a text already placed
        kept = min((m for m in members if _alike(evidence[m.chunk_id], evidence[chunk_id])), key=_upload_order)
        places = {member.chunk_id: member for member in members} | elsewhere.get(kept.body, {})
        others = sorted((place for place in places.values() if place.chunk_id != kept.chunk_id), key=_upload_order)
        collapsed.append(Collapsed(chunk_id=kept.chunk_id, ranked_as=chunk_id, others=tuple(others[:limit])))
    return collapsed


def also_in(
    others: Sequence[ChunkSnapshot], *, excerpt: str, retrieved_at: datetime, terms: frozenset[str]
) -> tuple[Citation, ...]:
    """The other places of a hit's text, each cited as the hit is (its own location, matching regions, metadata)."""
    return tuple(
        Citation.of_snapshot(
            other,
            excerpt=excerpt,
            retrieved_at=retrieved_at,
            matched=matching_regions(other.location, other.body, terms),
        )
        for other in others
    )
