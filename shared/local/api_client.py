"""A small client for Quire's HTTP API, used by the CLI: JSON calls and browser-style presigned uploads."""

import http.client
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from urllib3 import encode_multipart_formdata

from shared.domain.uploads import ACCEPTED_TYPES

_CHUNK = 64 * 1024
Progress = Callable[[int, int], None]


class ApiError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        message = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.body = body


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
    def __init__(self, base_url: str, token: str) -> None:
        self._base = base_url.rstrip("/")
        self._token = token

    def call(self, method: str, path: str, body: Any = None) -> Any:
        request = urllib.request.Request(  # noqa: S310 - the configured API
            f"{self._base}{path}",
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self._token}", "Content-Type": "application/json"},
            method=method,
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - the configured API
                raw = response.read()
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                detail: Any = json.loads(raw)
            except ValueError:
                detail = raw.decode(errors="replace")
            raise ApiError(error.code, detail) from None
        return json.loads(raw) if raw else None

    def upload(
        self,
        path: Path,
        collection_id: str,
        progress: Progress | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Ask for a presigned POST (with the file's `metadata`, when given), send the file to it as a browser
        would, and return the ticket."""
        content = path.read_bytes()
        media_type = media_type_for(path)
        request: dict[str, Any] = {
            "collectionId": collection_id,
            "filename": path.name,
            "mediaType": media_type,
            "byteSize": len(content),
        }
        if metadata:
            request["metadata"] = metadata
        ticket: dict[str, Any] = self.call("POST", "/v1/uploads", request)
        fields: dict[str, Any] = dict(ticket["upload"]["fields"])
        fields["file"] = (path.name, content, media_type)
        body, content_type = encode_multipart_formdata(fields)
        _post_with_progress(ticket["upload"]["url"], body, content_type, progress)
        return ticket

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
        records: list[dict[str, Any]] = []
        query: dict[str, str] = {"limit": "100"}
        if collection_id:
            query["collectionId"] = collection_id
        if where is not None:
            query["filter"] = json.dumps(where, separators=(",", ":"))
        while True:
            page = self.call("GET", f"/v1/files?{urlencode(query)}")
            records.extend(page["files"])
            if not page["nextCursor"]:
                return records
            query["cursor"] = page["nextCursor"]

    def wait_until_processed(self, file_id: str, timeout: float = 600) -> dict[str, Any]:
        """Poll until the file's current version is indexed or failed (or was rejected as stored)."""
        deadline = time.monotonic() + timeout
        while True:
            record: dict[str, Any] = self.call("GET", f"/v1/files/{file_id}")
            current = record["current"]
            if current["state"] == "rejected" or current["processingState"] in _FINISHED or time.monotonic() > deadline:
                return record
            time.sleep(0.2)

    def wait_until_decided(self, file_id: str, timeout: float = 120) -> dict[str, Any]:
        """Poll the file until its newest version leaves `pending` (or the timeout passes)."""
        deadline = time.monotonic() + timeout
        while True:
            record: dict[str, Any] = self.call("GET", f"/v1/files/{file_id}")
            if record["current"]["state"] != "pending" or time.monotonic() > deadline:
                return record
            time.sleep(0.05)


def _post_with_progress(url: str, body: bytes, content_type: str, progress: Progress | None) -> None:
    parts = urlsplit(url)
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(parts.netloc, timeout=120)
    try:
        connection.putrequest("POST", parts.path or "/")
        connection.putheader("Content-Type", content_type)
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders()
        for offset in range(0, len(body), _CHUNK):
            connection.send(body[offset : offset + _CHUNK])
            if progress:
                progress(min(offset + _CHUNK, len(body)), len(body))
        response = connection.getresponse()
        answer = response.read()
        if response.status >= 300:
            raise ApiError(response.status, answer.decode(errors="replace")[:500])
    finally:
        connection.close()


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
