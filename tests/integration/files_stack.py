"""An in-process Quire for the file-lifecycle tests: API handler, moto S3 server, Object Created handler."""

import io
import json
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3

from shared.adapters.local.jwt_tokens import LocalTokenIssuer
from shared.bootstrap import Container
from shared.domain.auth import Role, with_role
from shared.local.events import EventDispatcher

SECRET = b"files-api-secret-0123456789abcdef"
LIMIT = 200_000
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
SVG = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


def docx_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<Types><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
            'officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        archive.writestr("word/document.xml", "<w:document/>")
    return buffer.getvalue()


DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


@dataclass
class Stack:
    api: str
    bucket: str
    events: EventDispatcher
    container: Container
    # The webhook sender's fake resolver, and the receivers' certificate and key (tests/webhook_receiver.py).
    resolver: Any = None
    receiver_certificate: tuple[Path, Path] | None = None
    connector: Any = None  # the sender's loopback-only connector: what it refused

    def token(
        self,
        tenant: str = "acme",
        collections: tuple[str, ...] = ("docs",),
        sub: str = "ann",
        role: Role = Role.ADMIN,
    ) -> str:
        """A token holding `role` in `collections` (by default every role: most tests are about something else)."""
        return LocalTokenIssuer(SECRET).issue(with_role(tenant, sub, collections, role))

    def call(self, method: str, path: str, token: str | None, body: Any = None) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.api}{path}", data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def json(self, method: str, path: str, token: str | None, body: Any = None) -> tuple[int, Any]:
        status, raw = self.call(method, path, token, body)
        return status, json.loads(raw) if raw else None

    def start_upload(self, token: str, filename: str, media_type: str, size: int, collection: str = "docs") -> Any:
        body = {"collectionId": collection, "filename": filename, "mediaType": media_type, "byteSize": size}
        status, ticket = self.json("POST", "/v1/uploads", token, body)
        assert status == 201, ticket
        return ticket

    def post_bytes(self, ticket: Any, content: bytes, content_type: str) -> int:
        fields: dict[str, Any] = dict(ticket["upload"]["fields"])
        fields["file"] = ("upload", content, content_type)
        response = urllib3.request("POST", ticket["upload"]["url"], fields=fields, timeout=20)
        self.events.join()
        return response.status

    def upload(self, token: str, filename: str, media_type: str, content: bytes, collection: str = "docs") -> Any:
        ticket = self.start_upload(token, filename, media_type, len(content), collection)
        assert self.post_bytes(ticket, content, media_type) in (200, 201, 204)
        return ticket

    def processed_markdown(
        self, token: str, filename: str, content: bytes, metadata: dict[str, Any] | None, collection: str = "docs"
    ) -> Any:
        """A Markdown file uploaded with `metadata` (none: the field left out) and run through the pipeline."""
        body: dict[str, Any] = {
            "collectionId": collection,
            "filename": filename,
            "mediaType": "text/markdown",
            "byteSize": len(content),
        }
        if metadata is not None:
            body["metadata"] = metadata
        status, ticket = self.json("POST", "/v1/uploads", token, body)
        assert status == 201, ticket
        assert self.post_bytes(ticket, content, "text/markdown") in (200, 201, 204)
        self.container.workflow.drain()  # type: ignore[attr-defined]
        return ticket
