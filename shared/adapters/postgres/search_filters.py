"""The optional search filters as conditions on a chunk row, shared by every lane."""

from typing import Any

from shared.adapters.postgres.metadata_sql import FileColumns, filter_condition, references_metadata
from shared.domain.metadata import MetadataType
from shared.domain.metadata_filter import MetadataFilter
from shared.domain.search import SearchFilters


def chunk_columns(chunk: str) -> FileColumns:
    """The built-in keys as a chunk row (alias `chunk`, with its dot) has them: its version's, as indexed, and its
    own language; the product's own keys from the file row `f`."""
    return FileColumns(
        built_in={
            "quire.collection": (f"{chunk}collection_id", MetadataType.STRING),
            "quire.filename": (f"{chunk}filename", MetadataType.STRING),
            "quire.mediaType": (f"{chunk}media_type", MetadataType.STRING),
            "quire.uploadedAt": (f"{chunk}uploaded_at", MetadataType.DATE),
            "quire.pages": (
                f"(SELECT v.page_count FROM file_versions AS v WHERE v.tenant_id = {chunk}tenant_id"  # noqa: S608
                f" AND v.version_id = {chunk}version_id)",
                MetadataType.NUMBER,
            ),
            "quire.language": (f"{chunk}language", MetadataType.STRING),
        }
    )


def version_columns() -> FileColumns:
    """The built-in keys as an indexed version `v` of file `f` has them: what its chunks copied when it was indexed
    (their filename, media type and upload time are the version's)."""
    return FileColumns(
        built_in={
            "quire.collection": ("f.collection_id", MetadataType.STRING),
            "quire.filename": ("v.filename", MetadataType.STRING),
            "quire.mediaType": ("v.media_type", MetadataType.STRING),
            "quire.uploadedAt": ("coalesce(v.stored_at, v.created_at)", MetadataType.DATE),
            "quire.pages": ("v.page_count", MetadataType.NUMBER),
            "quire.language": ("coalesce(v.declared_language, v.languages[1])", MetadataType.STRING),
        }
    )


def version_filter_sql(filters: SearchFilters, params: dict[str, Any]) -> str:
    """Every filter on an indexed version `v` of file `f`, as the lanes apply them to the version's chunks."""
    conditions = attribute_filters(filters, params, version_columns())
    if filters.where is not None:
        conditions.append(filter_condition(filters.where.tree, version_columns(), params))
    return "".join(f" AND {condition}" for condition in conditions)


def attribute_filters(filters: SearchFilters, params: dict[str, Any], columns: FileColumns) -> list[str]:
    """The body's `filters` (media types, a filename substring, an upload window) as conditions on the columns
    where `columns` reads quire.mediaType, quire.filename and quire.uploadedAt."""
    media_type, filename, uploaded_at = (
        columns.built_in[key][0] for key in ("quire.mediaType", "quire.filename", "quire.uploadedAt")
    )
    conditions = []
    if filters.media_types:
        conditions.append(f"{media_type} = ANY(%(media_types)s)")
        params["media_types"] = sorted(filters.media_types)
    if filters.filename:
        conditions.append(f"{filename} ILIKE %(filename)s")
        params["filename"] = filename_pattern(filters.filename)
    if filters.uploaded_after:
        conditions.append(f"{uploaded_at} >= %(uploaded_after)s")
        params["uploaded_after"] = filters.uploaded_after
    if filters.uploaded_before:
        conditions.append(f"{uploaded_at} < %(uploaded_before)s")
        params["uploaded_before"] = filters.uploaded_before
    return conditions


def where_sql(where: MetadataFilter, params: dict[str, Any], chunk: str) -> str:
    """The metadata filter on a chunk row: its file's row is joined by key (one index probe) only when the filter
    reads a product's key."""
    condition = filter_condition(where.tree, chunk_columns(chunk), params)
    if not references_metadata(where.tree):
        return condition
    return (
        f"EXISTS (SELECT 1 FROM files AS f WHERE f.tenant_id = {chunk}tenant_id"  # noqa: S608 - aliases and parameters
        f" AND f.file_id = {chunk}file_id AND {condition})"
    )


def filename_pattern(text: str) -> str:
    """The ILIKE pattern for a case-insensitive substring: its own wildcards are escaped."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def filter_sql(filters: SearchFilters, params: dict[str, Any], chunk: str) -> str:
    """Conditions on the chunk row (`chunk` is its alias with a dot, if any) for the optional filters;
    collections are always applied, by each lane."""
    conditions = attribute_filters(filters, params, chunk_columns(chunk))
    if filters.where is not None:
        conditions.append(where_sql(filters.where, params, chunk))
    return "".join(f" AND {condition}" for condition in conditions)
