"""Uploads by parts (an upload session, docs/files.md "Upload sessions"): the parts read from the local file a chunk at
a time (never the whole file in memory), three PUT at once to the URLs the API presigns, the progress counted across
parts, each part's SHA-256 when the session checks checksums; and resuming: the parts storage already holds are
checked against the local file (size, then the SHA-256 storage recorded, or the MD5 its ETag is), and only the
others are sent before completing."""

import base64
import hashlib
import io
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import httpx2

from quire_client.errors import (
    QuireError,
    StorageRefused,
    TimedOut,
    TransportFailed,
    UploadInterrupted,
    UploadSessionEnded,
)
from quire_client.models import (
    CompletedPart,
    CompleteRequest,
    PartUrlsRequest,
    PartUrlsView,
    PartUrlView,
    StoredPartView,
    UploadSessionView,
)

PART_CONCURRENCY = 3  # PUTs in flight at once, as the console sends them
CHUNK_BYTES = 1024 * 1024  # what one PUT's body is read and hashed by
URL_BATCH = 20  # part URLs asked for at once (the API signs at most 100 a call)
URL_MARGIN = timedelta(seconds=60)  # a URL closer than this to its end is asked for again
PART_ATTEMPTS = 3  # a part's PUT tried this often when the connection fails or storage answers 5xx
_MD5_ETAG = re.compile(r"[0-9a-fA-F]{32}")

# Called with (bytes sent, bytes in all): across every part, from the worker threads, one call at a time.
Progress = Callable[[int, int], None]


class _Stopped(Exception):
    """Another part failed or the caller interrupted: this part's PUT stops between chunks."""


class LocalFile:
    """The bytes being uploaded: a path, opened for each read (never read whole), or bytes in memory."""

    def __init__(self, source: str | os.PathLike[str] | bytes) -> None:
        if isinstance(source, bytes):
            self._content: bytes | None = source
            self._path: Path | None = None
            self.size = len(source)
        else:
            self._content, self._path = None, Path(source)
            self.size = self._path.stat().st_size

    @property
    def name(self) -> str | None:
        return self._path.name if self._path else None

    def read_all(self) -> bytes:
        """The whole file: for the single POST only (at most its limit)."""
        if self._path is not None:
            return self._path.read_bytes()
        assert self._content is not None
        return self._content

    def whole_sha256(self) -> str:
        """The SHA-256 of the whole file, hex (as the API takes it; a part's is base64): read once, a chunk at a
        time."""
        digest = hashlib.sha256()
        for chunk in self.chunks(0, self.size):
            digest.update(chunk)
        return digest.hexdigest()

    def _open(self) -> BinaryIO:
        if self._path is not None:
            return self._path.open("rb")
        assert self._content is not None
        return io.BytesIO(self._content)

    def chunks(self, offset: int, length: int) -> Iterator[bytes]:
        """`length` bytes from `offset`, CHUNK_BYTES at a time; OSError when the file is now shorter."""
        with self._open() as handle:
            handle.seek(offset)
            left = length
            while left:
                chunk = handle.read(min(CHUNK_BYTES, left))
                if not chunk:
                    raise OSError(f"the file ended {left} bytes before its part did: was it changed meanwhile?")
                left -= len(chunk)
                yield chunk

    def digests(self, offset: int, length: int) -> tuple[str, str]:
        """The MD5 (hex, as S3 makes a part's ETag) and the SHA-256 (base64, as S3's checksum header) of a part."""
        md5, sha256 = hashlib.md5(usedforsecurity=False), hashlib.sha256()
        for chunk in self.chunks(offset, length):
            md5.update(chunk)
            sha256.update(chunk)
        return md5.hexdigest(), base64.b64encode(sha256.digest()).decode()

    def sha256(self, offset: int, length: int) -> str:
        sha256 = hashlib.sha256()
        for chunk in self.chunks(offset, length):
            sha256.update(chunk)
        return base64.b64encode(sha256.digest()).decode()


@dataclass(frozen=True)
class Plan:
    """How the session cuts the file: every part `part_size` bytes but the last (as the API's plan)."""

    upload_id: str
    byte_size: int
    part_size: int
    part_count: int
    checksums: bool

    def span(self, number: int) -> tuple[int, int]:
        """The part's offset and length."""
        offset = (number - 1) * self.part_size
        return offset, min(self.part_size, self.byte_size - offset)


@dataclass(frozen=True)
class PartsSent:
    """What an upload by parts did: the parts it sent, the held parts it kept (checked against the local file) and
    the held parts it sent again because they did not match."""

    upload_id: str
    part_count: int
    sent: tuple[int, ...]
    kept: tuple[int, ...] = ()
    replaced: tuple[int, ...] = ()


class PartsApi(Protocol):
    """The calls an upload by parts makes (Quire has them)."""

    def part_urls(self, upload_id: str, body: PartUrlsRequest) -> PartUrlsView: ...

    def complete_upload(self, upload_id: str, body: CompleteRequest) -> UploadSessionView: ...

    def send_to_storage(
        self, method: str, url: str, *, content: Iterator[bytes], headers: Mapping[str, str]
    ) -> httpx2.Response: ...


@dataclass(frozen=True)
class HeldCheck:
    kept: dict[int, str]  # part number → its ETag, matching the local file
    replace: list[int]  # held, but not this file's bytes (or not provably): sent again


def check_held(plan: Plan, held: Sequence[StoredPartView], source: LocalFile) -> HeldCheck:
    """Which of the parts storage holds are the local file's: the size the plan gives it, then the SHA-256 storage
    recorded (a session with checksums) or the MD5 a plain ETag is. A part that cannot be proven the same (an ETag
    that is no MD5, as with SSE-KMS) is sent again: a part sent again replaces the one held."""
    kept: dict[int, str] = {}
    replace: list[int] = []
    for part in held:
        number = part["partNumber"]
        if not 1 <= number <= plan.part_count:
            continue
        offset, length = plan.span(number)
        etag = part["etag"].strip().strip('"')
        claimed = part.get("checksumSha256")
        if part["size"] != length:
            same = False
        elif claimed:
            same = source.sha256(offset, length) == claimed
        elif _MD5_ETAG.fullmatch(etag):
            same = source.digests(offset, length)[0] == etag.lower()
        else:
            same = False
        if same:
            kept[number] = part["etag"]
        else:
            replace.append(number)
    return HeldCheck(kept, replace)


def plan_of(session: Mapping[str, Any]) -> Plan:
    """The plan of a ticket (POST /v1/uploads) or a session (GET /v1/uploads/{id}); they name the same fields."""
    byte_size = session.get("byteSize")
    return Plan(
        upload_id=str(session["uploadId"]),
        byte_size=int(byte_size) if byte_size is not None else -1,
        part_size=int(session["partSize"]),
        part_count=int(session["partCount"]),
        checksums=bool(session.get("checksums")),
    )


class _PartUrls:
    """The presigned URL of each part, asked for in batches as the parts come up (each lives at most 15 minutes,
    so a long upload asks as it goes); with checksums, one part at a time, each signed with its SHA-256."""

    def __init__(self, api: PartsApi, plan: Plan, order: Sequence[int]) -> None:
        self._api = api
        self._plan = plan
        self._order = list(order)
        self._urls: dict[int, PartUrlView] = {}
        self._lock = threading.Lock()

    def _usable(self, number: int) -> PartUrlView | None:
        url = self._urls.get(number)
        if url is None or datetime.fromisoformat(url["expiresAt"]) - datetime.now(UTC) < URL_MARGIN:
            return None
        return url

    def get(self, number: int, checksum: str | None) -> PartUrlView:
        with self._lock:
            url = self._usable(number)
            if url is not None:
                return url
            body: PartUrlsRequest
            if checksum is not None:
                body = {"parts": [{"partNumber": number, "checksumSha256": checksum}]}
            else:
                start = self._order.index(number)
                wanted = [n for n in self._order[start:] if self._usable(n) is None][:URL_BATCH]
                body = {"partNumbers": wanted}
            for part in self._api.part_urls(self._plan.upload_id, body)["parts"]:
                self._urls[part["partNumber"]] = part
            return self._urls[number]

    def forget(self, number: int) -> None:
        with self._lock:
            self._urls.pop(number, None)


class _Counter:
    """Bytes sent across every part, reported to `progress` one call at a time."""

    def __init__(self, progress: Progress | None, total: int, start: int) -> None:
        self._progress = progress
        self._total = total
        self._sent = start
        self._lock = threading.Lock()
        self.report(0)

    def report(self, delta: int) -> None:
        with self._lock:
            self._sent += delta
            if self._progress is not None:
                self._progress(self._sent, self._total)


class PartsUpload:
    """Sends some parts of a session (3 at a time) and returns each one's ETag."""

    def __init__(
        self,
        api: PartsApi,
        plan: Plan,
        source: LocalFile,
        *,
        progress: Progress | None = None,
        already_sent: int = 0,
        concurrency: int = PART_CONCURRENCY,
        sleep: Callable[[float], None],
    ) -> None:
        self._api = api
        self._plan = plan
        self._source = source
        self._counter = _Counter(progress, source.size, already_sent)
        self._concurrency = concurrency
        self._sleep = sleep
        self._stop = threading.Event()
        self._urls: _PartUrls | None = None

    def send(self, numbers: Sequence[int], held: int = 0) -> dict[int, str]:
        """PUT each part of `numbers`; their ETags. A part that keeps failing stops the others between chunks and
        raises UploadInterrupted (the parts already held stay: resume sends the rest); so does an interruption
        of the caller (KeyboardInterrupt), which is raised again once the PUTs in flight have stopped."""
        self._urls = _PartUrls(self._api, self._plan, numbers)
        etags: dict[int, str] = {}
        pool = ThreadPoolExecutor(max_workers=self._concurrency, thread_name_prefix="quire-part")
        futures: dict[Future[str], int] = {pool.submit(self._part, number): number for number in numbers}
        try:
            pending: set[Future[str]] = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in done:
                    etags[futures[future]] = future.result()
        except BaseException as error:
            self._stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            if not isinstance(error, Exception) or isinstance(error, UploadInterrupted):
                raise
            finished = {futures[f]: f.result() for f in futures if f.done() and not f.cancelled() and not f.exception()}
            raise UploadInterrupted(self._plan.upload_id, held + len(finished), self._plan.part_count, error) from error
        pool.shutdown(wait=True)
        return etags

    def _part(self, number: int) -> str:
        offset, length = self._plan.span(number)
        checksum = self._source.sha256(offset, length) if self._plan.checksums else None
        assert self._urls is not None
        failure: QuireError | None = None
        for attempt in range(1, PART_ATTEMPTS + 1):
            if self._stop.is_set():
                raise _Stopped(f"part {number}: stopped")
            url = self._urls.get(number, checksum)
            sent = 0

            def body() -> Iterator[bytes]:
                nonlocal sent
                for chunk in self._source.chunks(offset, length):
                    if self._stop.is_set():
                        raise _Stopped(f"part {number}: stopped")
                    yield chunk
                    sent += len(chunk)
                    self._counter.report(len(chunk))

            headers = {**url["headers"], "Content-Length": str(length)}
            try:
                response = self._api.send_to_storage("PUT", url["url"], content=body(), headers=headers)
            except (TransportFailed, TimedOut) as error:
                self._counter.report(-sent)
                failure = error
                self._sleep(0.5 * 2 ** (attempt - 1))
                continue
            if response.is_success:
                etag = response.headers.get("etag")
                if not etag:
                    raise StorageRefused(
                        response.status_code, f"part {number}: storage sent no ETag (its CORS rule must expose it)"
                    )
                return etag
            self._counter.report(-sent)
            failure = StorageRefused(response.status_code, f"part {number}: {response.text[:500]}")
            if response.status_code == 403 and "expired" in response.text.lower():
                self._urls.forget(number)  # signed long ago (a slow connection): a fresh URL, at once
                continue
            if response.status_code < 500:
                raise failure
            self._sleep(0.5 * 2 ** (attempt - 1))
        assert failure is not None
        raise failure


def completion(etags: Mapping[int, str], part_count: int) -> list[CompletedPart]:
    return [{"partNumber": number, "etag": etags[number]} for number in range(1, part_count + 1)]


def send_every_part(
    api: PartsApi, plan: Plan, source: LocalFile, progress: Progress | None, sleep: Callable[[float], None]
) -> PartsSent:
    """A new session's upload: every part, then completion."""
    numbers = list(range(1, plan.part_count + 1))
    etags = PartsUpload(api, plan, source, progress=progress, sleep=sleep).send(numbers)
    api.complete_upload(plan.upload_id, {"parts": completion(etags, plan.part_count)})
    return PartsSent(plan.upload_id, plan.part_count, sent=tuple(numbers))


def finish_session(
    api: PartsApi,
    session: UploadSessionView,
    source: LocalFile,
    progress: Progress | None,
    sleep: Callable[[float], None],
) -> PartsSent:
    """A session resumed: the held parts checked against `source`, the others sent, then completion (nothing for a
    session already completed)."""
    upload_id = session["uploadId"]
    if session["state"] in ("aborted", "expired"):
        ended = f" since {session['endedAt']}" if session.get("endedAt") else ""
        raise UploadSessionEnded(
            upload_id,
            session["state"],
            f"upload session {upload_id} is {session['state']}{ended}: its parts are gone; upload the file again",
        )
    if session["byteSize"] != source.size:
        raise ValueError(
            f"upload session {upload_id} is for {session['byteSize']} bytes, but this file has {source.size}:"
            " not the file it was opened for"
        )
    plan = plan_of(session)
    if session["state"] != "open":
        return PartsSent(upload_id, plan.part_count, sent=())
    held = check_held(plan, session["parts"], source)
    missing = [number for number in range(1, plan.part_count + 1) if number not in held.kept]
    already = sum(plan.span(number)[1] for number in held.kept)
    sender = PartsUpload(api, plan, source, progress=progress, already_sent=already, sleep=sleep)
    etags = {**held.kept, **sender.send(missing, len(held.kept))}
    api.complete_upload(upload_id, {"parts": completion(etags, plan.part_count)})
    return PartsSent(upload_id, plan.part_count, tuple(missing), tuple(sorted(held.kept)), tuple(held.replace))
