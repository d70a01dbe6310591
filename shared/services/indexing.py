"""Indexing: a version's extracted document → chunks → vectors → one atomic swap of its chunks.

If the embedder is missing or fails, the chunks are stored anyway for the keyword lane and the gap is
recorded (never "indexed" pretending to be complete); a re-index embeds them later.
"""

import hashlib
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from shared.domain.capabilities import CapabilityStatus
from shared.domain.chunk_context import declared_title, document_title
from shared.domain.chunk_situations import Situation, fitted_situation
from shared.domain.chunking import ChunkingStrategy, StructuralChunker
from shared.domain.document import ExtractedDocument
from shared.domain.errors import CapabilityUnavailable, EmbeddingFailed
from shared.domain.files import FileRecord, FileVersionRecord
from shared.domain.knowledge import HEADING_SEPARATOR, ChunkDraft, IndexedChunk, IndexingResult, IndexWrite
from shared.domain.languages import chunk_languages, declared_language
from shared.domain.titles import first_heading
from shared.domain.usage import Usage
from shared.observability import logger
from shared.ports import EmbeddingProvider, KnowledgeStore, LanguageDetector


class UnindexableDocument(Exception):
    """The document cannot be cut into chunks the model can read (a document problem, not infrastructure)."""


def chunk_id(version_id: UUID | str, ordinal: int) -> str:
    """Stable from (version, index): a citation recorded against chunk 3 still names chunk 3 after a
    re-index of the same version."""
    return f"{version_id}:{ordinal}"


def embedded_tokens(drafts: Iterable[ChunkDraft]) -> int:
    """The tokens embedding `drafts` sends the model: each distinct text once, as `Indexer.embed` sends it."""
    return sum({draft.content: draft.token_count for draft in drafts}.values())


def estimated_tokens(text: str) -> int:
    """A tokenizer-free upper estimate (about 3 bytes per token), for chunking when no model is present:
    a later re-index with the model re-cuts the chunks in its own tokens."""
    return max(1, math.ceil(len(text.encode("utf-8")) / 3))


@dataclass(frozen=True)
class IndexOutcome:
    written: IndexWrite
    result: IndexingResult


# Told what embedding a version's chunks consumed, after the model answered and before the chunks are
# stored: a priced call is recorded even if the write that follows fails.
OnEmbedded = Callable[[Usage], None]


@dataclass(frozen=True)
class IndexTarget:
    """The version being indexed, with what every chunk snapshots for its citation and filters."""

    tenant_id: str
    file_id: UUID
    version_id: UUID
    collection_id: str
    filename: str
    media_type: str
    uploaded_at: datetime
    language: str | None = None  # declared for the file: every chunk's, no detection

    @classmethod
    def of(cls, file: FileRecord, version: FileVersionRecord) -> "IndexTarget":
        return cls(
            tenant_id=file.tenant_id,
            file_id=file.file_id,
            version_id=version.version_id,
            collection_id=file.collection_id,
            filename=version.filename,
            media_type=version.media_type,
            uploaded_at=version.stored_at or version.created_at,
            language=declared_language(version.declared_language, file.metadata),
        )


class Indexer:
    def __init__(
        self,
        knowledge: KnowledgeStore,
        embedder: EmbeddingProvider,
        detector: LanguageDetector,
        *,
        max_chunk_tokens: int = 256,
        max_chunks: int = 20_000,
        embed_batch: int = 64,
        chunker: Callable[[Callable[[str], int], int], ChunkingStrategy] = StructuralChunker,
    ) -> None:
        self._knowledge = knowledge
        self._embedder = embedder
        self._detector = detector
        self._max_chunk_tokens = max_chunk_tokens
        self._max_chunks = max_chunks
        self._embed_batch = embed_batch
        self._chunker = chunker

    @property
    def model_id(self) -> str:
        return self._embedder.model_id

    def capability(self) -> CapabilityStatus:
        return self._embedder.capability()

    def situation(self, text: str, draft: ChunkDraft) -> Situation | None:
        """A chunk's situating sentence with the tokens it adds to what is embedded (its separator included): cut at
        a word so that the chunk with it stays within the embedding model's input (its `max_tokens`), None when no
        word of it fits. A model writes it after the chunk was sized to that limit without it."""
        if not self._embedder.capability().available:
            return Situation(text=text, tokens=estimated_tokens(f"{HEADING_SEPARATOR}{text}"))
        return fitted_situation(draft, text, count=self._embedder.count_tokens, max_tokens=self._embedder.max_tokens)

    def usage(self, tokens: int) -> Usage:
        """What embedding `tokens` tokens costs, for the ledger."""
        return self._embedder.usage(tokens)

    def chunks_of(
        self, document: ExtractedDocument, *, language: str | None = None, filename: str = ""
    ) -> tuple[list[ChunkDraft], bool]:
        """The document's chunks, sized for the embedder when it can count, each under its document's title (from
        the document, else `filename`), each with its language (`language` for all when the file declares one);
        True when cut at max_chunks."""
        if self._embedder.capability().available:
            count, budget = self._embedder.count_tokens, min(self._max_chunk_tokens, self._embedder.max_tokens)
        else:
            count, budget = estimated_tokens, self._max_chunk_tokens
        try:
            drafts = self._chunker(count, budget).chunk(document, title=document_title(document, filename))
        except ValueError as error:
            raise UnindexableDocument(str(error)) from error
        if drafts:
            drafts[0] = drafts[0].model_copy(
                update={"document_title": first_heading(document) or declared_title(document.title)}
            )
        truncated = len(drafts) > self._max_chunks
        drafts = drafts[: self._max_chunks]
        languages = chunk_languages([draft.text for draft in drafts], self._detector.detect, declared=language)
        drafts = [draft.model_copy(update={"language": found}) for draft, found in zip(drafts, languages, strict=True)]
        return drafts, truncated

    def embed(self, texts: Sequence[str]) -> tuple[list[list[float]] | None, str | None]:
        """Vectors for `texts`, or None and why not: a missing or failing model leaves a gap, not an error.
        Each distinct text is embedded once (running headers, boilerplate, a file of one repeated line)."""
        if not texts:
            return [], None
        distinct = list(dict.fromkeys(texts))
        try:
            vectors: list[list[float]] = []
            for start in range(0, len(distinct), self._embed_batch):
                vectors.extend(self._embedder.embed(distinct[start : start + self._embed_batch]))
        except CapabilityUnavailable as error:
            return None, error.reason
        except EmbeddingFailed as error:
            return None, str(error)
        if len(vectors) != len(distinct):
            return None, f"the embedding model answered {len(vectors)} vectors for {len(distinct)} texts"
        by_text = dict(zip(distinct, vectors, strict=True))
        return [by_text[text] for text in texts], None

    def index(
        self,
        target: IndexTarget,
        document: ExtractedDocument,
        *,
        attempt: int | None,
        on_embedded: OnEmbedded | None = None,
    ) -> IndexOutcome:
        return self.index_many([(target, document, attempt)], on_embedded=on_embedded)[0]

    def index_many(
        self,
        items: Sequence[tuple[IndexTarget, ExtractedDocument, int | None]],
        *,
        on_embedded: OnEmbedded | None = None,
    ) -> list[IndexOutcome]:
        """Index several versions, embedding all their chunks in full batches (one version's two chunks
        would waste a batch the model runs as fast as sixty-four)."""
        cut = [
            (target, *self.chunks_of(document, language=target.language, filename=target.filename), attempt)
            for target, document, attempt in items
        ]
        vectors, gap = self.embed([draft.content for _, drafts, _, _ in cut for draft in drafts])
        if vectors and on_embedded is not None:
            on_embedded(self._embedder.usage(embedded_tokens(draft for _, drafts, _, _ in cut for draft in drafts)))
        written = []
        offset = 0
        for target, drafts, truncated, attempt in cut:
            own = vectors[offset : offset + len(drafts)] if vectors is not None else None
            offset += len(drafts)
            written.append(self.write(target, drafts, own, gap, truncated=truncated, attempt=attempt))
        return written

    def write(
        self,
        target: IndexTarget,
        drafts: Sequence[ChunkDraft],
        vectors: Sequence[Sequence[float]] | None,
        gap: str | None,
        *,
        truncated: bool,
        attempt: int | None,
    ) -> IndexOutcome:
        return self.write_batches(
            target, [(drafts, vectors)], count=len(drafts), gap=gap, truncated=truncated, attempt=attempt
        )

    def write_batches(
        self,
        target: IndexTarget,
        batches: Iterable[tuple[Sequence[ChunkDraft], Sequence[Sequence[float]] | None]],
        *,
        count: int,
        gap: str | None,
        truncated: bool,
        attempt: int | None,
        context_gap: str | None = None,
        context_model: str | None = None,
    ) -> IndexOutcome:
        """Swap in `count` chunks given batch by batch (each batch's vectors, or None for all of them when
        there is a `gap`), consumed while they are written: only one batch is in memory at a time."""
        embedded = gap is None
        model = self._embedder.model_id if embedded else None

        def chunks() -> Iterator[IndexedChunk]:
            for drafts, vectors in batches:
                if embedded and (vectors is None or len(vectors) != len(drafts)):
                    raise ValueError("a batch of chunks came without one vector per chunk")
                for index, draft in enumerate(drafts):
                    yield IndexedChunk(
                        chunk_id=chunk_id(target.version_id, draft.ordinal),
                        file_id=str(target.file_id),
                        version_id=str(target.version_id),
                        collection_id=target.collection_id,
                        filename=target.filename,
                        media_type=target.media_type,
                        uploaded_at=target.uploaded_at,
                        draft=draft,
                        content_hash=hashlib.sha256(draft.content.encode()).hexdigest(),
                        embedding=tuple(vectors[index]) if embedded and vectors is not None else None,
                        embedding_model=model,
                    )

        result = IndexingResult(
            chunk_count=count,
            embedded_count=count if embedded else 0,
            embedding_model=model if count else None,
            embedding_gap=gap if count else None,
            truncated=truncated,
            context_gap=context_gap if count else None,
            context_model=context_model if count else None,
        )
        written = self._knowledge.replace_chunks(target.tenant_id, target.version_id, chunks(), result, attempt=attempt)
        logger.info(
            "indexed", extra={"write": written.value, "chunks": count, "embedded": result.embedded_count, "gap": gap}
        )
        return IndexOutcome(written=written, result=result)
