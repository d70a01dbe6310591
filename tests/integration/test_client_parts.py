"""The Python client's uploads by parts against the local stack (API, PostgreSQL, the local S3's multipart upload):
a document sent by parts with checksums and indexed; an upload interrupted after its first part, then resumed from
what the session lists, sending only the parts storage did not hold; the stored bytes read back identical."""

import hashlib
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from quire_client import Quire, UploadInterrupted, UploadSessionEnded

from shared.bootstrap import Container, overridden
from shared.bootstrap.adapters import adapters_for
from tests.integration.api_steps import RUNBOOK
from tests.integration.conftest import stop_webhook_deliveries
from tests.integration.files_stack import Stack

MIB = 1024 * 1024


@pytest.fixture
def parts_stack(stack: Stack) -> Iterator[Stack]:
    """The session's stack with documents up to 12 MiB, so that a document takes several 5 MiB parts."""
    settings = stack.container.settings.model_copy(update={"max_upload_bytes": 12 * MIB})
    container = Container(settings, adapters_for(settings, webhook_sender=stack.container.webhook_sender))
    with overridden(container):
        try:
            yield replace(stack, container=container)
        finally:
            container.workflow.drain()  # type: ignore[attr-defined]
            stop_webhook_deliveries(container)
            container.database.close()


def markdown_of(size: int, word: str) -> bytes:
    """A Markdown document of `size` bytes: the runbook, then a numbered line each MiB between blank lines (cheap
    to index, heavy to upload, and each part's bytes its own)."""
    lines = bytearray(RUNBOOK + f"\nThe {word} marker.\n".encode())
    while len(lines) < size:
        lines += b"\n" * (MIB - 40) + f"line {len(lines)} of {word}\n".encode()
    return bytes(lines[:size])


def stored_sha256(stack: Stack, token: str, file_id: str) -> str:
    status, read = stack.json("GET", f"/v1/files/{file_id}/content", token)
    assert status == 200, read
    digest = hashlib.sha256()
    with urllib.request.urlopen(read["url"], timeout=30) as response:
        while chunk := response.read(MIB):
            digest.update(chunk)
    return digest.hexdigest()


def settle(stack: Stack) -> None:
    stack.events.join()
    stack.container.workflow.drain()  # type: ignore[attr-defined]


def test_a_document_sent_by_parts_with_checksums_is_stored_whole_and_indexed(
    parts_stack: Stack, tmp_path: Path
) -> None:
    stack = parts_stack
    token = stack.token(tenant=f"p{uuid.uuid4().hex[:10]}")
    path = tmp_path / "big.md"
    path.write_bytes(markdown_of(11 * MIB + 99, "heron"))
    seen: list[int] = []
    with Quire(stack.api, token) as client:
        uploaded = client.upload(
            path,
            "docs",
            wait=False,
            part_size=5 * MIB,
            checksums=True,
            progress=lambda sent, _: seen.append(sent),
        )
    assert uploaded.parts is not None and uploaded.parts.sent == (1, 2, 3)
    assert uploaded.ticket.get("checksums") is True and uploaded.ticket.get("upload") is None
    assert seen[-1] == path.stat().st_size
    settle(stack)
    record = stack.json("GET", f"/v1/files/{uploaded.file_id}", token)[1]
    assert record["current"]["processingState"] == "indexed", record
    assert stored_sha256(stack, token, uploaded.file_id) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_interrupted_upload_is_resumed_sending_only_the_parts_storage_lacks(
    parts_stack: Stack, tmp_path: Path
) -> None:
    stack = parts_stack
    token = stack.token(tenant=f"p{uuid.uuid4().hex[:10]}")
    path = tmp_path / "resumed.md"
    path.write_bytes(markdown_of(11 * MIB + 5, "plover"))
    tickets: list[dict[str, object]] = []

    def cut_off(sent: int, _: int) -> None:
        if sent > 6 * MIB:
            raise ConnectionAbortedError("the network went away")

    with Quire(stack.api, token) as client:
        with pytest.raises(UploadInterrupted) as stopped:
            client.upload(
                path,
                "docs",
                wait=False,
                multipart=True,
                part_size=5 * MIB,
                progress=cut_off,
                on_session=lambda ticket: tickets.append(dict(ticket)),
            )
        upload_id = stopped.value.upload_id
        assert [ticket["uploadId"] for ticket in tickets] == [upload_id]
        held = sorted(part["partNumber"] for part in client.get_upload(upload_id)["parts"])
        assert len(held) == stopped.value.held < 3, (held, str(stopped.value))

        resumed = client.resume(upload_id, path, wait=False)
    assert resumed.parts is not None
    assert list(resumed.parts.kept) == held and resumed.parts.replaced == ()
    assert sorted(resumed.parts.sent) == [n for n in (1, 2, 3) if n not in held]
    settle(stack)
    record = stack.json("GET", f"/v1/files/{resumed.file_id}", token)[1]
    assert record["current"]["processingState"] == "indexed", record
    assert stored_sha256(stack, token, resumed.file_id) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_resuming_an_aborted_session_says_it_ended(stack: Stack, tmp_path: Path) -> None:
    token = stack.token()
    path = tmp_path / "aborted.md"
    path.write_bytes(RUNBOOK)
    with Quire(stack.api, token) as client:
        ticket = client.create_upload(
            {
                "collectionId": "docs",
                "filename": path.name,
                "mediaType": "text/markdown",
                "byteSize": len(RUNBOOK),
                "multipart": True,
            }
        )
        upload_id = str(ticket.get("uploadId"))
        client.abort_upload(upload_id)
        with pytest.raises(UploadSessionEnded, match="is aborted") as ended:
            client.resume(upload_id, path, wait=False)
    assert ended.value.state == "aborted"
