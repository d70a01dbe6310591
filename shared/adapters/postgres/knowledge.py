"""The knowledge store over knowledge_chunks: a version's chunks swapped in whole, in one transaction, by the
attempt that holds it; what re-indexing must redo; coverage; and the stored snapshots citations are built from.

The two lanes read the same rows (vector_lane.py, keyword_lane.py). Both apply the caller's subjects and
filters inside the scan, before ranking: filtering after retrieval would let the count of results reveal
what was withheld.
"""

import itertools
import json
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any
from uuid import UUID

import psycopg
from pgvector import Vector
from psycopg.rows import dict_row

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.keyword_lane import PostgresKeywordIndex
from shared.adapters.postgres.search_filters import filter_sql
from shared.adapters.postgres.title_lane import write_titles
from shared.adapters.postgres.vector_lane import PostgresVectorIndex
from shared.domain.chunk_context import CONTEXT_VERSION
from shared.domain.document import BlockKind
from shared.domain.duplicates import text_sha256
from shared.domain.knowledge import (
    ChunkLocation,
    CollectionCoverage,
    IndexedChunk,
    IndexingResult,
    IndexWrite,
)
from shared.domain.languages import analyser_of, by_share, keyword_text, text_search_configuration
from shared.domain.search import ChunkSnapshot, SearchFilters
from shared.domain.titles import document_title_keys
from shared.ports import KnowledgeStore

# One INSERT per slice of a version's chunks (COPY is refused under row-level security): the statement
# triggers update the keyword statistics once per slice, not once per chunk, and a 20,000-chunk version
# never sits whole in memory or in one statement's parameters.
_INSERT_SLICE = 1000
# Each chunk's terms are made here, by its analyser's configuration, from the text the domain folded
# (shared/domain/languages.py:keyword_text): the same terms whatever the server's locale.
_INSERT_CHUNKS = """
INSERT INTO knowledge_chunks (tenant_id, chunk_id, file_id, version_id, ordinal, subjects, content, content_hash,
  embedding, embedding_model, collection_id, filename, media_type, uploaded_at, block_kind, location, heading_path,
  parent_block, block_start, block_end, body_offset, token_count, language, analyser, search_vector, text_sha256)
SELECT %(tenant)s, r.chunk_id, r.file_id, r.version_id, r.ordinal, ARRAY[r.collection_id], r.content, r.content_hash,
  r.embedding, r.embedding_model, r.collection_id, r.filename, r.media_type, r.uploaded_at, r.block_kind,
  r.location::jsonb, ARRAY(SELECT jsonb_array_elements_text(r.heading_path::jsonb)), r.parent_block, r.block_start,
  r.block_end, r.body_offset, r.token_count, r.language, r.analyser,
  setweight(to_tsvector(r.configuration::regconfig, r.keyword_context), 'A')
    || to_tsvector(r.configuration::regconfig, r.keyword_text), r.text_sha256
FROM unnest(%(chunk_id)s::text[], %(file_id)s::uuid[], %(version_id)s::uuid[], %(ordinal)s::int[],
  %(collection_id)s::text[], %(content)s::text[], %(content_hash)s::text[], %(embedding)s::vector[],
  %(embedding_model)s::text[], %(filename)s::text[], %(media_type)s::text[], %(uploaded_at)s::timestamptz[],
  %(block_kind)s::text[], %(location)s::text[], %(heading_path)s::text[], %(parent_block)s::int[],
  %(block_start)s::int[], %(block_end)s::int[], %(body_offset)s::int[], %(token_count)s::int[],
  %(language)s::text[], %(analyser)s::text[], %(configuration)s::text[], %(keyword_context)s::text[],
  %(keyword_text)s::text[], %(text_sha256)s::text[])
  AS r(chunk_id, file_id, version_id, ordinal, collection_id, content, content_hash, embedding, embedding_model,
       filename, media_type, uploaded_at, block_kind, location, heading_path, parent_block, block_start, block_end,
       body_offset, token_count, language, analyser, configuration, keyword_context, keyword_text, text_sha256)
"""


class PostgresKnowledgeStore(KnowledgeStore):
    def __init__(self, database: Database) -> None:
        self._database = database

    def one_moment(self, tenant_id: str) -> AbstractContextManager[None]:
        # One REPEATABLE READ transaction for every lane's statement and the hydration (the adapters share the
        # database, and its tenant transactions join the snapshot).
        return self._database.snapshot(tenant_id)

    def replace_chunks(
        self,
        tenant_id: str,
        version_id: UUID,
        chunks: Iterable[IndexedChunk],
        result: IndexingResult,
        *,
        attempt: int | None,
    ) -> IndexWrite:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cursor:
            # The file's row is locked as deletion locks it: a delete either sees these chunks and removes
            # them, or has already marked the version and this write is refused.
            version = cursor.execute(
                "SELECT v.file_id, f.collection_id, v.state, v.processing_state, v.processing_attempt, v.chunk_count,"
                " (SELECT EXISTS (SELECT 1 FROM file_versions n WHERE n.tenant_id = v.tenant_id"
                "   AND n.file_id = v.file_id AND n.version_id <> v.version_id AND n.created_at > v.created_at"
                "   AND n.state = 'stored')) AS superseded"
                " FROM file_versions v JOIN files f ON f.tenant_id = v.tenant_id AND f.file_id = v.file_id"
                " WHERE v.tenant_id = %s AND v.version_id = %s FOR UPDATE OF f, v",
                (tenant_id, version_id),
            ).fetchone()
            if version is None or not _holds(version, attempt):
                return IndexWrite.NOT_CLAIMED
            if version["superseded"]:
                # A newer version is the file's content now: this one's text must not come back into search
                # (a late retry, a re-index), even while the newer one is still being processed.
                conn.execute(
                    "DELETE FROM knowledge_chunks WHERE tenant_id = %s AND version_id = %s", (tenant_id, version_id)
                )
                _record(
                    conn, tenant_id, version_id, IndexingResult(chunk_count=0, embedded_count=0, embedding_model=None)
                )
                return IndexWrite.SUPERSEDED
            file_id = version["file_id"]
            conn.execute("DELETE FROM knowledge_chunks WHERE tenant_id = %s AND file_id = %s", (tenant_id, file_id))
            conn.execute(
                "UPDATE file_versions SET chunk_count = 0, embedded_chunk_count = 0, embedding_model = NULL,"
                " embedding_gap = NULL, context_gap = NULL, context_model = NULL"
                " WHERE tenant_id = %s AND file_id = %s AND version_id <> %s AND chunk_count > 0",
                (tenant_id, file_id, version_id),
            )
            # In slices, inside the one transaction: a large version's rows and vectors never all sit in
            # memory (nor in one statement's parameters) at once.
            written = 0
            first: IndexedChunk | None = None
            languages: Counter[str] = Counter()
            chunk_stream = iter(chunks)
            while rows := list(itertools.islice(chunk_stream, _INSERT_SLICE)):
                # The file's collection now, read under its lock: a file moved while it was processed is
                # indexed where it is, not where the pipeline found it.
                conn.execute(_INSERT_CHUNKS, _columns(tenant_id, rows, collection_id=version["collection_id"]))
                first = first or min(rows, key=lambda chunk: chunk.draft.ordinal)
                languages.update(chunk.draft.language for chunk in rows if chunk.draft.language is not None)
                written += len(rows)
            if written != result.chunk_count:
                raise ValueError(f"{written} chunks were given for a result of {result.chunk_count}")
            if first is not None:
                # The file's older titles went with its chunks (the trigger of migrations/0019).
                titles = document_title_keys(first.draft.document_title, first.filename)
                write_titles(conn, tenant_id, str(version_id), str(file_id), titles)
            _record(conn, tenant_id, version_id, result, languages=by_share(languages))
        return IndexWrite.STORED

    def versions_to_reindex(
        self,
        tenant_id: str,
        collections: frozenset[str] | None,
        embedding_model: str,
        limit: int,
        *,
        context_model: str | None = None,
    ) -> list[tuple[UUID, UUID]]:
        in_collections = (
            ""
            if collections is None
            else " AND v.file_id IN (SELECT f.file_id FROM files AS f WHERE f.tenant_id = %(tenant)s"
            " AND f.collection_id = ANY(%(collections)s))"
        )
        with self._database.tenant_transaction(tenant_id) as conn:
            rows = conn.execute(
                "SELECT v.file_id, v.version_id FROM file_versions AS v"  # noqa: S608 - constant conditions
                " WHERE v.tenant_id = %(tenant)s AND v.state = 'stored' AND v.processing_state = 'indexed'"
                f" AND ({_STALE} OR {_LEXICAL_ONLY})"
                + in_collections
                + " ORDER BY v.updated_at, v.version_id LIMIT %(limit)s",
                {
                    "tenant": tenant_id,
                    "model": embedding_model,
                    "context": CONTEXT_VERSION,
                    "context_model": context_model,
                    "limit": limit,
                    "collections": sorted(collections or ()),
                },
            ).fetchall()
        return [(row[0], row[1]) for row in rows]

    def coverage(
        self, tenant_id: str, collections: frozenset[str], embedding_model: str, *, context_model: str | None = None
    ) -> list[CollectionCoverage]:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cursor:
            rows = cursor.execute(
                "SELECT f.collection_id, count(*) AS files,"  # noqa: S608 - constant conditions
                " count(*) FILTER (WHERE v.processing_state = 'indexed') AS indexed,"
                " count(*) FILTER (WHERE v.processing_state = 'failed') AS failed,"
                " count(*) FILTER (WHERE v.processing_state NOT IN ('indexed', 'failed')) AS in_progress,"
                f" count(*) FILTER (WHERE v.processing_state = 'indexed' AND {_STALE}) AS stale,"
                f" count(*) FILTER (WHERE v.processing_state = 'indexed' AND {_LEXICAL_ONLY}) AS lexical_only"
                " FROM files f CROSS JOIN LATERAL ("
                # A file's current version: its newest stored one.
                "   SELECT processing_state, chunk_count, embedded_chunk_count, embedding_model, chunk_context,"
                "   context_model, context_gap"
                "   FROM file_versions v"
                "   WHERE v.tenant_id = f.tenant_id AND v.file_id = f.file_id AND v.state = 'stored'"
                "   ORDER BY v.created_at DESC LIMIT 1) AS v"
                " WHERE f.tenant_id = %(tenant)s AND f.collection_id = ANY(%(collections)s)"
                " GROUP BY f.collection_id ORDER BY f.collection_id",
                {
                    "tenant": tenant_id,
                    "collections": sorted(collections),
                    "model": embedding_model,
                    "context": CONTEXT_VERSION,
                    "context_model": context_model,
                },
            ).fetchall()
        return [CollectionCoverage.model_validate(row) for row in rows]

    def snapshots(self, tenant_id: str, collections: frozenset[str], chunk_ids: Sequence[str]) -> list[ChunkSnapshot]:
        if not collections or not chunk_ids:
            return []
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cursor:
            rows = cursor.execute(
                f"SELECT {_SNAPSHOT_COLUMNS} FROM knowledge_chunks AS c"  # noqa: S608 - constant columns
                " JOIN files AS f ON f.tenant_id = c.tenant_id AND f.file_id = c.file_id"
                " WHERE c.tenant_id = %s AND c.subjects && %s AND c.chunk_id = ANY(%s)",
                (tenant_id, sorted(collections), list(chunk_ids)),
            ).fetchall()
        return [_snapshot(row) for row in rows]

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
        hashes = sorted(set(text_hashes))
        if not collections or not hashes or per_text < 1:
            return []
        params: dict[str, Any] = {
            "tenant": tenant_id,
            "collections": sorted(collections),
            "hashes": hashes,
            "per_text": per_text,
            "excluding": sorted(excluding),
        }
        # Found by (tenant_id, text_sha256), an equality row-level security lets the index answer (migration 0033);
        # the collections and filters as the lanes apply them.
        conditions = filter_sql(filters, params, chunk="c.")
        statement = (
            "SELECT found.* FROM unnest(%(hashes)s::text[]) AS wanted(text_sha256) CROSS JOIN LATERAL ("  # noqa: S608
            f" SELECT {_SNAPSHOT_COLUMNS} FROM knowledge_chunks AS c"
            " JOIN files AS f ON f.tenant_id = c.tenant_id AND f.file_id = c.file_id"
            " WHERE c.tenant_id = %(tenant)s AND c.text_sha256 = wanted.text_sha256"
            f" AND c.chunk_id <> ALL(%(excluding)s::text[]) AND c.subjects && %(collections)s{conditions}"
            " ORDER BY c.uploaded_at, c.chunk_id LIMIT %(per_text)s) AS found"
        )
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cursor:
            rows = cursor.execute(statement, params).fetchall()
        return [_snapshot(row) for row in rows]


# A version indexed with what search no longer reads it by (shared/domain/staleness.py says the same of a record):
# chunks embedded by another model, cut under an older context, or, where a model writes situating sentences
# (%(context_model)s not null), situated by another model or none or with a gap. Coverage's `stale` and, with the
# keyword-only versions, the re-index work list: what the one counts the other queues.
_STALE = (
    "v.chunk_count > 0 AND (v.embedded_chunk_count > 0 AND v.embedding_model IS DISTINCT FROM %(model)s"
    " OR v.chunk_context IS DISTINCT FROM %(context)s"
    " OR %(context_model)s::text IS NOT NULL"
    " AND (v.context_model IS DISTINCT FROM %(context_model)s OR v.context_gap IS NOT NULL))"
)
_LEXICAL_ONLY = "v.embedded_chunk_count < v.chunk_count"

_SNAPSHOT_COLUMNS = (
    "c.chunk_id, c.file_id::text, c.version_id::text, c.filename, c.media_type, c.collection_id, c.location,"
    " c.heading_path, c.block_kind, substr(c.content, c.body_offset + 1) AS body,"
    " left(c.content, c.body_offset) AS context, f.metadata, f.metadata_revision,"
    " c.language, c.uploaded_at"
)


def _snapshot(row: dict[str, Any]) -> ChunkSnapshot:
    return ChunkSnapshot(
        chunk_id=row["chunk_id"],
        file_id=row["file_id"],
        version_id=row["version_id"],
        filename=row["filename"],
        media_type=row["media_type"],
        collection_id=row["collection_id"],
        location=ChunkLocation.model_validate(row["location"]),
        heading_path=tuple(row["heading_path"]),
        block_kind=BlockKind(row["block_kind"]),
        body=row["body"],
        context=row["context"],
        metadata=row["metadata"],
        metadata_revision=row["metadata_revision"],
        language=row["language"],
        uploaded_at=row["uploaded_at"],
    )


def _holds(version: dict[str, Any], attempt: int | None) -> bool:
    if version["state"] != "stored":
        return False
    if attempt is None:  # a re-index replaces what an earlier indexing stored, and nothing else
        return bool(version["processing_state"] == "indexed" and version["chunk_count"] > 0)
    return bool(version["processing_state"] == "indexing" and version["processing_attempt"] == attempt)


def _record(
    conn: psycopg.Connection[Any],
    tenant_id: str,
    version_id: UUID,
    result: IndexingResult,
    *,
    languages: Sequence[str] = (),
) -> None:
    conn.execute(
        "UPDATE file_versions SET processing_state = 'indexed', chunk_count = %s, embedded_chunk_count = %s,"
        " embedding_model = %s, embedding_gap = %s, context_gap = %s, context_model = %s, languages = %s,"
        " chunk_context = %s,"
        " indexed_at = now(),"
        " updated_at = now(), failure_reason = NULL, failure_detail = NULL WHERE tenant_id = %s AND version_id = %s",
        (
            result.chunk_count,
            result.embedded_count,
            result.embedding_model,
            result.embedding_gap,
            result.context_gap,
            result.context_model,
            list(languages),
            CONTEXT_VERSION,
            tenant_id,
            version_id,
        ),
    )


def _columns(tenant_id: str, chunks: Sequence[IndexedChunk], *, collection_id: str) -> dict[str, Any]:
    """The chunks as one array per column, for _INSERT_CHUNKS, all in `collection_id`."""
    columns: dict[str, list[Any]] = {
        name: []
        for name in (
            "chunk_id",
            "file_id",
            "version_id",
            "ordinal",
            "collection_id",
            "content",
            "content_hash",
            "embedding",
            "embedding_model",
            "filename",
            "media_type",
            "uploaded_at",
            "block_kind",
            "location",
            "heading_path",
            "parent_block",
            "block_start",
            "block_end",
            "body_offset",
            "token_count",
            "language",
            "analyser",
            "configuration",
            "keyword_context",
            "keyword_text",
            "text_sha256",
        )
    }
    for chunk in chunks:
        draft = chunk.draft
        content = draft.content
        analyser = analyser_of(draft.language)
        row = {
            "chunk_id": chunk.chunk_id,
            "file_id": chunk.file_id,
            "version_id": chunk.version_id,
            "ordinal": draft.ordinal,
            "collection_id": collection_id,
            "content": content,
            "content_hash": chunk.content_hash,
            "embedding": Vector(list(chunk.embedding)) if chunk.embedding is not None else None,
            "embedding_model": chunk.embedding_model,
            "filename": chunk.filename,
            "media_type": chunk.media_type,
            "uploaded_at": chunk.uploaded_at,
            "block_kind": draft.block_kind.value,
            "location": draft.location.model_dump_json(exclude_none=True),
            "heading_path": json.dumps(list(draft.heading_path)),
            "parent_block": draft.parent,
            "block_start": draft.block_start,
            "block_end": draft.block_end,
            "body_offset": len(content) - len(draft.text),
            "token_count": max(draft.token_count, 1),
            "language": draft.language,
            "analyser": analyser,
            "configuration": text_search_configuration(analyser),
            # The context's terms are weighted A, the body's D: the keyword lane weighs them apart (migration 0031).
            "keyword_context": keyword_text(content[: len(content) - len(draft.text)]),
            "keyword_text": keyword_text(draft.text),
            "text_sha256": text_sha256(draft.text),
        }
        for name, value in row.items():
            columns[name].append(value)
    return {"tenant": tenant_id, **columns}


class PostgresKnowledgeIndex(PostgresKnowledgeStore, PostgresVectorIndex, PostgresKeywordIndex):
    """The three ports over the one table in one object, for tests and benchmarks that write and search."""
