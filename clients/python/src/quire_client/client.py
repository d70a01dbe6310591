"""`Quire`: the API's routes as typed methods (operations.py, generated), over one HTTP connection pool, with the
caller's bearer token, typed errors, retries on 429 and 503 that honour `Retry-After`, page iteration, and uploads
that do the presigned POST and wait for the version to settle (by the event feed when given a cursor, else by
polling the file with backoff), and uploads by parts that resume (parts.py)."""

import email.utils
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar, cast

import httpx2

from quire_client.errors import (
    ApiError,
    NotFound,
    StorageRefused,
    TimedOut,
    TransportFailed,
    error_for,
)
from quire_client.events import Event, EventPage, Outcome, outcome_of_event, outcome_of_file
from quire_client.models import FileSummary, FileView, UploadRequest, UploadResponse
from quire_client.operations import Operations
from quire_client.parts import LocalFile, PartsSent, finish_session, plan_of, send_every_part
from quire_client.uploads import MultipartForm, Progress, media_type_for

PageT = TypeVar("PageT")
# Methods a retry cannot apply twice; a POST or PATCH is retried on 503 only when the API said when (Retry-After):
# its own outage answer, given before anything changed.
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
_EVENTS_PAGE = 500


@dataclass(frozen=True)
class Retries:
    """How 429 and 503 answers are retried: `attempts` in all, each after the answer's Retry-After (at most
    `max_wait_seconds`), or `backoff_seconds` doubling when it gives none."""

    attempts: int = 4
    max_wait_seconds: float = 60.0
    backoff_seconds: float = 0.5


@dataclass(frozen=True)
class Polling:
    """How a wait asks again: after `first_seconds`, growing by `factor` up to `max_seconds`."""

    first_seconds: float = 0.2
    factor: float = 1.5
    max_seconds: float = 1.0

    def delays(self) -> Iterator[float]:
        delay = self.first_seconds
        while True:
            yield delay
            delay = min(delay * self.factor, self.max_seconds)


@dataclass(frozen=True)
class Upload:
    """An upload's ticket and, once waited for, the file and how its version settled (`event` when the event feed
    said so)."""

    ticket: UploadResponse
    file: FileView | None = None
    outcome: Outcome | None = None
    event: Event | None = None
    parts: PartsSent | None = None  # an upload by parts: which parts were sent, kept or replaced

    @property
    def file_id(self) -> str:
        return self.ticket["fileId"]

    @property
    def version_id(self) -> str:
        return self.ticket["versionId"]


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """A Retry-After header's wait: seconds, or an HTTP date (`now` is the epoch time to count from)."""
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError):
        return None


class Quire(Operations):
    """A client of one Quire API (`base_url`, such as https://api.example.com), calling as the holder of `token`.
    `transport` replaces the network (httpx2.MockTransport in tests); `sleep` is what waiting calls."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        retries: Retries = Retries(),
        polling: Polling = Polling(),
        transport: httpx2.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._retries = retries
        self._polling = polling
        self._sleep = sleep
        # No default Authorization header: the token goes to the API only, never to a presigned storage URL.
        self._http = httpx2.Client(timeout=timeout, transport=transport, follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Quire":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # The one way every route is called.

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        binary: bool = False,
    ) -> Any:
        """Call `path` (from /v1/...) and return the JSON answer (None when empty; bytes when `binary` and the
        answer is not JSON). An error answer raises its ApiError subclass once the retries are spent."""
        headers = {"Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        params = {name: _query_value(value) for name, value in (query or {}).items() if value is not None}
        # Merged into a query the path may already hold (httpx2 would replace it with `params`).
        url = httpx2.URL(self.base_url + path)
        url = url.copy_merge_params(params) if params else url
        content = json.dumps(body).encode() if body is not None else None
        if content is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(1, self._retries.attempts + 1):
            response = self._send(method, url, content=content, headers=headers)
            if response.is_success:
                return _answer(response, binary)
            error = error_for(response.status_code, _error_body(response), _wait_hint(response))
            if attempt == self._retries.attempts or not self._retryable(method, response):
                raise error
            self._sleep(self._retry_wait(error, attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        binary: bool = False,
    ) -> Any:
        return self.request(method, path, query=query, body=body, binary=binary)

    def _send(self, method: str, url: str | httpx2.URL, **options: Any) -> httpx2.Response:
        try:
            return self._http.request(method, url, **options)
        except httpx2.TimeoutException as error:
            raise TimedOut(f"{method} {url}: no answer in time ({error})") from error
        except httpx2.TransportError as error:
            raise TransportFailed(f"{method} {url}: {error}") from error

    def _retryable(self, method: str, response: httpx2.Response) -> bool:
        if response.status_code == 429:
            return True
        return response.status_code == 503 and (method in _IDEMPOTENT or "retry-after" in response.headers)

    def _retry_wait(self, error: ApiError, attempt: int) -> float:
        hinted = error.retry_after
        wait = hinted if hinted is not None else self._retries.backoff_seconds * 2 ** (attempt - 1)
        return min(wait, self._retries.max_wait_seconds)

    # Pages.

    def pages(self, fetch: Callable[..., PageT], /, **arguments: Any) -> Iterator[PageT]:
        """Every page of a listing: `fetch` (a method such as `list_files`) called with `arguments`, then again
        with each answer's `nextCursor` as `cursor`, until a page has none."""
        while True:
            page = fetch(**arguments)
            yield page
            cursor = cast("Mapping[str, Any]", page).get("nextCursor")
            if not cursor:
                return
            arguments = {**arguments, "cursor": cursor}

    def items(self, fetch: Callable[..., Any], key: str, /, **arguments: Any) -> Iterator[Any]:
        """The entries under `key` of every page (`items(client.list_files, "files")`)."""
        for page in self.pages(fetch, **arguments):
            yield from page[key]

    def iter_files(self, **arguments: Any) -> Iterator[FileSummary]:
        """Every file the caller can read, across pages (`list_files`'s keyword arguments)."""
        yield from self.items(self.list_files, "files", **arguments)

    # Events.

    def events_page(
        self,
        *,
        after: str | None = None,
        limit: int | None = None,
        collection_id: str | None = None,
        types: Sequence[str] | None = None,
    ) -> EventPage:
        """One page of `GET /v1/events`: the caller's events after the cursor `after` (from the oldest kept;
        `latest`: none, only the cursor after the last published), of `types` when given."""
        query = {
            "after": after,
            "limit": limit,
            "collectionId": collection_id,
            "type": ",".join(types) if types else None,
        }
        return cast("EventPage", self.request("GET", "/v1/events", query=query))

    def iter_events(
        self,
        *,
        after: str | None = None,
        collection_id: str | None = None,
        types: Sequence[str] | None = None,
        follow: bool = False,
    ) -> Iterator[tuple[Event, str]]:
        """Each event after `after` with the cursor to resume just after it; at the end, waits for more when
        `follow` (polling with backoff), else stops."""
        delays = self._polling.delays()
        while True:
            page = self.events_page(after=after, limit=_EVENTS_PAGE, collection_id=collection_id, types=types)
            events = page["events"]
            for index, event in enumerate(events):
                # Each event's own cursor, so stopping mid-page loses nothing; the page's last gives the page's cursor.
                own = event.get("cursor")
                yield event, page["nextCursor"] if index == len(events) - 1 or own is None else own
            after = page["nextCursor"]
            if page["events"]:
                delays = self._polling.delays()
            elif follow:
                self._sleep(next(delays))
            else:
                return

    # Uploads.

    def upload(
        self,
        source: str | os.PathLike[str] | bytes,
        collection_id: str,
        *,
        filename: str | None = None,
        media_type: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        language: str | None = None,
        wait: bool = True,
        timeout: float = 600.0,
        events_after: str | None = None,
        progress: Progress | None = None,
        multipart: bool = False,
        part_size: int | None = None,
        checksums: bool = False,
        on_session: Callable[[UploadResponse], None] | None = None,
        sha256: bool = True,
    ) -> Upload:
        """Upload a file (a path, or bytes with `filename`) into a collection: ask `POST /v1/uploads` for a ticket,
        post the bytes to storage as a browser would, and (with `wait`) wait until the version is indexed, failed
        or rejected: on the event feed from `events_after` (an event cursor from before the upload; by default the
        feed's `latest` cursor, taken before the ticket), polling where the API has no feed. The outcome is in the
        answer, not an exception: a failed document is an answer too. `language` (ISO 639-1, "de") declares the
        document's language instead of detecting it per chunk.

        A file past the single POST's limit gets an upload session instead, and so does any file with `multipart`,
        `part_size` (bytes, whole MiB, at least 5 MiB) or `checksums` (each part's SHA-256, checked by storage):
        then the parts are read from the file as they are sent, three at a time, and completed; `on_session` is
        called with the ticket first (its `uploadId` is what `resume` takes). A part that keeps failing raises
        UploadInterrupted, naming the session.

        With `sha256` (the default) the file's SHA-256 is declared with the ticket (the file is read once more
        first): storage then refuses other bytes, and the ticket's `duplicateOf` names an earlier version in the
        collection with the same bytes (the upload goes ahead all the same)."""
        local = LocalFile(source)
        if isinstance(source, bytes) and not filename:
            raise ValueError("uploading bytes takes a filename")
        filename = filename or local.name or ""
        kind = media_type or media_type_for(filename)
        request: UploadRequest = {
            "collectionId": collection_id,
            "filename": filename,
            "mediaType": kind,
            "byteSize": local.size,
        }
        if metadata:
            request["metadata"] = dict(metadata)
        if language is not None:
            request["language"] = language
        if multipart:
            request["multipart"] = True
        if part_size is not None:
            request["partSize"] = part_size
        if checksums:
            request["checksums"] = True
        if sha256:
            request["sha256"] = local.whole_sha256()
        if wait and events_after is None:
            events_after = self._latest_event_cursor()
        ticket = self.create_upload(request)
        parts: PartsSent | None = None
        if ticket.get("uploadId"):
            if on_session is not None:
                on_session(ticket)
            plan = replace(plan_of(ticket), byte_size=local.size)
            parts = send_every_part(self, plan, local, progress, self._sleep)
        else:
            self.post_to_storage(ticket, filename, local.read_all(), kind, progress)
        if not wait:
            return Upload(ticket, parts=parts)
        return replace(
            self.wait_for_version(
                ticket["fileId"],
                ticket["versionId"],
                timeout=timeout,
                events_after=events_after,
                collection_id=collection_id,
            ),
            parts=parts,
        )

    def resume(
        self,
        upload_id: str,
        source: str | os.PathLike[str] | bytes,
        *,
        wait: bool = True,
        timeout: float = 600.0,
        events_after: str | None = None,
        progress: Progress | None = None,
    ) -> Upload:
        """Finish an upload by parts that stopped (a crash, an interruption): `GET /v1/uploads/{id}` lists the parts
        storage holds; each is checked against `source` (its size, then the SHA-256 storage recorded or the MD5 its
        ETag is), the others are sent (a held part that does not match is sent again, replacing it), and the
        session is completed. A session already completed is only waited for; one aborted or expired raises
        UploadSessionEnded; a file of another size than the session's raises ValueError."""
        local = LocalFile(source)
        session = self.get_upload(upload_id)
        if wait and events_after is None:
            events_after = self._latest_event_cursor()
        parts = finish_session(self, session, local, progress, self._sleep)
        fields = ("fileId", "versionId", "uploadId", "partSize", "partCount", "checksums", "expiresAt")
        ticket = cast("UploadResponse", {key: session[key] for key in fields})  # type: ignore[literal-required]
        if not wait:
            return Upload(ticket, parts=parts)
        return replace(
            self.wait_for_version(
                session["fileId"],
                session["versionId"],
                timeout=timeout,
                events_after=events_after,
                collection_id=session["collectionId"],
            ),
            parts=parts,
        )

    def send_to_storage(
        self, method: str, url: str, *, content: Iterator[bytes], headers: Mapping[str, str]
    ) -> httpx2.Response:
        """A request to a presigned storage URL (a part's PUT): never with the token; no answer is TransportFailed."""
        return self._send(method, url, content=content, headers=dict(headers))

    def _latest_event_cursor(self) -> str | None:
        """The cursor after the last published event, or None where the API has no event feed (then: polling)."""
        try:
            return self.events_page(after="latest", limit=1)["nextCursor"]
        except ApiError as error:
            if _no_such_route(error) or error.status in (400, 422):
                return None
            raise

    def post_to_storage(
        self, ticket: UploadResponse, filename: str, content: bytes, media_type: str, progress: Progress | None = None
    ) -> None:
        """The presigned POST of a ticket: its fields, then the file; StorageRefused with storage's answer."""
        target = ticket.get("upload")
        if target is None:
            raise ValueError(
                f"{filename}: the ticket is an upload session (larger than one POST takes): upload by parts"
            )
        form = MultipartForm(target["fields"], filename, content, media_type)
        headers = {"Content-Type": form.content_type, "Content-Length": str(form.length)}
        response = self._send("POST", target["url"], content=form.chunks(progress), headers=headers)
        if response.status_code >= 300:
            raise StorageRefused(response.status_code, response.text[:500])

    def wait_for_version(
        self,
        file_id: str,
        version_id: str,
        *,
        timeout: float = 600.0,
        events_after: str | None = None,
        collection_id: str | None = None,
    ) -> Upload:
        """Wait until the version is indexed, failed or rejected: on the event feed from `events_after` when given
        (falling back to polling where the API has no feed), else polling `GET /v1/files/{id}` with backoff.
        TimedOut (with the last file view) after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        ticket: UploadResponse = cast("UploadResponse", {"fileId": file_id, "versionId": version_id})
        if events_after is not None:
            try:
                return self._wait_on_events(ticket, events_after, collection_id, deadline)
            except ApiError as error:
                if not _no_such_route(error):
                    raise
        return self._wait_polling(ticket, deadline)

    def _wait_on_events(self, ticket: UploadResponse, after: str, collection_id: str | None, deadline: float) -> Upload:
        for event, _ in self._events_until(after, collection_id, deadline):
            outcome = outcome_of_event(event, ticket["fileId"], ticket["versionId"])
            if outcome is not None:
                return Upload(ticket, self.get_file(ticket["fileId"]), outcome, event)
        raise TimedOut(f"file {ticket['fileId']}: no terminal event for version {ticket['versionId']} in time")

    def _events_until(self, after: str, collection_id: str | None, deadline: float) -> Iterator[tuple[Event, str]]:
        delays = self._polling.delays()
        while time.monotonic() < deadline:
            page = self.events_page(after=after, limit=_EVENTS_PAGE, collection_id=collection_id)
            after = page["nextCursor"]
            for event in page["events"]:
                yield event, after
            if not page["events"]:
                self._sleep(next(delays))

    def _wait_polling(self, ticket: UploadResponse, deadline: float) -> Upload:
        delays = self._polling.delays()
        while True:
            record = self.get_file(ticket["fileId"])
            outcome = outcome_of_file(cast("Mapping[str, Any]", record), ticket["versionId"])
            if outcome is not None:
                return Upload(ticket, record, outcome)
            if time.monotonic() >= deadline:
                raise TimedOut(f"file {ticket['fileId']}: version {ticket['versionId']} still in progress", record)
            self._sleep(next(delays))


def _no_such_route(error: ApiError) -> bool:
    return error.status == 405 or isinstance(error, NotFound)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _answer(response: httpx2.Response, binary: bool) -> Any:
    if not response.content:
        return None
    if binary and "json" not in response.headers.get("content-type", ""):
        return response.content
    return response.json()


def _error_body(response: httpx2.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def _wait_hint(response: httpx2.Response) -> float | None:
    return retry_after_seconds(response.headers.get("retry-after"), time.time())


__all__ = ["Polling", "Quire", "Retries", "Upload", "retry_after_seconds"]
