"""Search results as documents (issue 37, item 2): `POST /v1/search` with `groupBy: "file"` answers with the best
files, each with its best cited chunks, for a reader who wants to know which documents hold the answer before
which passages do.

Fusion is already per document (a document's best chunk carries its fused score, its other chunks their own:
`domain/search.zscore_fusion`), so a file's place is its best hit's and its hits keep their order. The context
budget applies to the groups as it does to hits: a prefix of them, whole groups, never fewer than one.
"""

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from shared.domain.search import SearchHit

DEFAULT_HITS_PER_FILE = 3
MAX_HITS_PER_FILE = 10


class FileGroup(BaseModel):
    model_config = ConfigDict(frozen=True)

    file_id: str
    version_id: str
    filename: str
    collection_id: str
    score: float  # its best hit's
    hits: tuple[SearchHit, ...]


def by_file(
    hits: Sequence[SearchHit], *, limit: int, per_file: int, budget_characters: int
) -> tuple[tuple[FileGroup, ...], bool]:
    """The first `limit` files of `hits` (in rank order), each with its first `per_file` hits; and whether the
    budget cut groups off."""
    members: dict[str, list[SearchHit]] = {}
    for hit in hits:
        file_id = hit.citation.file_id
        if file_id not in members and len(members) == limit:
            continue
        kept = members.setdefault(file_id, [])
        if len(kept) < per_file:
            kept.append(hit)
    groups: list[FileGroup] = []
    spent = 0
    for kept in members.values():
        cost = sum(len(hit.excerpt) for hit in kept)
        if groups and spent + cost > budget_characters:
            return tuple(groups), True
        spent += cost
        first = kept[0].citation
        groups.append(
            FileGroup(
                file_id=first.file_id,
                version_id=first.version_id,
                filename=first.filename,
                collection_id=first.collection_id,
                score=kept[0].score,
                hits=tuple(kept),
            )
        )
    return tuple(groups), False
