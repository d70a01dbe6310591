"""The Python client's uploads by parts (clients/python, quire_client/parts.py) against a fake of the API's upload
session routes and of storage's presigned part PUTs (httpx2.MockTransport, the port the client sends through): the
parts PUT three at a time with exactly their bytes, read from the file a chunk at a time, the progress across parts,
checksums, retries and fresh URLs, an interruption that names the session, and resuming from what storage holds
(held parts checked by their size, SHA-256 or MD5 ETag; the rest sent)."""

import base64
import hashlib
import json
import os
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from quire_client import (
    Quire,
    Retries,
    StorageRefused,
    UploadInterrupted,
    UploadSessionEnded,
)
from quire_client.parts import CHUNK_BYTES, LocalFile

API = "http://127.0.0.1:9"
STORAGE = "http://127.0.0.1:9/storage"
MIB = 1024 * 1024
UPLOAD_ID = "5d6e7f80-1a2b-4c3d-8e9f-0a1b2c3d4e5f"
FILE_ID = "0b8e1c52-7d3f-4f5e-9a1b-2c3d4e5f6a7b"
VERSION_ID = "1c9f2d63-8e4a-4a6f-8b2c-3d4e5f6a7b8c"


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def sha256_b64(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


@dataclass
class FakeSessionApi:
    """A fake of the upload session routes and of storage's part PUTs, keeping what S3 would: each part's bytes'
    MD5 (its ETag), size and SHA-256. `refuse` answers chosen PUTs with a status (popped per attempt)."""

    byte_size: int
    part_size: int
    checksums: bool = False
    state: str = "open"
    held: dict[int, dict[str, Any]] = field(default_factory=dict)
    puts: list[int] = field(default_factory=list)
    url_requests: list[Any] = field(default_factory=list)
    completed: list[dict[str, Any]] | None = None
    refuse: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    url_lifetime: timedelta = timedelta(minutes=15)
    in_flight: int = 0
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Slows each PUT a little, so that parts really overlap when the client sends them at once.
    put_pause: float = 0.02
    single_post: bool = False

    @property
    def part_count(self) -> int:
        return max(1, -(-self.byte_size // self.part_size))

    def session(self) -> dict[str, Any]:
        now = datetime.now(UTC)
        return {
            "uploadId": UPLOAD_ID,
            "fileId": FILE_ID,
            "versionId": VERSION_ID,
            "collectionId": "docs",
            "state": self.state,
            "byteSize": self.byte_size,
            "partSize": self.part_size,
            "partCount": self.part_count,
            "checksums": self.checksums,
            "createdAt": now.isoformat(),
            "expiresAt": (now + timedelta(days=1)).isoformat(),
            "endedAt": None,
            "parts": [{"partNumber": n, **part} for n, part in sorted(self.held.items()) if self.state == "open"],
        }

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        routes: dict[tuple[str, str], Callable[[httpx2.Request], httpx2.Response]] = {
            ("POST", "/v1/uploads"): self._ticket,
            ("POST", f"/v1/uploads/{UPLOAD_ID}/parts"): self._urls,
            ("GET", f"/v1/uploads/{UPLOAD_ID}"): lambda _: httpx2.Response(200, json=self.session()),
            ("POST", f"/v1/uploads/{UPLOAD_ID}/complete"): self._complete,
            ("PUT", "/storage/part"): self._put,
            ("POST", "/storage/post"): lambda _: httpx2.Response(204),
        }
        route = routes.get((request.method, request.url.path))
        if route is None:
            return httpx2.Response(404, json={"error": "not_found", "message": "Not found"})
        return route(request)

    def _ticket(self, _: httpx2.Request) -> httpx2.Response:
        if self.single_post:
            body = {"fileId": FILE_ID, "versionId": VERSION_ID, "expiresAt": "2030-01-01T00:00:00Z"}
            return httpx2.Response(201, json={**body, "upload": {"url": f"{STORAGE}/post", "fields": {"k": "v"}}})
        return httpx2.Response(201, json={k: v for k, v in self.session().items() if k not in ("parts", "state")})

    def _complete(self, request: httpx2.Request) -> httpx2.Response:
        claimed = json.loads(request.content)["parts"]
        assert [part["partNumber"] for part in claimed] == list(range(1, self.part_count + 1))
        for part in claimed:
            assert part["etag"].strip('"') == self.held[part["partNumber"]]["etag"].strip('"'), part
        self.completed = claimed
        self.state = "completed"
        return httpx2.Response(200, json=self.session())

    def _urls(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.url_requests.append(body)
        asked = body.get("partNumbers") or [part["partNumber"] for part in body["parts"]]
        checksums = {part["partNumber"]: part["checksumSha256"] for part in body.get("parts") or []}
        assert len(asked) <= 100
        expires = datetime.now(UTC) + self.url_lifetime
        parts = []
        for number in asked:
            headers = {"x-amz-checksum-sha256": checksums[number]} if self.checksums else {}
            url = f"{STORAGE}/part?partNumber={number}&expires={expires.timestamp()}"
            parts.append({"partNumber": number, "url": url, "expiresAt": expires.isoformat(), "headers": headers})
        return httpx2.Response(200, json={"parts": parts})

    def _put(self, request: httpx2.Request) -> httpx2.Response:
        query = parse_qs(urlsplit(str(request.url)).query)
        number = int(query["partNumber"][0])
        with self.lock:
            self.puts.append(number)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.put_pause)
            if self.refuse.get(number):
                status, text = self.refuse[number].pop(0)
                return httpx2.Response(status, text=text)
            if float(query["expires"][0]) < time.time():
                return httpx2.Response(
                    403, text="<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"
                )
            data = request.content
            assert request.headers["content-length"] == str(len(data))
            if self.checksums and request.headers.get("x-amz-checksum-sha256") != sha256_b64(data):
                return httpx2.Response(400, text="<Error><Code>BadDigest</Code></Error>")
            etag = md5_hex(data)
            self.held[number] = {
                "size": len(data),
                "etag": f'"{etag}"',
                "checksumSha256": sha256_b64(data) if self.checksums else None,
            }
            return httpx2.Response(200, headers={"ETag": f'"{etag}"'})
        finally:
            with self.lock:
                self.in_flight -= 1


def client_of(fake: Callable[[httpx2.Request], httpx2.Response]) -> Quire:
    return Quire(
        API, "token-1", transport=httpx2.MockTransport(fake), sleep=lambda _: None, retries=Retries(attempts=2)
    )


def a_file(tmp_path: Path, size: int, name: str = "big.pdf") -> tuple[Path, bytes]:
    content = b"%PDF-1.7\n" + os.urandom(size - 9)
    path = tmp_path / name
    path.write_bytes(content)
    return path, content


def test_a_session_ticket_is_uploaded_by_parts_three_at_a_time_with_exactly_each_parts_bytes(tmp_path: Path) -> None:
    path, content = a_file(tmp_path, 23 * MIB + 17)
    fake = FakeSessionApi(byte_size=len(content), part_size=5 * MIB)
    seen: list[tuple[int, int]] = []
    uploaded = client_of(fake).upload(path, "docs", wait=False, progress=lambda sent, total: seen.append((sent, total)))

    assert uploaded.parts is not None and uploaded.parts.sent == (1, 2, 3, 4, 5)
    assert sorted(fake.puts) == [1, 2, 3, 4, 5]
    assert fake.most_in_flight == 3
    # Each part holds its slice of the file: the completion names every part by the ETag its PUT returned.
    for number in range(1, 6):
        assert fake.held[number]["etag"] == f'"{md5_hex(content[(number - 1) * 5 * MIB : number * 5 * MIB])}"'
    assert fake.completed is not None and len(fake.completed) == 5
    # Progress across the parts, never backwards on a clean run, ending at the file's size.
    sents = [sent for sent, _ in seen]
    assert sents == sorted(sents) and seen[-1] == (len(content), len(content))
    assert {total for _, total in seen} == {len(content)}
    # URLs were asked for in batches, not one call per part.
    assert len(fake.url_requests) == 1 and fake.url_requests[0] == {"partNumbers": [1, 2, 3, 4, 5]}


def test_multipart_part_size_and_checksums_are_asked_for_and_each_part_is_signed_with_its_sha256(
    tmp_path: Path,
) -> None:
    path, content = a_file(tmp_path, 11 * MIB)
    fake = FakeSessionApi(byte_size=len(content), part_size=5 * MIB, checksums=True)
    asked: list[dict[str, Any]] = []

    def recording(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/uploads":
            asked.append(json.loads(request.content))
        return fake(request)

    client_of(recording).upload(path, "docs", wait=False, multipart=True, part_size=5 * MIB, checksums=True)
    assert asked[0]["multipart"] is True and asked[0]["partSize"] == 5 * MIB and asked[0]["checksums"] is True
    # One URL request per part, each naming the part's SHA-256; storage checked each PUT's header against its bytes.
    checksums = {part["partNumber"]: part["checksumSha256"] for body in fake.url_requests for part in body["parts"]}
    assert checksums == {n: sha256_b64(content[(n - 1) * 5 * MIB : n * 5 * MIB]) for n in (1, 2, 3)}
    assert fake.state == "completed"


def test_a_small_file_without_asking_for_parts_is_still_one_presigned_post(tmp_path: Path) -> None:
    path, _ = a_file(tmp_path, 2048, "small.pdf")
    fake = FakeSessionApi(byte_size=2048, part_size=5 * MIB, single_post=True)
    uploaded = client_of(fake).upload(path, "docs", wait=False)
    assert uploaded.parts is None and fake.puts == []


def test_the_file_is_read_a_chunk_at_a_time_never_whole(tmp_path: Path) -> None:
    path, content = a_file(tmp_path, 64 * MIB)
    assert [len(chunk) for chunk in LocalFile(path).chunks(0, 3 * CHUNK_BYTES + 5)] == [CHUNK_BYTES] * 3 + [5]
    fake = FakeSessionApi(byte_size=len(content), part_size=5 * MIB, put_pause=0)
    del content
    tracemalloc.start()
    try:
        client_of(fake).upload(path, "docs", wait=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The fake transport holds each PUT's body (5 MiB, three at once) while it answers; the file is 64 MiB.
    assert peak < 32 * MIB, peak
    assert fake.state == "completed"


def test_a_part_storage_answers_500_is_sent_again_and_an_expired_url_is_asked_for_anew(tmp_path: Path) -> None:
    path, content = a_file(tmp_path, 11 * MIB)
    fake = FakeSessionApi(byte_size=len(content), part_size=5 * MIB)
    fake.refuse[2] = [(500, "<Error><Code>InternalError</Code></Error>")]
    fake.refuse[3] = [(403, "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>")]
    seen: list[int] = []
    client_of(fake).upload(path, "docs", wait=False, progress=lambda sent, _: seen.append(sent))
    assert sorted(fake.puts) == [1, 2, 2, 3, 3]
    assert fake.state == "completed"
    assert seen[-1] == len(content)
    # Part 3's URL was asked for a second time, alone.
    assert fake.url_requests[-1] == {"partNumbers": [3]}


def test_a_part_storage_refuses_stops_the_upload_naming_its_session(tmp_path: Path) -> None:
    path, content = a_file(tmp_path, 26 * MIB)
    fake = FakeSessionApi(byte_size=len(content), part_size=5 * MIB)
    fake.refuse[1] = [(400, "<Error><Code>InvalidArgument</Code></Error>")]
    sessions: list[str | None] = []
    with pytest.raises(UploadInterrupted) as stopped:
        client_of(fake).upload(path, "docs", wait=False, on_session=lambda ticket: sessions.append(ticket["uploadId"]))
    assert sessions == [UPLOAD_ID]
    assert stopped.value.upload_id == UPLOAD_ID and stopped.value.part_count == 6
    assert isinstance(stopped.value.cause, StorageRefused) and "InvalidArgument" in str(stopped.value.cause)
    assert stopped.value.held == len(fake.held) < 6
    assert fake.state == "open" and fake.completed is None


def test_resume_checks_the_held_parts_and_sends_only_the_rest(tmp_path: Path) -> None:
    path, content = a_file(tmp_path, 26 * MIB + 3)
    fake = FakeSessionApi(byte_size=len(content), part_size=5 * MIB)

    def piece(number: int) -> bytes:
        return content[(number - 1) * 5 * MIB : number * 5 * MIB]

    # Storage holds parts 1, 2 and 4 of this file; part 5 holds other bytes of the same size.
    for number in (1, 2, 4):
        fake.held[number] = {"size": 5 * MIB, "etag": f'"{md5_hex(piece(number))}"', "checksumSha256": None}
    fake.held[5] = {"size": 5 * MIB, "etag": f'"{md5_hex(b"x" * 5 * MIB)}"', "checksumSha256": None}
    seen: list[int] = []
    resumed = client_of(fake).resume(UPLOAD_ID, path, wait=False, progress=lambda sent, _: seen.append(sent))

    assert resumed.parts is not None
    assert (resumed.parts.kept, resumed.parts.replaced, resumed.parts.sent) == ((1, 2, 4), (5,), (3, 5, 6))
    assert sorted(fake.puts) == [3, 5, 6]
    assert fake.held[5]["etag"] == f'"{md5_hex(piece(5))}"'
    assert fake.state == "completed"
    # The bar starts where the held parts leave it.
    assert seen[0] == 15 * MIB and seen[-1] == len(content)
    assert resumed.ticket["uploadId"] == UPLOAD_ID and resumed.file_id == FILE_ID


def test_resume_with_checksums_compares_each_held_parts_sha256(tmp_path: Path) -> None:
    path, content = a_file(tmp_path, 11 * MIB)
    fake = FakeSessionApi(byte_size=len(content), part_size=5 * MIB, checksums=True)
    first, second = content[: 5 * MIB], content[5 * MIB : 10 * MIB]
    # An ETag is no proof here (it could be anything under SSE-KMS): the SHA-256 storage recorded is.
    fake.held[1] = {"size": 5 * MIB, "etag": '"opaque-1"', "checksumSha256": sha256_b64(first)}
    fake.held[2] = {"size": 5 * MIB, "etag": f'"{md5_hex(second)}"', "checksumSha256": sha256_b64(b"y" * 5 * MIB)}
    resumed = client_of(fake).resume(UPLOAD_ID, path, wait=False)
    assert resumed.parts is not None
    assert (resumed.parts.kept, resumed.parts.replaced, resumed.parts.sent) == ((1,), (2,), (2, 3))


def test_a_held_part_whose_etag_is_no_md5_and_no_checksum_is_sent_again(tmp_path: Path) -> None:
    path, content = a_file(tmp_path, 6 * MIB)
    fake = FakeSessionApi(byte_size=len(content), part_size=5 * MIB)
    fake.held[1] = {"size": 5 * MIB, "etag": '"a1b2-kms"', "checksumSha256": None}
    resumed = client_of(fake).resume(UPLOAD_ID, path, wait=False)
    assert resumed.parts is not None and resumed.parts.sent == (1, 2) and resumed.parts.replaced == (1,)


def test_resume_refuses_an_ended_session_and_a_file_of_another_size(tmp_path: Path) -> None:
    path, content = a_file(tmp_path, 6 * MIB)
    fake = FakeSessionApi(byte_size=len(content) + 1, part_size=5 * MIB)
    with pytest.raises(ValueError, match="not the file it was opened for"):
        client_of(fake).resume(UPLOAD_ID, path, wait=False)
    fake = FakeSessionApi(byte_size=len(content), part_size=5 * MIB, state="expired")
    with pytest.raises(UploadSessionEnded, match="is expired") as ended:
        client_of(fake).resume(UPLOAD_ID, path, wait=False)
    assert ended.value.state == "expired" and fake.puts == []


def test_resume_of_a_completed_session_sends_nothing(tmp_path: Path) -> None:
    path, content = a_file(tmp_path, 6 * MIB)
    fake = FakeSessionApi(byte_size=len(content), part_size=5 * MIB, state="completed")
    resumed = client_of(fake).resume(UPLOAD_ID, path, wait=False)
    assert resumed.parts is not None and resumed.parts.sent == () and fake.puts == []


def test_the_callers_interruption_stops_the_other_parts_and_is_raised_as_it_was(tmp_path: Path) -> None:
    path, content = a_file(tmp_path, 31 * MIB)
    fake = FakeSessionApi(byte_size=len(content), part_size=5 * MIB)

    def interrupt(sent: int, _: int) -> None:
        if sent > 2 * MIB:
            raise KeyboardInterrupt  # a person's Ctrl-C, where the bytes are counted

    with pytest.raises(KeyboardInterrupt):
        client_of(fake).upload(path, "docs", wait=False, progress=interrupt)
    # The parts in flight stopped between chunks; none after them was begun, nothing was completed.
    assert len(fake.held) < 3 and len(fake.puts) <= 3
    assert fake.completed is None and fake.state == "open"
