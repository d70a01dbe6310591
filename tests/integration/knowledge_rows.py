"""Writing chunks straight through the KnowledgeStore port, for tests of the index itself.

The rows are built as the search benchmark builds them (shared/local/chunk_rows.py); the vectors come
from a fake embedder (named as one) so a test can place them exactly.
"""

import math
import uuid
from collections.abc import Sequence

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.knowledge import PostgresKnowledgeIndex
from shared.domain.knowledge import ChunkDraft, IndexedChunk, IndexingResult, IndexWrite
from shared.local.chunk_rows import new_indexing_version, paragraph_drafts, stored_rows

FAKE_MODEL = "fake-test-embedder"
DIMENSION = 384


def unit_vector(*weights: tuple[int, float]) -> tuple[float, ...]:
    """A 384-dimension unit vector with the given (axis, weight) components."""
    vector = [0.0] * DIMENSION
    for axis, weight in weights:
        vector[axis] = weight
    norm = math.sqrt(sum(value * value for value in vector)) or 1.0
    return tuple(value / norm for value in vector)


def chunk_rows(
    file_id: uuid.UUID,
    version_id: uuid.UUID,
    collection: str,
    texts: Sequence[str],
    *,
    vectors: Sequence[tuple[float, ...] | None] | None = None,
    filename: str = "notes.txt",
) -> list[IndexedChunk]:
    return draft_rows(file_id, version_id, collection, paragraph_drafts(texts), vectors=vectors, filename=filename)


def draft_rows(
    file_id: uuid.UUID,
    version_id: uuid.UUID,
    collection: str,
    drafts: Sequence[ChunkDraft],
    *,
    vectors: Sequence[tuple[float, ...] | None] | None = None,
    filename: str = "notes.txt",
    media_type: str = "text/plain",
) -> list[IndexedChunk]:
    """Chunks as the chunker cut them (or as a test wrote them), as stored rows of one version."""
    return stored_rows(
        file_id,
        version_id,
        collection,
        drafts,
        vectors=vectors,
        embedding_model=FAKE_MODEL,
        filename=filename,
        media_type=media_type,
    )


def index_texts(
    database: Database,
    tenant: str,
    collection: str,
    texts: Sequence[str],
    *,
    vectors: Sequence[tuple[float, ...] | None] | None = None,
    filename: str = "notes.txt",
    languages: Sequence[str | None] | None = None,
) -> tuple[uuid.UUID, uuid.UUID]:
    """One new file whose only version is indexed with `texts` as its chunks (in `languages[i]`, else not known)."""
    file_id, version_id, attempt = new_indexing_version(database, tenant, collection, filename)
    rows = draft_rows(
        file_id, version_id, collection, paragraph_drafts(texts, languages), vectors=vectors, filename=filename
    )
    _store(database, tenant, version_id, attempt, rows)
    return file_id, version_id


def index_drafts(
    database: Database,
    tenant: str,
    collection: str,
    drafts: Sequence[ChunkDraft],
    *,
    filename: str,
    media_type: str,
) -> tuple[uuid.UUID, uuid.UUID]:
    """One new file whose only version is indexed with `drafts` as its chunks (no vectors)."""
    file_id, version_id, attempt = new_indexing_version(database, tenant, collection, filename, media_type=media_type)
    rows = draft_rows(file_id, version_id, collection, drafts, filename=filename, media_type=media_type)
    _store(database, tenant, version_id, attempt, rows)
    return file_id, version_id


def _store(database: Database, tenant: str, version_id: uuid.UUID, attempt: int, rows: Sequence[IndexedChunk]) -> None:
    embedded = sum(1 for row in rows if row.embedding is not None)
    written = PostgresKnowledgeIndex(database).replace_chunks(
        tenant,
        version_id,
        rows,
        IndexingResult(
            chunk_count=len(rows), embedded_count=embedded, embedding_model=FAKE_MODEL if embedded else None
        ),
        attempt=attempt,
    )
    assert written is IndexWrite.STORED
