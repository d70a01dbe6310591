"""The clients' uploads by parts against the local stack (API, PostgreSQL, the local S3's multipart upload), the Python
client's and the TypeScript client's (compiled by tsc, run by node: tests/ts_client/parts_flow.mjs): a document sent
by parts (three PUTs at a time, with checksums) and indexed; an upload interrupted after its first part, then resumed
from what the session lists, sending only the parts storage did not hold; the stored bytes read back identical."""

import hashlib
import json
import os
import subprocess
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx2
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


def text_of(size: int, word: str) -> bytes:
    """A text file of `size` bytes: the runbook, then a numbered line each MiB between blank lines (cheap to index,
    heavy to upload, and each part's bytes its own). Plain text: the Markdown parser takes some 20 s over 11 MiB of
    blank lines, the text parser about one."""
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
    path = tmp_path / "big.txt"
    path.write_bytes(text_of(11 * MIB + 99, "heron"))
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


class RefusingAfterPartOne(httpx2.BaseTransport):
    """The network, but for the PUTs of parts 2 and up, which storage refuses (400) once part 1 is stored."""

    def __init__(self) -> None:
        self._network = httpx2.HTTPTransport()
        self._part_one = threading.Event()
        self.puts: list[int] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        part = parse_qs(request.url.query.decode()).get("partNumber")
        if request.method != "PUT" or not part:
            return self._network.handle_request(request)
        self.puts.append(int(part[0]))
        if part == ["1"]:
            try:
                return self._network.handle_request(request)
            finally:
                self._part_one.set()
        request.read()
        self._part_one.wait(30)
        return httpx2.Response(400, text="<Error><Code>InvalidRequest</Code></Error>")


def test_an_interrupted_upload_is_resumed_sending_only_the_parts_storage_lacks(
    parts_stack: Stack, tmp_path: Path
) -> None:
    stack = parts_stack
    token = stack.token(tenant=f"p{uuid.uuid4().hex[:10]}")
    path = tmp_path / "resumed.txt"
    path.write_bytes(text_of(11 * MIB + 5, "plover"))
    tickets: list[dict[str, object]] = []
    refusing = RefusingAfterPartOne()
    with Quire(stack.api, token, transport=refusing) as client, pytest.raises(UploadInterrupted) as stopped:
        client.upload(
            path,
            "docs",
            wait=False,
            multipart=True,
            part_size=5 * MIB,
            on_session=lambda ticket: tickets.append(dict(ticket)),
        )
    upload_id = stopped.value.upload_id
    assert [ticket["uploadId"] for ticket in tickets] == [upload_id]
    assert (stopped.value.held, stopped.value.part_count) == (1, 3), str(stopped.value)
    assert "InvalidRequest" in str(stopped.value.cause) and sorted(refusing.puts) == [1, 2, 3]

    with Quire(stack.api, token) as client:
        assert [part["partNumber"] for part in client.get_upload(upload_id)["parts"]] == [1]
        resumed = client.resume(upload_id, path, wait=False)
    assert resumed.parts is not None
    assert (resumed.parts.kept, resumed.parts.sent, resumed.parts.replaced) == ((1,), (2, 3), ())
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


REPO = Path(__file__).resolve().parents[2]
TSC = REPO / "node_modules" / ".bin" / "tsc"
FLOW = REPO / "tests" / "ts_client" / "parts_flow.mjs"


@pytest.fixture(scope="module")
def typescript_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """clients/typescript compiled by tsc (pinned in package.json) into an ES module folder that finds the repository's
    node_modules (openapi-fetch); its index.js."""
    if not TSC.exists():
        pytest.skip("node_modules has no tsc (npm ci installs it from package-lock.json)")
    out = tmp_path_factory.mktemp("ts-client")
    compiled = subprocess.run(
        [str(TSC), "-p", str(REPO / "clients" / "typescript"), "--noEmit", "false", "--outDir", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    (out / "package.json").write_text('{"type": "module"}')
    (out / "node_modules").symlink_to(REPO / "node_modules")
    return out / "src" / "index.js"


def node_flow(client: Path, mode: str, **env: str) -> Any:
    ran = subprocess.run(
        ["node", str(FLOW), mode],
        env={**os.environ, "QUIRE_TS_CLIENT": str(client), **env},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return json.loads(ran.stdout.strip().splitlines()[-1])


def test_the_typescript_clients_md5_is_md5(typescript_client: Path) -> None:
    assert node_flow(typescript_client, "md5") == {"checked": 12}


def test_the_typescript_client_sends_parts_three_at_a_time_with_checksums(
    parts_stack: Stack, tmp_path: Path, typescript_client: Path
) -> None:
    stack = parts_stack
    token = stack.token(tenant=f"t{uuid.uuid4().hex[:10]}")
    path = tmp_path / "ts-parts.txt"
    path.write_bytes(text_of(11 * MIB + 7, "avocet"))
    done = node_flow(typescript_client, "full", QUIRE_API=stack.api, QUIRE_TOKEN=token, QUIRE_FILE=str(path))
    assert done["parts"] == {
        "uploadId": done["parts"]["uploadId"],
        "partCount": 3,
        "sent": [1, 2, 3],
        "kept": [],
        "replaced": [],
    }
    assert sorted(done["puts"]) == [1, 2, 3] and done["mostInFlight"] == 3
    assert done["progress"][-1] == [path.stat().st_size, path.stat().st_size]
    settle(stack)
    file_id = str(done["fileId"])
    record = stack.json("GET", f"/v1/files/{file_id}", token)[1]
    assert record["current"]["processingState"] == "indexed", record
    assert stored_sha256(stack, token, file_id) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_typescript_client_resumes_sending_only_the_parts_storage_lacks(
    parts_stack: Stack, tmp_path: Path, typescript_client: Path
) -> None:
    stack = parts_stack
    token = stack.token(tenant=f"t{uuid.uuid4().hex[:10]}")
    path = tmp_path / "ts-resumed.txt"
    path.write_bytes(text_of(11 * MIB + 11, "curlew"))
    done = node_flow(typescript_client, "interrupt", QUIRE_API=stack.api, QUIRE_TOKEN=token, QUIRE_FILE=str(path))
    # Part 1 stored, parts 2 and 3 refused: the upload stopped naming its session, which then sent only 2 and 3.
    assert done["sessions"] == 1 and done["held"] == 1, done
    assert "1 of 3 parts confirmed stored" in str(done["message"]) and "InvalidRequest" in str(done["message"])
    assert sorted(done["firstPuts"]) == [1, 2, 3]
    parts = done["parts"]
    assert parts["kept"] == [1] and parts["sent"] == [2, 3] and parts["replaced"] == []
    assert sorted(done["resumedPuts"]) == [2, 3]
    settle(stack)
    file_id = str(done["fileId"])
    assert stored_sha256(stack, token, file_id) == hashlib.sha256(path.read_bytes()).hexdigest()
