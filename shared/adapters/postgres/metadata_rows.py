"""Writing a file's metadata (issue 33): the object as written, its typed copy that filters read, the revision that
orders changes, and each key's type in the collection (migrations/0025). A change of many files is one transaction:
all of it or none."""

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from uuid import UUID

import psycopg

from shared.adapters.postgres.file_rows import FileRows
from shared.domain.errors import Conflict, InvalidRequest, MetadataRevisionConflict, NotFound
from shared.domain.metadata import (
    MAX_KEYS_PER_COLLECTION,
    MetadataChange,
    MetadataError,
    MetadataType,
    MetadataValue,
    changed_metadata,
    conflicting_types,
    indexed_metadata,
    types_of,
)
from shared.domain.metadata_schema import MetadataSchema, schema_from_json, schema_problem
from shared.ports import MetadataWriter


def record_key_types(
    conn: psycopg.Connection[Any],
    tenant_id: str,
    collection_id: str,
    metadata: Mapping[str, MetadataValue],
    *,
    path: str = "metadata",
) -> dict[str, MetadataType]:
    """Each key's type in the collection, recording the types of keys it has not had yet. With a schema, the
    metadata must keep its rules and a key's type is the one it declares; without one, a key keeps the type it
    first had. Either refusal is InvalidRequest naming the key and the rule. Keys are written in sorted order, so
    two writers never wait on each other's keys in opposite orders."""
    schema = collection_schema(conn, tenant_id, collection_id)
    if schema is not None:
        problem = schema_problem(metadata, schema, path=path)
        if problem is not None:
            raise InvalidRequest(str(problem))
    if not metadata:
        return {}
    keys = sorted(metadata)
    known = _known_types(conn, tenant_id, collection_id, keys)
    declared = schema.declared_types() if schema is not None else {}
    # A schema's type for the keys it declares (PUT made the registry agree); else the type the key has, which a
    # value must be one of; a new key takes its value's type.
    conflict = conflicting_types({k: v for k, v in metadata.items() if k not in declared}, known, path=path)
    if conflict is not None:
        raise InvalidRequest(str(conflict))
    new = [key for key in keys if key not in known]
    if new:
        row = conn.execute(
            "SELECT count(*) FROM metadata_key_types WHERE tenant_id = %s AND collection_id = %s",
            (tenant_id, collection_id),
        ).fetchone()
        if row and row[0] + len(new) > MAX_KEYS_PER_COLLECTION:
            raise InvalidRequest(
                f"{path}: the collection already has {row[0]} metadata keys and this adds {len(new)}; at most"
                f" {MAX_KEYS_PER_COLLECTION} distinct keys are allowed in a collection"
            )
        first = types_of({key: metadata[key] for key in new}, declared)
        conn.execute(
            "INSERT INTO metadata_key_types (tenant_id, collection_id, key, type)"
            " SELECT %s, %s, key, type FROM unnest(%s::text[], %s::text[]) AS new (key, type) ON CONFLICT DO NOTHING",
            (tenant_id, collection_id, new, [first[key].value for key in new]),
        )
        # A writer racing on the same new key inserted first: its type is the collection's now.
        raced = _known_types(conn, tenant_id, collection_id, new)
        conflict = conflicting_types({key: metadata[key] for key in new}, raced, path=path)
        if conflict is not None:
            raise InvalidRequest(str(conflict))
        known.update(raced)
    return {key: declared.get(key) or known[key] for key in keys}


def _known_types(
    conn: psycopg.Connection[Any], tenant_id: str, collection_id: str, keys: Sequence[str]
) -> dict[str, MetadataType]:
    return {
        key: MetadataType(kind)
        for key, kind in conn.execute(
            "SELECT key, type FROM metadata_key_types WHERE tenant_id = %s AND collection_id = %s AND key = ANY(%s)",
            (tenant_id, collection_id, list(keys)),
        ).fetchall()
    }


def collection_schema(conn: psycopg.Connection[Any], tenant_id: str, collection_id: str) -> MetadataSchema | None:
    row = conn.execute(
        "SELECT schema FROM collection_metadata_schemas WHERE tenant_id = %s AND collection_id = %s",
        (tenant_id, collection_id),
    ).fetchone()
    return schema_from_json(row[0]) if row else None


def metadata_columns(metadata: Mapping[str, MetadataValue], types: Mapping[str, MetadataType]) -> tuple[str, str]:
    """The `metadata` and `metadata_typed` values of a row, as JSON text."""
    return json.dumps(metadata, ensure_ascii=False), json.dumps(indexed_metadata(metadata, types), ensure_ascii=False)


class PostgresMetadataWriter(FileRows, MetadataWriter):
    def change_metadata(
        self, tenant_id: str, changes: Sequence[MetadataChange], *, authorize: Callable[[str], None]
    ) -> dict[UUID, int]:
        revisions: dict[UUID, int] = {}
        with self._database.tenant_transaction(tenant_id) as conn:
            # Rows locked in one order (by file id), so two bulk changes never deadlock on each other.
            for change in sorted(changes, key=lambda c: c.file_id):
                revisions[change.file_id] = self._change_one(conn, tenant_id, change, authorize)
        return revisions

    @staticmethod
    def _change_one(
        conn: psycopg.Connection[Any], tenant_id: str, change: MetadataChange, authorize: Callable[[str], None]
    ) -> int:
        row = conn.execute(
            "SELECT f.collection_id, f.metadata, f.metadata_revision FROM files f"
            " WHERE f.tenant_id = %s AND f.file_id = %s AND EXISTS (SELECT 1 FROM file_versions v"
            " WHERE v.tenant_id = f.tenant_id AND v.file_id = f.file_id"
            " AND v.state IN ('pending', 'stored', 'rejected'))"
            " FOR UPDATE OF f",
            (tenant_id, change.file_id),
        ).fetchone()
        field = f"{change.path}.fileId" if change.path != "metadata" else None
        if row is None:
            raise NotFound("not found", field=field)
        collection_id, current, revision = row
        try:
            authorize(collection_id)
        except NotFound as error:
            raise NotFound("not found", field=field) from error
        if change.expected_revision is not None and change.expected_revision != revision:
            raise MetadataRevisionConflict(
                f"{change.path}.expectedRevision: the file's metadata is at revision {revision}, not"
                f" {change.expected_revision}; read it again and retry",
                current_revision=revision,
            )
        try:
            merged = changed_metadata(current, change.set_values, change.remove, path=change.path)
        except MetadataError as error:
            raise InvalidRequest(str(error)) from error
        if merged == current:
            return int(revision)  # nothing changed: no new revision
        types = record_key_types(conn, tenant_id, collection_id, merged, path=change.path)
        written, typed = metadata_columns(merged, types)
        conn.execute(
            "UPDATE files SET metadata = %s::jsonb, metadata_typed = %s::jsonb, metadata_revision = %s"
            " WHERE tenant_id = %s AND file_id = %s",
            (written, typed, revision + 1, tenant_id, change.file_id),
        )
        return int(revision) + 1

    def metadata_schema(self, tenant_id: str, collection_id: str) -> MetadataSchema | None:
        with self._database.tenant_transaction(tenant_id) as conn:
            return collection_schema(conn, tenant_id, collection_id)

    def put_metadata_schema(
        self, tenant_id: str, collection_id: str, schema: MetadataSchema, *, updated_by: str
    ) -> None:
        with self._database.tenant_transaction(tenant_id) as conn:
            # Serialised with uploads into the collection (their metadata is checked against what is stored here).
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"collection:{tenant_id}/{collection_id}",)
            )
            declared = schema.declared_types()
            rows = conn.execute(
                "SELECT file_id, metadata, metadata_typed FROM files WHERE tenant_id = %s AND collection_id = %s"
                " ORDER BY file_id FOR UPDATE",
                (tenant_id, collection_id),
            ).fetchall()
            broken = 0
            first: str | None = None
            for file_id, metadata, _ in rows:
                problem = schema_problem(metadata, schema)
                if problem is not None:
                    broken += 1
                    first = first or f"file {file_id}: {problem}"
            if broken:
                raise Conflict(
                    f"{broken} of the collection's files break this schema (the first, {first}); change their"
                    " metadata first (POST /v1/files/metadata), then put the schema again"
                )
            conn.execute(
                "INSERT INTO collection_metadata_schemas (tenant_id, collection_id, schema, updated_by)"
                " VALUES (%s, %s, %s::jsonb, %s) ON CONFLICT (tenant_id, collection_id) DO UPDATE"
                " SET schema = excluded.schema, updated_by = excluded.updated_by, updated_at = now()",
                (tenant_id, collection_id, json.dumps(schema.as_json()), updated_by),
            )
            # The declared types are the collection's from now on; files whose values now read as another type
            # (a date-like string declared a string, say) are filtered by their new type.
            if declared:
                conn.execute(
                    "INSERT INTO metadata_key_types (tenant_id, collection_id, key, type)"
                    " SELECT %s, %s, key, type FROM unnest(%s::text[], %s::text[]) AS d (key, type)"
                    " ON CONFLICT (tenant_id, collection_id, key) DO UPDATE SET type = excluded.type",
                    (tenant_id, collection_id, sorted(declared), [declared[k].value for k in sorted(declared)]),
                )
            registered = {
                key: MetadataType(kind)
                for key, kind in conn.execute(
                    "SELECT key, type FROM metadata_key_types WHERE tenant_id = %s AND collection_id = %s",
                    (tenant_id, collection_id),
                ).fetchall()
            }
            for file_id, metadata, typed in rows:
                # Declared keys by the schema; the others keep the type the collection gave them.
                retyped = indexed_metadata(metadata, {**types_of(metadata), **registered, **declared})
                if retyped != typed:
                    conn.execute(
                        "UPDATE files SET metadata_typed = %s::jsonb WHERE tenant_id = %s AND file_id = %s",
                        (json.dumps(retyped, ensure_ascii=False), tenant_id, file_id),
                    )
