"""Hybrid retrieval: two lanes over the same rows, fused (z-scores per document, or reciprocal rank), floored,
cited.

The caller's readable collections are computed here and passed to both lanes as a required argument:
an optional filter is a filter someone omits.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from shared.domain.auth import Principal
from shared.domain.duplicates import MAX_ALSO_IN, also_in, collapse, text_sha256
from shared.domain.errors import CapabilityUnavailable, EmbeddingFailed
from shared.domain.grouping import FileGroup, by_file
from shared.domain.knowledge import RankedChunk
from shared.domain.languages import QUERY_MIN_CONFIDENCE
from shared.domain.reranking import RerankOutcome
from shared.domain.search import (
    MAX_RESULTS,
    Citation,
    Empty,
    EmptyReason,
    Found,
    RetrievalTuning,
    SearchHit,
    SearchMode,
    SearchOutcome,
    SearchQuery,
    excerpt_of,
    fuse,
    matching_regions,
    query_terms,
)
from shared.domain.titles import DirectSubjects
from shared.observability import logger
from shared.ports import (
    AuthorizationPolicy,
    EmbeddingProvider,
    KeywordIndex,
    KnowledgeStore,
    LanguageDetector,
    TitleIndex,
    VectorIndex,
)
from shared.services.reranking import Reranking
from shared.services.title_lane import TitleLane


@dataclass(frozen=True)
class LaneResults:
    """What each lane found for one query, before fusion (the evaluation reads these directly)."""

    vector: list[RankedChunk]
    keyword: list[RankedChunk]
    vector_available: bool
    below_floor: int  # vector candidates dropped by the absolute semantic floor
    query_embedding: list[float] | None = None  # for the title lane's ranking inside a named document


class Retrieval:
    def __init__(
        self,
        *,
        authorization: AuthorizationPolicy,
        knowledge: KnowledgeStore,
        vectors: VectorIndex,
        keywords: KeywordIndex,
        embedder: EmbeddingProvider,
        tuning: RetrievalTuning,
        reranking: Reranking | None = None,
        titles: TitleIndex | None = None,
        languages: LanguageDetector | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._authorization = authorization
        self._knowledge = knowledge
        self._vectors = vectors
        self._keywords = keywords
        self._embedder = embedder
        self._tuning = tuning
        self._reranking = reranking
        self._titles = TitleLane(titles, embedding_model=embedder.model_id) if titles is not None else None
        self._clock = clock
        self._languages = languages

    @property
    def tuning(self) -> RetrievalTuning:
        return self._tuning

    @property
    def fingerprint(self) -> str:
        """Everything that decides a ranking besides the index and the query (the answer cache's key has it)."""
        return f"{self._tuning.model_dump_json()}|{self._reranking.model_id if self._reranking else 'none'}"

    def question_language(self, question: str) -> str | None:
        """The question's language when it is clear (detected at QUERY_MIN_CONFIDENCE or more), else None."""
        if self._languages is None:
            return None
        guess = self._languages.detect(question)
        return guess.language if guess is not None and guess.confidence >= QUERY_MIN_CONFIDENCE else None

    def embedder_reads(self, question: str) -> bool:
        """Whether the embedding model covers the question's language: a multilingual model, or a question that is in
        one of the model's languages or not clearly in any (docs/adr/0011)."""
        if self._embedder.languages is None:
            return True
        return self.embedder_reads_language(self.question_language(question))

    def embedder_reads_language(self, language: str | None) -> bool:
        """embedder_reads for a question whose language is detected already (question_language's answer)."""
        covered = self._embedder.languages
        return covered is None or language is None or language in covered

    def tuning_for(self, question: str) -> RetrievalTuning:
        """The tuning one question is fused with: the vector lane's weight falls to `uncovered_vector_weight` when the
        question is, clearly, in a language the embedding model does not cover (its vectors would place the question
        by its characters, not its meaning: docs/adr/0011). A question whose language is not clear keeps the
        configured weight."""
        if self.embedder_reads(question):
            return self._tuning
        return self._tuning.model_copy(
            update={"vector_weight": self._tuning.uncovered_vector_weight, "question_uncovered": True}
        )

    def searchable_collections(self, principal: Principal, query: SearchQuery) -> frozenset[str]:
        readable = self._authorization.readable_collections(principal)
        wanted = query.filters.collections
        return readable if wanted is None else readable & wanted

    def lanes(
        self,
        tenant_id: str,
        collections: frozenset[str],
        query: SearchQuery,
        *,
        candidates: int | None = None,
        embedding: list[float] | Literal["embed"] | None = "embed",
    ) -> LaneResults:
        """Both lanes for `query`; `embedding` is the query's when the caller embedded it already (None: it could
        not be), else it is embedded here."""
        depth = candidates or self._tuning.candidates
        vector: list[RankedChunk] = []
        keyword: list[RankedChunk] = []
        vector_available = False
        below_floor = 0
        if query.mode is SearchMode.KEYWORD:
            embedding = None
        else:
            embedding = self._embed_query(query.text) if embedding == "embed" else embedding
            vector_available = embedding is not None
            if embedding is not None:
                nearest = self._vectors.nearest(
                    tenant_id,
                    collections,
                    embedding,
                    embedding_model=self._embedder.model_id,
                    limit=depth,
                    filters=query.filters,
                    constraints=query.constraints,
                )
                vector = [hit for hit in nearest if hit.score >= self._tuning.semantic_floor]
                below_floor = len(nearest) - len(vector)
                vector = [hit.model_copy(update={"rank": rank}) for rank, hit in enumerate(vector, start=1)]
        if query.mode is not SearchMode.SEMANTIC or not vector_available:
            # With no semantic lane, a semantic search still answers from the keyword lane, and says so.
            keyword = self._keywords.search(
                tenant_id,
                collections,
                query.text,
                limit=depth,
                filters=query.filters,
                k1=self._tuning.bm25_k1,
                b=self._tuning.bm25_b,
                context_weight=self._tuning.context_weight,
                constraints=query.constraints,
            )
        return LaneResults(
            vector=vector,
            keyword=keyword,
            vector_available=vector_available,
            below_floor=below_floor,
            query_embedding=embedding,
        )

    def search_by_file(
        self, principal: Principal, query: SearchQuery, *, per_file: int
    ) -> tuple[SearchOutcome, tuple[FileGroup, ...]]:
        """The best `query.limit` files, each with its best `per_file` hits (shared/domain/grouping.py): the search
        runs to MAX_RESULTS hits, unbudgeted, and the budget applies to the groups."""
        outcome = self.search(principal, query.model_copy(update={"limit": MAX_RESULTS}), budgeted=False)
        if isinstance(outcome, Empty):
            return outcome, ()
        groups, truncated = by_file(
            outcome.hits,
            limit=query.limit,
            per_file=per_file,
            budget_characters=self._tuning.context_budget_characters,
        )
        hits = tuple(hit for group in groups for hit in group.hits)
        return outcome.model_copy(update={"hits": hits, "truncated_by_budget": truncated}), groups

    def search(self, principal: Principal, query: SearchQuery, *, budgeted: bool = True) -> SearchOutcome:
        collections = self.searchable_collections(principal, query)
        if not collections:
            return Empty(
                outcome=EmptyReason.NO_ACCESS,
                message=EmptyReason.NO_ACCESS.sentence,
                vector_available=self._embedder.capability().available,
            )
        # Embedded before the index is read, so no connection waits on the model.
        embedding = None if query.mode is SearchMode.KEYWORD else self._embed_query(query.text)
        # The lanes, the title lane and the citations read the index at one moment.
        with self._knowledge.one_moment(principal.tenant_id):
            lanes = self.lanes(principal.tenant_id, collections, query, embedding=embedding)
            fused = fuse([lanes.vector, lanes.keyword], self.tuning_for(query.text))
            # The title lane: documents the question names by a complete title join as direct subjects.
            direct = self.direct_subjects(principal.tenant_id, collections, query, fused, lanes)
            fused = direct.joined(fused)
            if not fused:
                reason = EmptyReason.BELOW_FLOOR if lanes.below_floor else EmptyReason.NO_MATCH
                return Empty(outcome=reason, message=_sentence(reason, query), vector_available=lanes.vector_available)
            best = fused[0][1]
            # A direct subject is named by the question: the relative floor does not drop it.
            kept = [
                (chunk_id, score)
                for chunk_id, score in fused
                if score >= self._tuning.fused_floor * best or chunk_id in direct.chunk_ids
            ]
            snapshots = {
                snapshot.chunk_id: snapshot
                for snapshot in self._knowledge.snapshots(
                    principal.tenant_id, collections, [chunk_id for chunk_id, _ in kept]
                )
            }
            # The same texts stored elsewhere (the caller's collections, the query's filters): listed under the hit.
            copies = self._knowledge.same_text(
                principal.tenant_id,
                collections,
                {text_sha256(snapshot.body) for snapshot in snapshots.values()},
                filters=query.filters,
                per_text=MAX_ALSO_IN + 1,
                excluding=snapshots.keys(),  # the candidates are hydrated already: only other places come back
            )
        # A chunk deleted between the lanes and the hydration is simply gone, never cited.
        kept = [(chunk_id, score) for chunk_id, score in kept if chunk_id in snapshots]
        order = [chunk_id for chunk_id, _ in kept]
        rerank = RerankOutcome.off()
        if self._reranking is not None:
            # Fusion order stands, said in `rerank`, whenever the reranker cannot give its own (services/reranking.py).
            order, rerank = self._reranking.rerank(principal, query.text, [snapshots[chunk_id] for chunk_id in order])
        # Directly named sources before incidental evidence; the ranking above orders each group.
        order = direct.first(order)
        scores = dict(kept)
        vector_scores = {hit.chunk_id: hit.score for hit in lanes.vector}
        lexical_scores = {hit.chunk_id: hit.score for hit in lanes.keyword}
        retrieved_at = self._clock()
        terms = query_terms(query.text)
        hits: list[SearchHit] = []
        spent = 0
        truncated = False
        # Identical texts collapse into one hit before the limit: a page of ten hits is ten different texts.
        evidence = {c: (vector_scores.get(c), lexical_scores.get(c), c in direct.chunk_ids) for c in order}
        collapsed = collapse(order, snapshots, evidence=evidence, copies=copies)
        for distinct in collapsed[: query.limit]:
            chunk_id = distinct.chunk_id
            snapshot = snapshots[chunk_id]
            excerpt = excerpt_of(snapshot.body)
            if budgeted and hits and spent + len(excerpt) > self._tuning.context_budget_characters:
                truncated = True  # the context budget: a prefix of the ranking, never a reordering
                break
            spent += len(excerpt)
            hits.append(
                SearchHit(
                    chunk_id=chunk_id,
                    score=scores[distinct.ranked_as],  # a kept copy takes its text's place
                    vector_score=vector_scores.get(chunk_id),
                    lexical_score=lexical_scores.get(chunk_id),
                    direct_subject=chunk_id in direct.chunk_ids,
                    excerpt=excerpt,
                    citation=Citation.of_snapshot(
                        snapshot,
                        excerpt=excerpt,
                        retrieved_at=retrieved_at,
                        # The blocks whose words the query names: their page and box, not the chunk's first.
                        matched=matching_regions(snapshot.location, snapshot.body, terms),
                    ),
                    also_in=also_in(distinct.others, excerpt=excerpt, retrieved_at=retrieved_at, terms=terms),
                )
            )
        if not hits:
            return Empty(
                outcome=EmptyReason.NO_MATCH,
                message=_sentence(EmptyReason.NO_MATCH, query),
                vector_available=lanes.vector_available,
            )
        return Found(
            hits=tuple(hits), vector_available=lanes.vector_available, truncated_by_budget=truncated, rerank=rerank
        )

    def direct_subjects(
        self,
        tenant_id: str,
        collections: frozenset[str],
        query: SearchQuery,
        fused: Sequence[tuple[str, float]],
        lanes: LaneResults,
    ) -> DirectSubjects:
        """The title lane for fused candidates `fused` (chunk id, score) of `lanes`: which are direct subjects,
        and the chunks of named documents none of whose chunks is among them (none without a title index)."""
        if self._titles is None:
            return DirectSubjects()
        return self._titles.direct_subjects(
            tenant_id,
            collections,
            query,
            candidates=[chunk_id for chunk_id, _ in fused],
            embedding=lanes.query_embedding,
        )

    def _embed_query(self, text: str) -> list[float] | None:
        if not self._embedder.capability().available:
            return None
        try:
            return self._embedder.embed_queries([text])[0]
        except (CapabilityUnavailable, EmbeddingFailed) as error:
            logger.warning("the query could not be embedded; keyword lane only", extra={"error": str(error)})
            return None


def _sentence(reason: EmptyReason, query: SearchQuery) -> str:
    """Why nothing was found; with a metadata filter, naming it (it may be why: nothing was searched past it), and
    with quoted phrases or exclusions, saying so. The same words whether the filter names another tenant's values or
    values that exist nowhere."""
    where = query.filters.where
    if reason is not EmptyReason.NO_MATCH or (where is None and not query.constraints):
        return reason.sentence
    among = f" among the files the filter {where.text} keeps" if where is not None else ""
    held = " with its quoted phrases and without its excluded words" if query.constraints else ""
    return f"Nothing in your collections matches that search{held}{among}."
