"""The optional search filters as conditions on a chunk row, shared by both lanes."""

from typing import Any

from shared.domain.search import SearchFilters


def filter_sql(filters: SearchFilters, params: dict[str, Any], chunk: str = "") -> str:
    """Conditions on the chunk row (`chunk` is its alias with a dot, if any) for the optional filters;
    collections are always applied, by each lane."""
    conditions = []
    if filters.media_types:
        conditions.append(f"{chunk}media_type = ANY(%(media_types)s)")
        params["media_types"] = sorted(filters.media_types)
    if filters.filename:
        escaped = filters.filename.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        conditions.append(f"{chunk}filename ILIKE %(filename)s")
        params["filename"] = f"%{escaped}%"
    if filters.uploaded_after:
        conditions.append(f"{chunk}uploaded_at >= %(uploaded_after)s")
        params["uploaded_after"] = filters.uploaded_after
    if filters.uploaded_before:
        conditions.append(f"{chunk}uploaded_at < %(uploaded_before)s")
        params["uploaded_before"] = filters.uploaded_before
    return "".join(f" AND {condition}" for condition in conditions)
