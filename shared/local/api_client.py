"""The CLI's client of Quire's HTTP API: the typed client (quire_client, clients/python) with the few helpers the
commands share, the JSON call by path, uploads from a path, the file list, and waits."""

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from quire_client import ApiError, Quire

from shared.domain.uploads import ACCEPTED_TYPES

__all__ = ["ApiClient", "ApiError", "media_type_for", "progress_bar"]
Progress = Callable[[int, int], None]


def media_type_for(path: Path) -> str:
    """The accepted media type for a file's extension (the server sniffs the bytes regardless)."""
    suffix = path.suffix.lower()
    for accepted in ACCEPTED_TYPES:
        if suffix in accepted.extensions:
            return accepted.media_type
    known = ", ".join(sorted({e for a in ACCEPTED_TYPES for e in a.extensions}))
    raise ValueError(f"{path.name}: {suffix or 'no extension'} is not accepted (accepted: {known})")


_FINISHED = frozenset({"indexed", "failed"})


class ApiClient:
    """`quire` (the typed client, every route a method) for a base URL and a token, and the calls the commands
    share on top of it."""

    def __init__(self, base_url: str, token: str) -> None:
        self.quire = Quire(base_url, token, timeout=60)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """The API's JSON answer to `method` on `path` (which may hold its query); ApiError when it refuses."""
        return self.quire.request(method, path, body=body)

    def upload(
        self,
        path: Path,
        collection_id: str,
        progress: Progress | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Ask for a presigned POST (with the file's `metadata`, when given), send the file to it as a browser
        would, and return the ticket."""
        uploaded = self.quire.upload(
            path, collection_id, media_type=media_type_for(path), metadata=metadata, wait=False, progress=progress
        )
        return cast("dict[str, Any]", uploaded.ticket)

    def change_metadata(
        self,
        file_id: str,
        set_values: dict[str, Any] | None = None,
        remove: list[str] | None = None,
        expected_revision: int | None = None,
    ) -> dict[str, Any]:
        """`PATCH /v1/files/{id}/metadata`: the file view after the change; a stale `expected_revision` is an
        ApiError 409 whose body holds the current `metadataRevision`."""
        body: dict[str, Any] = {"set": set_values or {}, "remove": remove or []}
        if expected_revision is not None:
            body["expectedRevision"] = expected_revision
        record: dict[str, Any] = self.call("PATCH", f"/v1/files/{file_id}/metadata", body)
        return record

    def list_files(self, where: dict[str, Any] | None = None, collection_id: str | None = None) -> list[dict[str, Any]]:
        """Every file the caller can read (in `collection_id`, and kept by the metadata filter `where`), page by
        page."""
        where_json = json.dumps(where, separators=(",", ":")) if where is not None else None
        files = self.quire.iter_files(limit=100, collection_id=collection_id, filter=where_json)
        return [cast("dict[str, Any]", record) for record in files]

    def wait_until_processed(self, file_id: str, timeout: float = 600) -> dict[str, Any]:
        """Poll until the file's current version is indexed or failed (or was rejected as stored)."""
        return self._poll(file_id, timeout, 0.2, _processed)

    def wait_until_decided(self, file_id: str, timeout: float = 120) -> dict[str, Any]:
        """Poll the file until its newest version leaves `pending` (or the timeout passes)."""
        return self._poll(file_id, timeout, 0.05, lambda current: current["state"] != "pending")

    def _poll(
        self, file_id: str, timeout: float, every: float, done: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any]:
        """The file's view once `done` holds of its current version, or when `timeout` passes, whichever first."""
        deadline = time.monotonic() + timeout
        while True:
            record = cast("dict[str, Any]", self.quire.get_file(file_id))
            if done(record["current"]) or time.monotonic() > deadline:
                return record
            time.sleep(every)


def _processed(current: dict[str, Any]) -> bool:
    return bool(current["state"] == "rejected" or current["processingState"] in _FINISHED)


def progress_bar(label: str) -> Progress:
    def draw(sent: int, total: int) -> None:
        width = 30
        filled = int(width * sent / total) if total else width
        sys.stderr.write(
            f"\r  {label[:40]:<40} [{'#' * filled}{'.' * (width - filled)}] {sent * 100 // max(total, 1):3d}%"
        )
        if sent >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return draw
