"""Writing chunks straight through the KnowledgeStore port, for tests of the index itself.

The versions are created through the real metadata store and claimed for indexing as the pipeline
claims them; the vectors come from a fake embedder (named as one) so a test can place them exactly.
"""

import hashlib
import math
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.file_metadata import PostgresFileMetadataStore
from shared.adapters.postgres.knowledge import PostgresKnowledgeIndex
from shared.domain.document import BlockKind
from shared.domain.files import NewVersion, ProcessingState
from shared.domain.knowledge import ChunkDraft, ChunkLocation, IndexedChunk, IndexingResult, IndexWrite
from shared.domain.uploads import storage_key

FAKE_MODEL = "fake-test-embedder"
DIMENSION = 384


def unit_vector(*weights: tuple[int, float]) -> tuple[float, ...]:
    """A 384-dimension unit vector with the given (axis, weight) components."""
    vector = [0.0] * DIMENSION
    for axis, weight in weights:
        vector[axis] = weight
    norm = math.sqrt(sum(value * value for value in vector)) or 1.0
    return tuple(value / norm for value in vector)


def new_indexing_version(
    database: Database,
    tenant: str,
    collection: str,
    filename: str = "notes.txt",
    file_id: uuid.UUID | None = None,
    *,
    media_type: str = "text/plain",
) -> tuple[uuid.UUID, uuid.UUID, int]:
    """A stored version claimed for indexing (attempt returned), as the pipeline's index step holds it."""
    metadata = PostgresFileMetadataStore(database)
    new_file = file_id is None
    file_id = file_id or uuid.uuid4()
    version_id = uuid.uuid4()
    metadata.create_version(
        NewVersion(
            tenant_id=tenant,
            file_id=file_id,
            version_id=version_id,
            collection_id=collection,
            filename=filename,
            media_type=media_type,
            declared_byte_size=10,
            storage_key=storage_key(tenant, file_id, version_id),
            created_by="tester",
        ),
        new_file=new_file,
    )
    assert metadata.mark_stored(tenant, version_id, byte_size=10, storage_version_id=None)
    attempt = metadata.queue_processing(tenant, version_id, stale_before=datetime.now(UTC))
    assert attempt is not None
    assert metadata.move_processing(
        tenant, version_id, attempt=attempt, to=ProcessingState.INDEXING, expected=[ProcessingState.QUEUED]
    )
    return file_id, version_id, attempt


def chunk_rows(
    file_id: uuid.UUID,
    version_id: uuid.UUID,
    collection: str,
    texts: Sequence[str],
    *,
    vectors: Sequence[tuple[float, ...] | None] | None = None,
    filename: str = "notes.txt",
) -> list[IndexedChunk]:
    drafts = [
        ChunkDraft(
            ordinal=ordinal,
            text=text,
            heading_path=(),
            block_kind=BlockKind.PARAGRAPH,
            location=ChunkLocation(line_start=ordinal + 1, line_end=ordinal + 1),
            block_start=ordinal,
            block_end=ordinal,
            parent=None,
            token_count=max(1, len(text.split())),
        )
        for ordinal, text in enumerate(texts)
    ]
    return draft_rows(file_id, version_id, collection, drafts, vectors=vectors, filename=filename)


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
    rows = []
    for position, draft in enumerate(drafts):
        vector = vectors[position] if vectors is not None else None
        rows.append(
            IndexedChunk(
                chunk_id=f"{version_id}:{draft.ordinal}",
                file_id=str(file_id),
                version_id=str(version_id),
                collection_id=collection,
                filename=filename,
                media_type=media_type,
                uploaded_at=datetime.now(UTC),
                draft=draft,
                content_hash=hashlib.sha256(draft.content.encode()).hexdigest(),
                embedding=vector,
                embedding_model=FAKE_MODEL if vector is not None else None,
            )
        )
    return rows


def index_texts(
    database: Database,
    tenant: str,
    collection: str,
    texts: Sequence[str],
    *,
    vectors: Sequence[tuple[float, ...] | None] | None = None,
    filename: str = "notes.txt",
) -> tuple[uuid.UUID, uuid.UUID]:
    """One new file whose only version is indexed with `texts` as its chunks."""
    file_id, version_id, attempt = new_indexing_version(database, tenant, collection, filename)
    rows = chunk_rows(file_id, version_id, collection, texts, vectors=vectors, filename=filename)
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
