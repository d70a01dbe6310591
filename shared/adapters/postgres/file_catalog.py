"""FileCatalog over PostgreSQL: files and their versions as uploads and deletion see them (shared/ports/files.py)."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from shared.adapters.postgres.file_rows import VERSION_COLUMNS, FileRows, version_of
from shared.adapters.postgres.metadata_rows import metadata_columns, record_key_types
from shared.adapters.postgres.metadata_sql import FileColumns, filter_condition
from shared.adapters.postgres.search_filters import attribute_filters
from shared.domain.errors import InvalidRequest, NotFound
from shared.domain.files import FileRecord, FileVersionRecord, MalwareScan, NewVersion, SameBytes, VersionState
from shared.domain.metadata import MetadataError, MetadataType, changed_metadata
from shared.domain.metadata_filter import MAX_FACET_VALUES, MetadataFilter
from shared.domain.search import SearchFilters
from shared.ports import FileCatalog

_LIVE = ("pending", "stored", "rejected")
# Each version's earliest other stored version in its file's collection (now) with the same bytes, found by the
# partial index of migration 0033: `duplicateOf`. Same collection only, so whoever reads the file reads it too.
_SAME_BYTES = """
SELECT v.version_id, same.file_id, same.version_id AS same_version_id, same.filename
FROM file_versions AS v
JOIN files AS f ON f.tenant_id = v.tenant_id AND f.file_id = v.file_id
CROSS JOIN LATERAL (
  SELECT o.file_id, o.version_id, g.filename FROM file_versions AS o
  JOIN files AS g ON g.tenant_id = o.tenant_id AND g.file_id = o.file_id
  WHERE o.tenant_id = v.tenant_id AND o.content_sha256 = v.content_sha256 AND o.state = 'stored'
    AND g.collection_id = f.collection_id AND (o.created_at, o.version_id) < (v.created_at, v.version_id)
  ORDER BY o.created_at, o.version_id LIMIT 1
) AS same
WHERE v.tenant_id = %s AND v.file_id = ANY(%s) AND v.content_sha256 IS NOT NULL
"""


def _lock_collection(conn: psycopg.Connection[Any], tenant_id: str, collection_id: str) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"collection:{tenant_id}/{collection_id}",))


def _lock_live_file(conn: psycopg.Connection[Any], tenant_id: str, file_id: UUID) -> bool:
    """Lock the file's row; True when it exists and still has a live version."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM file_versions v WHERE v.tenant_id = f.tenant_id AND v.file_id = f.file_id"
        " AND v.state IN ('pending', 'stored', 'rejected')) FROM files f"
        " WHERE f.tenant_id = %s AND f.file_id = %s FOR UPDATE OF f",
        (tenant_id, file_id),
    ).fetchone()
    return bool(row and row[0])


def _collection_of(conn: psycopg.Connection[Any], tenant_id: str, file_id: UUID) -> str | None:
    row = conn.execute(
        "SELECT collection_id FROM files WHERE tenant_id = %s AND file_id = %s", (tenant_id, file_id)
    ).fetchone()
    return str(row[0]) if row else None


def _move_chunks(conn: psycopg.Connection[Any], tenant_id: str, file_id: UUID, to_collection: str) -> None:
    """Re-insert the file's chunks under `to_collection` in one statement. A chunk's collection is immutable
    (migrations/0005: the keyword statistics follow inserts and deletes only), so the rows are deleted and
    written again, which moves their postings and both collections' counts through the same triggers. Every
    stored column is copied as it is (read from the catalog, so a column added later moves too); only the
    collection and the subjects change."""
    columns = [
        name
        for (name,) in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'knowledge_chunks'::regclass AND attnum > 0"
            " AND NOT attisdropped AND attgenerated = '' ORDER BY attnum"
        ).fetchall()
    ]
    replaced = {"collection_id": sql.SQL("%(to)s::text"), "subjects": sql.SQL("ARRAY[%(to)s::text]")}
    conn.execute(
        sql.SQL(
            "WITH moved AS (DELETE FROM knowledge_chunks WHERE tenant_id = %(tenant)s AND file_id = %(file)s"
            " RETURNING *) INSERT INTO knowledge_chunks ({columns}) SELECT {values} FROM moved"
        ).format(
            columns=sql.SQL(", ").join(sql.Identifier(name) for name in columns),
            values=sql.SQL(", ").join(
                replaced.get(name, sql.SQL("moved.{}").format(sql.Identifier(name))) for name in columns
            ),
        ),
        {"tenant": tenant_id, "file": file_id, "to": to_collection},
    )


def _set_on_new_version(conn: psycopg.Connection[Any], new: NewVersion) -> None:
    """A new version's upload sets these keys on what the file has (its row is locked): a new revision."""
    row = conn.execute(
        "SELECT metadata, metadata_revision FROM files WHERE tenant_id = %s AND file_id = %s",
        (new.tenant_id, new.file_id),
    ).fetchone()
    assert row is not None
    try:
        merged = changed_metadata(row[0], new.metadata or {}, ())
    except MetadataError as error:
        raise InvalidRequest(str(error)) from error
    if merged == row[0]:
        return
    written, typed = metadata_columns(merged, record_key_types(conn, new.tenant_id, new.collection_id, merged))
    conn.execute(
        "UPDATE files SET metadata = %s::jsonb, metadata_typed = %s::jsonb, metadata_revision = metadata_revision + 1"
        " WHERE tenant_id = %s AND file_id = %s",
        (written, typed, new.tenant_id, new.file_id),
    )


# The file's current version as the file views show it (FileRecord.current: the newest stored, else the newest
# live one): where a filter reads quire.mediaType, quire.uploadedAt, quire.pages and quire.language of a file.
_CURRENT_VERSION = (
    " LEFT JOIN LATERAL (SELECT v.media_type, coalesce(v.stored_at, v.created_at) AS uploaded_at, v.page_count,"
    " coalesce(v.declared_language, v.languages[1]) AS language"
    " FROM file_versions v WHERE v.tenant_id = f.tenant_id AND v.file_id = f.file_id"
    " AND v.state IN ('pending', 'stored', 'rejected')"
    " ORDER BY (v.state = 'stored') DESC, v.created_at DESC, v.version_id DESC LIMIT 1) AS cur ON true"
)
FILE_COLUMNS = FileColumns(
    built_in={
        "quire.collection": ("f.collection_id", MetadataType.STRING),
        "quire.filename": ("f.filename", MetadataType.STRING),
        "quire.mediaType": ("cur.media_type", MetadataType.STRING),
        "quire.uploadedAt": ("cur.uploaded_at", MetadataType.DATE),
        "quire.pages": ("cur.page_count", MetadataType.NUMBER),
        "quire.language": ("cur.language", MetadataType.STRING),
    }
)


# Facets: each key's values over the files kept, counted once per file (a list's items each), the most frequent
# first (ties by value), at most `per_key` of them. A file is counted only with a live version, as listed.
_FACETS = """
WITH kept AS MATERIALIZED (
  SELECT f.file_id,
         f.metadata || jsonb_build_object('quire.collection', f.collection_id, 'quire.mediaType', cur.media_type)
           AS attributes
  FROM files f{current}
  WHERE f.tenant_id = %(tenant)s AND f.collection_id = ANY(%(collections)s) AND cur.media_type IS NOT NULL
    {conditions}
), counted AS (
  SELECT k.key, e.value, count(DISTINCT kept.file_id) AS files
  FROM kept CROSS JOIN unnest(%(keys)s::text[]) AS k (key)
  CROSS JOIN LATERAL jsonb_array_elements(
    CASE WHEN jsonb_typeof(kept.attributes -> k.key) = 'array' THEN kept.attributes -> k.key
         ELSE jsonb_build_array(kept.attributes -> k.key) END) AS e (value)
  WHERE kept.attributes ? k.key
  GROUP BY k.key, e.value
)
SELECT key, value, files FROM (
  SELECT key, value, files, row_number() OVER (PARTITION BY key ORDER BY files DESC, value::text) AS place
  FROM counted
) AS ranked
WHERE place <= %(per_key)s
ORDER BY key, place
"""


def insert_version(conn: psycopg.Connection[Any], new: NewVersion, *, new_file: bool) -> None:
    """A pending version (and, with `new_file`, its file), in the caller's tenant transaction."""
    # Serialised with deleting the collection's files, so neither can miss the other.
    _lock_collection(conn, new.tenant_id, new.collection_id)
    conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", (new.tenant_id,))
    if new_file:
        metadata = new.metadata or {}
        types = record_key_types(conn, new.tenant_id, new.collection_id, metadata)
        written, typed = metadata_columns(metadata, types)
        conn.execute(
            "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by, metadata,"
            " metadata_typed) VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s::jsonb)",
            (new.tenant_id, new.file_id, new.collection_id, new.filename, new.created_by, written, typed),
        )
    elif not _lock_live_file(conn, new.tenant_id, new.file_id):
        # Deleted since the caller looked: a new version must not bring it back.
        raise NotFound("not found")
    elif _collection_of(conn, new.tenant_id, new.file_id) != new.collection_id:
        # Moved since the caller's role was checked in the collection it saw: as far as that check
        # goes, the file is gone from there (the file's lock orders this against the move).
        raise NotFound("not found")
    elif new.metadata:
        _set_on_new_version(conn, new)
    conn.execute(
        "INSERT INTO file_versions (tenant_id, file_id, version_id, filename, media_type,"
        " declared_byte_size, storage_key, created_by, export_id, processing_state, declared_language,"
        " declared_sha256) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            new.tenant_id,
            new.file_id,
            new.version_id,
            new.filename,
            new.media_type,
            new.declared_byte_size,
            new.storage_key,
            new.created_by,
            new.export_id,
            # A rendered file is never extracted: its processing is decided before its bytes exist.
            "skipped" if new.export_id is not None else "not_started",
            new.declared_language,
            new.declared_sha256,
        ),
    )


class PostgresFileCatalog(FileRows, FileCatalog):
    def create_version(self, new: NewVersion, *, new_file: bool) -> None:
        with self._database.tenant_transaction(new.tenant_id) as conn:
            insert_version(conn, new, new_file=new_file)

    def declared_bytes_since(self, tenant_id: str, since: datetime) -> int:
        # Counted at ticket time, so a flood of tickets is refused before a URL is signed (index of 0016).
        with self._database.tenant_transaction(tenant_id) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(declared_byte_size), 0) FROM file_versions"
                " WHERE tenant_id = %s AND created_at >= %s",
                (tenant_id, since),
            ).fetchone()
        return int(row[0]) if row else 0

    def get_file(self, tenant_id: str, file_id: UUID, *, include_gone: bool = False) -> FileRecord | None:
        with self._database.tenant_transaction(tenant_id) as conn:
            records = self._records(conn, tenant_id, [file_id], same_bytes=True)
        record = records[0] if records else None
        if record is None or (not include_gone and not any(v.state in _LIVE for v in record.versions)):
            return None
        return record

    def list_files(
        self,
        tenant_id: str,
        collections: frozenset[str],
        *,
        collection_id: str | None,
        limit: int,
        after: tuple[datetime, UUID] | None,
        where: MetadataFilter | None = None,
    ) -> tuple[list[FileRecord], bool]:
        wanted = sorted(collections if collection_id is None else collections & {collection_id})
        if not wanted:
            return [], False
        params: dict[str, Any] = {"tenant": tenant_id, "collections": wanted, "limit": limit + 1}
        query = (
            "SELECT f.file_id, f.created_at FROM files f"  # noqa: S608 - constant text; values are parameters
            + (_CURRENT_VERSION if where is not None else "")
            + " WHERE f.tenant_id = %(tenant)s AND f.collection_id = ANY(%(collections)s)"
            " AND EXISTS (SELECT 1 FROM file_versions v WHERE v.tenant_id = f.tenant_id AND v.file_id = f.file_id"
            "             AND v.state IN ('pending', 'stored', 'rejected'))"
        )
        if where is not None:
            query += " AND " + filter_condition(where.tree, FILE_COLUMNS, params)
        if after is not None:
            query += " AND (f.created_at, f.file_id) < (%(after_at)s, %(after_id)s)"
            params.update(after_at=after[0], after_id=after[1])
        query += " ORDER BY f.created_at DESC, f.file_id DESC LIMIT %(limit)s"
        with self._database.tenant_transaction(tenant_id) as conn:
            rows = conn.execute(query, params).fetchall()
            records = self._records(conn, tenant_id, [row[0] for row in rows[:limit]], same_bytes=True)
        return records, len(rows) > limit

    def same_bytes(self, tenant_id: str, collection_id: str, sha256: str) -> SameBytes | None:
        with self._database.tenant_transaction(tenant_id) as conn, conn.cursor(row_factory=dict_row) as cursor:
            row = cursor.execute(
                "SELECT o.file_id, o.version_id, g.filename FROM file_versions AS o"
                " JOIN files AS g ON g.tenant_id = o.tenant_id AND g.file_id = o.file_id"
                " WHERE o.tenant_id = %s AND o.content_sha256 = %s AND o.state = 'stored' AND g.collection_id = %s"
                " ORDER BY o.created_at, o.version_id LIMIT 1",
                (tenant_id, sha256, collection_id),
            ).fetchone()
        return SameBytes.model_validate(row) if row else None

    def facets(
        self,
        tenant_id: str,
        collections: frozenset[str],
        keys: Sequence[str],
        *,
        where: MetadataFilter | None = None,
        filters: SearchFilters | None = None,
    ) -> dict[str, list[tuple[Any, int]]]:
        counted: dict[str, list[tuple[Any, int]]] = {key: [] for key in keys}
        if not collections or not keys:
            return counted
        params: dict[str, Any] = {
            "tenant": tenant_id,
            "collections": sorted(collections),
            "keys": list(keys),
            "per_key": MAX_FACET_VALUES,
        }
        conditions = (
            "".join(f" AND {c}" for c in attribute_filters(filters, params, FILE_COLUMNS))
            if filters is not None
            else ""
        )
        if where is not None:
            conditions += " AND " + filter_condition(where.tree, FILE_COLUMNS, params)
        with self._database.tenant_transaction(tenant_id) as conn:
            rows = conn.execute(_FACETS.format(current=_CURRENT_VERSION, conditions=conditions), params).fetchall()
        for key, value, files in rows:
            counted[key].append((value, int(files)))
        return counted

    def _records(
        self, conn: psycopg.Connection[Any], tenant_id: str, file_ids: Sequence[UUID], *, same_bytes: bool = False
    ) -> list[FileRecord]:
        """The files with their versions, newest first; with `same_bytes`, each version's `duplicate_of` too (what a
        caller is shown; the pipeline's lookups go without)."""
        if not file_ids:
            return []
        with conn.cursor(row_factory=dict_row) as cursor:
            files = cursor.execute(
                "SELECT file_id, collection_id, filename, created_at, metadata, metadata_revision FROM files"
                " WHERE tenant_id = %s AND file_id = ANY(%s)",
                (tenant_id, list(file_ids)),
            ).fetchall()
            versions = cursor.execute(
                f"SELECT {VERSION_COLUMNS} FROM file_versions"  # noqa: S608 - a constant column list
                " WHERE tenant_id = %s AND file_id = ANY(%s) ORDER BY created_at DESC, version_id DESC",
                (tenant_id, list(file_ids)),
            ).fetchall()
            earlier = {
                row["version_id"]: SameBytes(
                    file_id=row["file_id"], version_id=row["same_version_id"], filename=row["filename"]
                )
                for row in (cursor.execute(_SAME_BYTES, (tenant_id, list(file_ids))) if same_bytes else [])
            }
        by_file: dict[UUID, list[FileVersionRecord]] = {}
        for row in versions:
            version = version_of(row)
            if version.version_id in earlier:
                version = version.model_copy(update={"duplicate_of": earlier[version.version_id]})
            by_file.setdefault(row["file_id"], []).append(version)
        order = {file_id: position for position, file_id in enumerate(file_ids)}
        return sorted(
            (FileRecord(tenant_id=tenant_id, versions=tuple(by_file.get(row["file_id"], ())), **row) for row in files),
            key=lambda record: order[record.file_id],
        )

    def find_version(self, tenant_id: str, version_id: UUID) -> tuple[FileRecord, FileVersionRecord] | None:
        with self._database.tenant_transaction(tenant_id) as conn:
            row = conn.execute(
                "SELECT file_id FROM file_versions WHERE tenant_id = %s AND version_id = %s", (tenant_id, version_id)
            ).fetchone()
            records = self._records(conn, tenant_id, [row[0]]) if row else []
        if not records:
            return None
        version = next(v for v in records[0].versions if v.version_id == version_id)
        return records[0], version

    def mark_stored(self, tenant_id: str, version_id: UUID, *, byte_size: int, storage_version_id: str | None) -> bool:
        with self._database.tenant_transaction(tenant_id) as conn:
            # The file row first, as every statement that touches a file and its versions does: one lock
            # order, so completing an upload and deleting its file can wait for each other, never deadlock.
            locked = conn.execute(
                "SELECT f.file_id FROM files f JOIN file_versions v ON v.tenant_id = f.tenant_id"
                " AND v.file_id = f.file_id WHERE v.tenant_id = %s AND v.version_id = %s FOR UPDATE OF f",
                (tenant_id, version_id),
            ).fetchone()
            if locked is None:
                return False
            changed = conn.execute(
                "UPDATE file_versions SET state = 'stored', byte_size = %s, storage_version_id = %s,"
                " stored_at = now(), updated_at = now()"
                " WHERE tenant_id = %s AND version_id = %s AND state = 'pending'",
                (byte_size, storage_version_id, tenant_id, version_id),
            ).rowcount
            if changed != 1:
                return False
            # The file is known by the name of its newest stored version, whatever order events came in.
            conn.execute(
                "UPDATE files f SET filename = (SELECT v.filename FROM file_versions v WHERE v.tenant_id = f.tenant_id"
                " AND v.file_id = f.file_id AND v.state = 'stored' ORDER BY v.created_at DESC LIMIT 1)"
                " WHERE f.tenant_id = %s AND f.file_id = %s",
                (tenant_id, locked[0]),
            )
        return True

    def mark_rejected(
        self, tenant_id: str, version_id: UUID, *, reason: str, byte_size: int, storage_version_id: str | None
    ) -> bool:
        return self._transition(
            tenant_id,
            version_id,
            VersionState.PENDING,
            "state = 'rejected', rejection_reason = %(reason)s, byte_size = %(size)s,"
            " storage_version_id = %(object_version)s",
            {"reason": reason, "size": byte_size, "object_version": storage_version_id},
        )

    def record_malware_scan(
        self, tenant_id: str, version_id: UUID, verdict: MalwareScan, *, storage_version_id: str | None
    ) -> FileVersionRecord | None:
        rejection = verdict.rejection()
        with self._database.tenant_transaction(tenant_id) as conn:
            changed = conn.execute(
                "UPDATE file_versions SET malware_scan = %(verdict)s, malware_scan_object = %(object)s,"
                " updated_at = now(),"
                # A verdict that rejects ends a version no attempt has taken up; one under way finishes (its
                # bytes were checked before it was queued, so it can only be a verdict repeated for them).
                " state = CASE WHEN %(rejects)s AND processing_state = 'not_started' THEN 'rejected' ELSE state END,"
                " rejection_reason = CASE WHEN %(rejects)s AND processing_state = 'not_started'"
                " THEN %(reason)s ELSE rejection_reason END"
                " WHERE tenant_id = %(tenant)s AND version_id = %(version)s AND state IN ('pending', 'stored')"
                " AND (%(object)s::text IS NULL OR storage_version_id IS NULL OR storage_version_id = %(object)s)",
                {
                    "verdict": verdict.value,
                    "rejects": rejection is not None,
                    "reason": rejection,
                    "tenant": tenant_id,
                    "version": version_id,
                    "object": storage_version_id,
                },
            ).rowcount
        found = self.find_version(tenant_id, version_id) if changed else None
        return found[1] if found else None

    def mark_deleted(self, tenant_id: str, version_id: UUID) -> bool:
        return self._transition(tenant_id, version_id, VersionState.DELETING, "state = 'deleted'", {})

    def _transition(
        self, tenant_id: str, version_id: UUID, expected: VersionState, assignments: str, params: dict[str, Any]
    ) -> bool:
        """Compare-and-set: change the row only if it is still in `expected`; True when this call did it."""
        with self._database.tenant_transaction(tenant_id) as conn:
            changed = conn.execute(
                f"UPDATE file_versions SET {assignments}, updated_at = now()"  # noqa: S608 - assignments are constants
                " WHERE tenant_id = %(tenant)s AND version_id = %(version)s AND state = %(expected)s",
                {**params, "tenant": tenant_id, "version": version_id, "expected": expected.value},
            ).rowcount
        return changed == 1

    def begin_delete_file(self, tenant_id: str, file_id: UUID) -> int:
        """One statement moves every live version to `deleting`; its chunks go in the same transaction."""
        with self._database.tenant_transaction(tenant_id) as conn:
            # The file row's lock orders this against a new version being added (see create_version).
            conn.execute("SELECT 1 FROM files WHERE tenant_id = %s AND file_id = %s FOR UPDATE", (tenant_id, file_id))
            moved = conn.execute(
                "UPDATE file_versions SET state = 'deleting', updated_at = now()"
                " WHERE tenant_id = %s AND file_id = %s AND state IN ('pending', 'stored', 'rejected')",
                (tenant_id, file_id),
            ).rowcount
            conn.execute("DELETE FROM knowledge_chunks WHERE tenant_id = %s AND file_id = %s", (tenant_id, file_id))
            conn.execute("DELETE FROM chunk_situations WHERE tenant_id = %s AND file_id = %s", (tenant_id, file_id))
        return moved

    def begin_delete_collection(self, tenant_id: str, collection_id: str) -> int:
        """Every live version of every file in the collection, a pending upload included, in one statement."""
        with self._database.tenant_transaction(tenant_id) as conn:
            _lock_collection(conn, tenant_id, collection_id)
            moved = conn.execute(
                "UPDATE file_versions v SET state = 'deleting', updated_at = now() FROM files f"
                " WHERE v.tenant_id = %s AND f.tenant_id = v.tenant_id AND f.file_id = v.file_id"
                " AND f.collection_id = %s AND v.state IN ('pending', 'stored', 'rejected')",
                (tenant_id, collection_id),
            ).rowcount
            conn.execute(
                "DELETE FROM knowledge_chunks c USING files f WHERE c.tenant_id = %s AND f.tenant_id = c.tenant_id"
                " AND f.file_id = c.file_id AND f.collection_id = %s",
                (tenant_id, collection_id),
            )
            conn.execute(
                "DELETE FROM chunk_situations c USING files f WHERE c.tenant_id = %s AND f.tenant_id = c.tenant_id"
                " AND f.file_id = c.file_id AND f.collection_id = %s",
                (tenant_id, collection_id),
            )
        return moved

    def move_file(self, tenant_id: str, file_id: UUID, *, from_collection: str, to_collection: str) -> bool:
        """The file row, its chunks (so their subjects, postings and both collections' BM25 statistics) and its
        replacements change in this one transaction: a search sees the file in one collection, never two."""
        with self._database.tenant_transaction(tenant_id) as conn:
            # Both collections, in one order: serialised with uploads into and deletion of either (a deletion
            # of the old collection must not mark the file deleting after it left, nor miss it as it arrives).
            for collection in sorted({from_collection, to_collection}):
                _lock_collection(conn, tenant_id, collection)
            # The file row's lock orders this against indexing (replace_chunks) and deleting the file.
            row = conn.execute(
                "SELECT f.collection_id, EXISTS (SELECT 1 FROM file_versions v WHERE v.tenant_id = f.tenant_id"
                " AND v.file_id = f.file_id AND v.state IN ('pending', 'stored', 'rejected')) FROM files f"
                " WHERE f.tenant_id = %s AND f.file_id = %s FOR UPDATE OF f",
                (tenant_id, file_id),
            ).fetchone()
            if row is None or not row[1] or row[0] != from_collection:
                return False
            if from_collection == to_collection:
                return True
            # The metadata's keys take (or must already have) their types in the collection it moves to.
            metadata = conn.execute(
                "SELECT metadata FROM files WHERE tenant_id = %s AND file_id = %s", (tenant_id, file_id)
            ).fetchone()
            values = metadata[0] if metadata else {}
            # Typed as the collection it joins types them (a key's type there, or its schema's), filtered so too.
            _, typed = metadata_columns(values, record_key_types(conn, tenant_id, to_collection, values))
            conn.execute(
                "UPDATE files SET collection_id = %s, metadata_typed = %s::jsonb WHERE tenant_id = %s AND file_id = %s",
                (to_collection, typed, tenant_id, file_id),
            )
            _move_chunks(conn, tenant_id, file_id, to_collection)
            # Who may read or decide a replacement follows the file it would replace.
            conn.execute(
                "UPDATE file_replacements SET collection_id = %s WHERE tenant_id = %s AND file_id = %s",
                (to_collection, tenant_id, file_id),
            )
        return True

    def deleting_versions_with_bytes(
        self, tenant_id: str, *, file_id: UUID | None = None, collection_id: str | None = None, limit: int
    ) -> tuple[list[FileVersionRecord], int]:
        if (file_id is None) == (collection_id is None):
            raise ValueError("name the file or the collection, not both")
        with (
            self._database.tenant_transaction(tenant_id) as conn,
            conn.cursor(row_factory=dict_row) as cursor,
        ):
            rows = cursor.execute(
                f"SELECT {', '.join(f'v.{c.strip()}' for c in VERSION_COLUMNS.split(','))},"  # noqa: S608 - constant columns
                " count(*) OVER () AS total FROM file_versions v JOIN files f"
                " ON f.tenant_id = v.tenant_id AND f.file_id = v.file_id"
                " WHERE v.tenant_id = %(tenant)s AND v.state = 'deleting' AND v.stored_at IS NOT NULL"
                " AND (%(file)s::uuid IS NULL OR v.file_id = %(file)s)"
                " AND (%(collection)s::text IS NULL OR f.collection_id = %(collection)s)"
                " ORDER BY v.updated_at DESC, v.version_id LIMIT %(limit)s",
                {"tenant": tenant_id, "file": file_id, "collection": collection_id, "limit": limit},
            ).fetchall()
        total = int(rows[0]["total"]) if rows else 0
        return [version_of({k: v for k, v in row.items() if k != "total"}) for row in rows], total
