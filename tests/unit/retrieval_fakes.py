"""Fakes of retrieval's ports (named as fakes) for the unit tests of Retrieval and the title lane: both lanes and
the store answering from fixed rankings, and an embedder that returns one fixed vector."""

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime

from shared.domain.auth import Principal
from shared.domain.capabilities import CapabilityStatus
from shared.domain.duplicates import text_sha256
from shared.domain.errors import EmbeddingFailed
from shared.domain.identifier_booster import IdentifierBooster
from shared.domain.knowledge import ChunkLocation, CollectionCoverage, RankedChunk
from shared.domain.query_constraints import QueryConstraints
from shared.domain.search import ChunkSnapshot, RetrievalTuning, SearchFilters
from shared.domain.similarity import MINILM_SCALE
from shared.domain.usage import Usage
from shared.services.authorization import ClaimsAuthorizationPolicy
from shared.services.reranking import Reranking
from shared.services.retrieval import Retrieval

NOW = datetime(2026, 11, 29, tzinfo=UTC)
# Far more than the booster (microseconds) or a fake needs: no test here is about the budget.
RERANK_BUDGET_SECONDS = 30.0


class FakeEmbedder:
    languages: frozenset[str] | None = None  # every language, as a multilingual model
    similarity_scale = MINILM_SCALE

    def __init__(self, *, available: bool = True, fails: bool = False) -> None:
        self.available = available
        self.fails = fails

    model_id = "fake"
    dimension = 3
    max_tokens = 100

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready("fake") if self.available else CapabilityStatus.unavailable("fake", "off")

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.fails:
            raise EmbeddingFailed("throttled")
        return [[1.0, 0.0, 0.0] for _ in texts]

    def usage(self, tokens: int) -> Usage:
        return Usage(provider="fake", operation="fake:embed", model=self.model_id, priced=False, input_tokens=tokens)

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        return self.embed(questions)


class FakeLanes:
    """Both lanes and the store, answering from fixed rankings, recording what they were asked."""

    def one_moment(self, tenant_id: str) -> AbstractContextManager[None]:
        return nullcontext()  # fixed rankings in memory: one moment already

    def __init__(self, vector: list[tuple[str, float]], keyword: list[tuple[str, float]], bodies: dict[str, str]):
        self.vector = vector
        self.keyword = keyword
        self.bodies = bodies
        self.asked: list[tuple[str, frozenset[str]]] = []
        self.constraints: list[tuple[str, QueryConstraints]] = []  # what each lane was asked to hold
        # The same texts stored elsewhere, as the store's same_text finds them.
        self.copies: list[ChunkSnapshot] = []
        self.texts_asked: list[tuple[frozenset[str], SearchFilters, frozenset[str]]] = []
        # When a chunk's file was uploaded (its file is then its own, `f-{chunk id}`); none: not known.
        self.uploaded: dict[str, datetime] = {}

    def nearest(self, tenant_id, collections, embedding, *, embedding_model, limit, filters, constraints=None):  # type: ignore[no-untyped-def]
        self.asked.append(("vector", collections))
        self.constraints.append(("vector", constraints))
        return [RankedChunk(chunk_id=c, rank=i, score=s) for i, (c, s) in enumerate(self.vector[:limit], start=1)]

    def search(self, tenant_id, collections, query, *, limit, filters, k1, b, context_weight=1.0, constraints=None):  # type: ignore[no-untyped-def]
        self.asked.append(("keyword", collections))
        self.constraints.append(("keyword", constraints))
        return [RankedChunk(chunk_id=c, rank=i, score=s) for i, (c, s) in enumerate(self.keyword[:limit], start=1)]

    def snapshots(self, tenant_id, collections, chunk_ids):  # type: ignore[no-untyped-def]
        return [
            ChunkSnapshot(
                chunk_id=chunk_id,
                file_id=f"f-{chunk_id}" if chunk_id in self.uploaded else "f",
                version_id="v",
                filename="a.pdf",
                media_type="application/pdf",
                collection_id="docs",
                location=ChunkLocation(page_start=2, page_end=2),
                heading_path=("Intro",),
                body=self.bodies.get(chunk_id, f"text of {chunk_id}"),
                uploaded_at=self.uploaded.get(chunk_id),
            )
            for chunk_id in chunk_ids
        ]

    def same_text(self, tenant_id, collections, text_hashes, *, filters, per_text, excluding=()):  # type: ignore[no-untyped-def]
        self.texts_asked.append((collections, filters, frozenset(excluding)))
        wanted = set(text_hashes)
        found = [copy for copy in self.copies if text_sha256(copy.body) in wanted and copy.chunk_id not in excluding]
        return found[:per_text]

    def replace_chunks(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("not used")

    def versions_to_reindex(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("not used")

    def coverage(self, *args, **kwargs) -> list[CollectionCoverage]:  # type: ignore[no-untyped-def]
        raise AssertionError("not used")


def retrieval(
    lanes: FakeLanes, embedder: FakeEmbedder | None = None, reranker: object = None, **tuning: object
) -> Retrieval:
    return Retrieval(
        authorization=ClaimsAuthorizationPolicy(),
        knowledge=lanes,
        vectors=lanes,
        keywords=lanes,
        embedder=embedder or FakeEmbedder(),
        tuning=RetrievalTuning.model_validate(tuning),
        reranking=Reranking(
            reranker if reranker is not None else IdentifierBooster(),  # type: ignore[arg-type]
            budget_seconds=RERANK_BUDGET_SECONDS,
        ),
        clock=lambda: NOW,
    )


def caller(*collections: str) -> Principal:
    return Principal(tenant_id="acme", subject="ann", collections=frozenset(collections))
