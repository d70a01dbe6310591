"""Search: the chunks of indexed versions and the lanes that rank them.

The docstrings are the contracts adapters keep (docs/architecture.md, "Ports and their adapters").
"""

from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol
from uuid import UUID

from shared.domain.knowledge import CollectionCoverage, IndexedChunk, IndexingResult, IndexWrite, RankedChunk
from shared.domain.query_constraints import NO_CONSTRAINTS, QueryConstraints
from shared.domain.reranking import RerankCandidate, Reranked
from shared.domain.search import ChunkSnapshot, SearchFilters
from shared.domain.titles import DirectChunk, NamedTitle


class KnowledgeStore(Protocol):
    """Chunks of indexed file versions. Only the newest indexed version of a file has chunks."""

    def replace_chunks(
        self,
        tenant_id: str,
        version_id: UUID,
        chunks: Iterable[IndexedChunk],
        result: IndexingResult,
        *,
        attempt: int | None,
    ) -> IndexWrite:
        """In one transaction: check the version is still stored and held (by processing `attempt` in
        `indexing`, or, for a re-index with attempt None, still `indexed`), remove every chunk of the
        file, insert these (consumed as they are written: an iterator is never held whole), and record
        `result` on the version (processing becomes `indexed`). A file being deleted, or a version
        superseded by a newer indexed one, gets no chunks. The chunks carry the file's collection as it is at
        this write (read under the file's lock), not the one they were made with: a file moved while it was
        processed is indexed where it is now."""
        ...

    def versions_to_reindex(
        self,
        tenant_id: str,
        collections: frozenset[str] | None,
        embedding_model: str,
        limit: int,
        *,
        context_model: str | None = None,
    ) -> list[tuple[UUID, UUID]]:
        """(file, version) of indexed versions with chunks embedded by another model or not at all, or cut under
        an older context (shared/domain/chunk_context.py:CONTEXT_VERSION), or, where `context_model` writes situating
        sentences, situated by another model or none or with a gap; derived from what is stored, so an interrupted
        re-index resumes with no cursor."""
        ...

    def coverage(
        self, tenant_id: str, collections: frozenset[str], embedding_model: str, *, context_model: str | None = None
    ) -> list[CollectionCoverage]:
        """Per collection, its files by their current version's state: `stale` counts the indexed versions that
        versions_to_reindex lists for being stale (another embedding model, an older context, or, where
        `context_model` writes situating sentences, another model's, none or a gap); `lexical_only` those it lists
        for chunks without vectors."""
        ...

    def snapshots(self, tenant_id: str, collections: frozenset[str], chunk_ids: Sequence[str]) -> list[ChunkSnapshot]:
        """The stored chunks among `chunk_ids` in `collections` (a hit outside them is never hydrated)."""
        ...

    def same_text(
        self,
        tenant_id: str,
        collections: frozenset[str],
        text_hashes: Iterable[str],
        *,
        filters: SearchFilters,
        per_text: int,
        excluding: Collection[str] = (),
    ) -> list[ChunkSnapshot]:
        """The stored chunks in `collections` that `filters` keep whose text (the body, as `snapshots` gives it)
        has one of `text_hashes` (`domain.duplicates.text_sha256`), other than the chunks `excluding` names (those
        the caller holds already): at most `per_text` of each, the oldest upload first (then the chunk id). A chunk
        outside `collections` is never among them."""
        ...

    def one_moment(self, tenant_id: str) -> AbstractContextManager[None]:
        """Every read of the index inside (the lanes, the title lane, `snapshots`) sees it at one moment: a search
        racing a change of a file's metadata sees it before or after, never both."""
        ...


class SituationCache(Protocol):
    """Chunks' situating sentences as a model wrote them, per file and model, by the hash of what the chunk is
    indexed with but the sentence (shared/domain/chunk_situations.py:situation_key): a re-index of the same
    document does not pay for them again."""

    def find(self, tenant_id: str, file_id: UUID, model: str, keys: Sequence[str]) -> dict[str, str]:
        """The sentences stored for the file's chunks among `keys` that have one, by key."""
        ...

    def keep(self, tenant_id: str, file_id: UUID, model: str, situations: Mapping[str, str]) -> None:
        """Store the file's sentences by key; a key already stored keeps its first sentence. Deleting the file
        deletes them (they are derived from its text)."""
        ...


class VectorIndex(Protocol):
    """Nearest neighbours over chunk embeddings (pgvector HNSW with iterative scan)."""

    def nearest(
        self,
        tenant_id: str,
        collections: frozenset[str],
        embedding: Sequence[float],
        *,
        embedding_model: str,
        limit: int,
        filters: SearchFilters,
        constraints: QueryConstraints = NO_CONSTRAINTS,
    ) -> list[RankedChunk]:
        """Only chunks of `collections` (required; empty means none) and `filters`, embedded by
        `embedding_model`, holding `constraints`' phrases and none of its exclusions, are candidates, filtered
        inside the scan before ranking (so `limit` are found when that many qualify). Scores are
        (cosine + 1) / 2, best first; the caller applies the floor."""
        ...


class KeywordIndex(Protocol):
    """Lexical ranking over the same chunks: BM25 with statistics kept per tenant and collection."""

    def search(
        self,
        tenant_id: str,
        collections: frozenset[str],
        query: str,
        *,
        limit: int,
        filters: SearchFilters,
        k1: float,
        b: float,
        context_weight: float = 1.0,
        constraints: QueryConstraints = NO_CONSTRAINTS,
    ) -> list[RankedChunk]:
        """Only chunks of `collections` (required) and `filters`, holding `constraints`' phrases and none of its
        exclusions, are candidates, before the limit; stopwords are stripped from `query`, identifiers (ERR-4021,
        Q3-2026) kept whole; any query term may match (OR). A term's occurrences in a chunk's context (its
        document's title, headings, caption) count `context_weight` times each, its body's once."""
        ...


class TitleIndex(Protocol):
    """Indexed documents by their complete titles (first heading, filename without extension), for the title
    lane: written and removed with a version's chunks by the KnowledgeStore."""

    def named(
        self, tenant_id: str, collections: frozenset[str], keys: Sequence[str], *, filters: SearchFilters
    ) -> list[NamedTitle]:
        """The documents of `collections` (required), under `filters`, with a title whose key is one of `keys`
        (shared/domain/titles.py), found by key equality: never a scan of the titles."""
        ...

    def direct_chunks(
        self,
        tenant_id: str,
        collections: frozenset[str],
        version_ids: Sequence[str],
        *,
        candidates: Iterable[str],
        embedding: Sequence[float] | None,
        embedding_model: str,
        per_document: int,
        constraints: QueryConstraints = NO_CONSTRAINTS,
    ) -> list[DirectChunk]:
        """The `candidates` (chunk ids the lanes found) that belong to `version_ids`, `found`; then, for each
        version none of whose chunks is a candidate, its best `per_document` chunks that hold `constraints`'
        phrases and none of its exclusions (nearest to `embedding` when given and the version is embedded with
        `embedding_model`, else its first), in `version_ids` order."""
        ...


class Reranker(Protocol):
    """Reorders the best fused candidates of a search (seeds/000: "the reranker is switchable because its value is a
    claim"; docs/search.md#the-reranker): the identifier booster (shared/domain/identifier_booster.py, the local
    default) or a Bedrock rerank model (shared/adapters/aws/bedrock_rerank.py). The retrieval service decides the
    rest the same way for each (shared/services/reranking.py): which candidates it is given, its time budget, the
    tenant's limit for a metered one, and that fusion order stands, said in the response, whenever it is skipped."""

    @property
    def model_id(self) -> str:
        """What a search response names as its model (`identifier-booster`, `cohere.rerank-v3-5:0`)."""
        ...

    @property
    def depth(self) -> int | None:
        """How many of the best fused candidates it is given (None: all); the rest follow in fusion order."""
        ...

    @property
    def metered(self) -> bool:
        """Whether a call is spend: checked against the tenant's daily rerank limit before, booked in the usage ledger
        (its `Reranked.usage`) once it answered."""
        ...

    @property
    def in_process(self) -> bool:
        """Whether it answers from memory, without I/O, in microseconds (the identifier booster): called on the
        search's own thread, with no time budget and no worker; a model behind the network is not."""
        ...

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> Reranked:
        """`candidates` in fusion order → their chunk ids best first (`Reranked.applied`), or why it could not
        (`Reranked.skipped`: `failed` for an error the model answered or an answer that cannot be read, `timed_out`
        for none in time). Never raises for what the model did. An order with nothing in it, or with an id it was
        not given, is "no opinion": the service keeps fusion order, never an empty result."""
        ...
