"""When an indexed version is stale (docs/search.md#re-indexing): indexed with what search no longer reads it by.

One predicate for `GET /v1/coverage`'s `stale` and the re-index work list (which also takes the keyword-only
versions, coverage's `lexicalOnly`), so what the one counts the other queues. The PostgreSQL adapter says the same in
SQL (shared/adapters/postgres/knowledge.py:_STALE), over the context version too, which a record does not carry.
"""

from shared.domain.files import FileVersionRecord, ProcessingState, VersionState


def stale(version: FileVersionRecord, *, embedding_model: str, context_model: str | None) -> bool:
    """Chunks embedded by another model than `embedding_model`, or, where `context_model` writes situating sentences
    (None: no model does), situated by another model or none, or with a gap."""
    if version.chunk_count == 0:
        return False
    if version.embedded_chunk_count > 0 and version.embedding_model != embedding_model:
        return True
    return context_model is not None and (version.context_model != context_model or version.context_gap is not None)


def lexical_only(version: FileVersionRecord) -> bool:
    """Some chunks have no vector: found by the keyword lane only."""
    return version.embedded_chunk_count < version.chunk_count


def to_reindex(version: FileVersionRecord, *, embedding_model: str, context_model: str | None) -> bool:
    """An indexed, stored version that is stale or keyword-only: on the re-index work list."""
    return (
        version.state is VersionState.STORED
        and version.processing_state is ProcessingState.INDEXED
        and (stale(version, embedding_model=embedding_model, context_model=context_model) or lexical_only(version))
    )
