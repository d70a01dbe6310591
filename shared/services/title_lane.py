"""The title lane of one search (docs/search.md): the documents the question names by a complete title, and which
of the candidates are therefore direct subjects. It adds candidates and a bit; it never disables a lane, routes
the query, or changes a fused score."""

from collections.abc import Sequence

from shared.domain.search import SearchQuery
from shared.domain.titles import DIRECT_CHUNKS_PER_DOCUMENT, DirectSubjects, named_documents, question_keys
from shared.ports import TitleIndex


class TitleLane:
    def __init__(self, titles: TitleIndex, *, embedding_model: str) -> None:
        self._titles = titles
        self._embedding_model = embedding_model

    def direct_subjects(
        self,
        tenant_id: str,
        collections: frozenset[str],
        query: SearchQuery,
        *,
        candidates: Sequence[str],
        embedding: Sequence[float] | None,
    ) -> DirectSubjects:
        """The direct subjects among `candidates` (the lanes' fused chunk ids), and the best chunks of named
        documents none of whose chunks is among them. Titles are matched in `collections` under the query's
        filters only, so a title the caller cannot read neither matches nor takes authority from one it can."""
        keys = question_keys(query.text)
        if not keys:
            return DirectSubjects()
        titles = self._titles.named(tenant_id, collections, keys, filters=query.filters)
        versions = named_documents(query.text, titles)
        if not versions:
            return DirectSubjects()
        chunks = self._titles.direct_chunks(
            tenant_id,
            collections,
            versions,
            candidates=candidates,
            embedding=embedding,
            embedding_model=self._embedding_model,
            per_document=DIRECT_CHUNKS_PER_DOCUMENT,
            constraints=query.constraints,
        )
        return DirectSubjects.of(chunks)
