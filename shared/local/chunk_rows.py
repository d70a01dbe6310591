"""Chunks written straight through the KnowledgeStore port, bypassing the pipeline: for the search
benchmark and the index's own tests, which place texts and vectors exactly.

The versions are created through the real metadata store and claimed for indexing as the pipeline
claims them, so `replace_chunks` accepts the rows as it would the pipeline's.
"""

import hashlib
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.file_metadata import PostgresFileMetadataStore
from shared.domain.document import BlockKind
from shared.domain.files import NewVersion, ProcessingState
from shared.domain.knowledge import ChunkDraft, ChunkLocation, IndexedChunk
from shared.domain.uploads import storage_key


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


def paragraph_drafts(texts: Sequence[str], languages: Sequence[str | None] | None = None) -> list[ChunkDraft]:
    """Each text as one paragraph chunk, on a line of its own; in `languages[i]` when given (else not known)."""
    return [
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
            language=languages[ordinal] if languages is not None else None,
        )
        for ordinal, text in enumerate(texts)
    ]


def stored_rows(
    file_id: uuid.UUID,
    version_id: uuid.UUID,
    collection: str,
    drafts: Sequence[ChunkDraft],
    *,
    vectors: Sequence[tuple[float, ...] | None] | None = None,
    embedding_model: str,
    filename: str = "notes.txt",
    media_type: str = "text/plain",
) -> list[IndexedChunk]:
    """Chunks as the chunker cut them (or as a caller wrote them), as stored rows of one version; a row
    with a vector is embedded by `embedding_model`."""
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
                embedding_model=embedding_model if vector is not None else None,
            )
        )
    return rows
