"""Which keys and buckets each request to the local S3 changed, and holding its answer until they are on disk.

The changes are seen where moto makes them: each bucket's key store is replaced by one that notes the names it is
asked to change, and the tagger by one that notes the objects it tags, in the request's own context (moto serves
each request on its own thread). Bucket settings are noted by wrapping the backend's few methods that change them.
`DurableRequests`, the WSGI middleware in front of moto, gives each request that context and hands what it noted to
the store (`shared/local/durable_s3.py`) before the response leaves.
"""

import logging
import threading
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from moto.s3.utils import _VersionedKeyStore

from shared.local.s3_reads import streamed_reads

if TYPE_CHECKING:
    from shared.local.durable_s3 import CreatedObject, DurableBuckets

_log = logging.getLogger(__name__)
_ARN_PREFIX = "arn:aws:s3:::"
_KEY_LOCK_STRIPES = 64
_request = threading.local()
_key_locks = [threading.RLock() for _ in range(_KEY_LOCK_STRIPES)]


def key_lock(bucket: str, key: str) -> threading.RLock:
    """Held while one key's list of versions is read and set again (moto's puts and deletes, a completed upload)."""
    return _key_locks[hash((bucket, key)) % _KEY_LOCK_STRIPES]


class BytesMissing(FileNotFoundError):
    """An object version's file is gone from under the store (removed by hand): S3's NoSuchKey, not a 500."""


@dataclass
class RequestChanges:
    """What one request changed, noted as moto changes it."""

    keys: set[tuple[str, str]] = field(default_factory=set)
    buckets: set[str] = field(default_factory=set)
    # Told, before the answer leaves, whether the changes are on disk (True) or were undone (False): what may happen
    # only after the commit (a completed upload's parts removed) waits for it.
    settled: list[Callable[[bool], None]] = field(default_factory=list)


def current_changes() -> RequestChanges | None:
    """The changes of the request this thread serves, inside `DurableRequests`."""
    changes: RequestChanges | None = getattr(_request, "changes", None)
    return changes


def _note_key(bucket: str, key: str) -> None:
    changes = current_changes()
    if changes is not None:
        changes.keys.add((bucket, key))


def _note_bucket(bucket: str) -> None:
    changes = current_changes()
    if changes is not None:
        changes.buckets.add(bucket)


class _NotingKeyStore(_VersionedKeyStore):
    """moto's key store of one bucket, noting each key name a request changes."""

    def __init__(self, bucket_name: str) -> None:
        super().__init__()
        self.bucket_name = bucket_name

    def __setitem__(self, key: str, value: Any) -> Any:
        _note_key(self.bucket_name, key)
        return super().__setitem__(key, value)

    def setlist(self, key: Any, list_: Any) -> Any:
        _note_key(self.bucket_name, key)
        return super().setlist(key, list_)

    def pop(self, key: str) -> None:  # type: ignore[override]
        _note_key(self.bucket_name, key)
        return super().pop(key)

    def __delitem__(self, key: str) -> None:
        _note_key(self.bucket_name, key)
        super().__delitem__(key)


def noting_keys(bucket: Any) -> None:
    if isinstance(bucket.keys, _NotingKeyStore):
        return
    noting = _NotingKeyStore(bucket.name)
    dict.update(noting, dict.items(bucket.keys))
    bucket.keys = noting


def _note_arn(arn: str) -> None:
    """An object's ARN as moto's tagger sees it: arn:aws:s3:::<bucket>/<key>/<version id>."""
    if not arn.startswith(_ARN_PREFIX):
        return
    bucket, _, rest = arn[len(_ARN_PREFIX) :].partition("/")
    key, _, _version = rest.rpartition("/")
    if bucket and key:
        _note_key(bucket, key)


def install_notes(backend: Any) -> None:
    """Once per backend (the process has one): the hooks note changes only inside a request's context."""
    if getattr(backend, "_quire_noting", False):
        return
    for bucket in backend.buckets.values():
        noting_keys(bucket)

    def noting_bucket(method: Callable[..., Any], *, swap_keys: bool = False) -> Callable[..., Any]:
        def wrapped(bucket_name: str, *args: Any, **kwargs: Any) -> Any:
            result = method(bucket_name, *args, **kwargs)
            if swap_keys and bucket_name in backend.buckets:
                noting_keys(backend.buckets[bucket_name])
            _note_bucket(bucket_name)
            return result

        return wrapped

    backend.create_bucket = noting_bucket(backend.create_bucket, swap_keys=True)
    for name in ("delete_bucket", "put_bucket_versioning", "put_bucket_cors", "delete_bucket_cors"):
        setattr(backend, name, noting_bucket(getattr(backend, name)))
    # moto changes a key's versions by reading the list and setting a new one: two requests changing one key at
    # once would each drop the other's version (acknowledged, then never stored). One at a time per key.
    for name in ("put_object", "delete_object"):
        setattr(backend, name, _one_at_a_time_per_key(getattr(backend, name)))
    tagger = backend.tagger
    for name in ("tag_resource", "untag_resource_using_names", "untag_resource_using_tags"):
        method = getattr(tagger, name)
        setattr(tagger, name, _noting_tags(method))
    tagger.delete_all_tags_for_resource = _noting_tags(tagger.delete_all_tags_for_resource)
    backend._quire_noting = True


def _one_at_a_time_per_key(method: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(bucket_name: str, key_name: str, *args: Any, **kwargs: Any) -> Any:
        with key_lock(bucket_name, key_name):
            return method(bucket_name, key_name, *args, **kwargs)

    return wrapped


def _noting_tags(method: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(arn: str, *args: Any, **kwargs: Any) -> Any:
        _note_arn(arn)
        return method(arn, *args, **kwargs)

    return wrapped


_INTERNAL_ERROR = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code><Message>the local S3 could not'
    b" write the change to disk; nothing was stored</Message></Error>"
)


_BYTES_MISSING = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchKey</Code><Message>the bytes of this object version'
    b" are missing from the local store (.quire/s3)</Message></Error>"
)


def _reads_the_object(parameter: str) -> bool:
    return parameter in ("versionId", "partNumber") or parameter.lower().startswith(("x-amz-", "response-"))


def _settle(changes: RequestChanges, *, committed: bool) -> None:
    for step in changes.settled:
        try:
            step(committed)
        except Exception:  # what the request changed stands (or was undone) all the same
            _log.exception("a step after an S3 change was settled failed")


class DurableRequests:
    """WSGI middleware: each request's changes are on disk before its response leaves, and the objects it
    created are announced only then (an event never names an object a crash could still lose). Counts the
    requests in flight, so that a stop can let them finish."""

    def __init__(
        self, app: Any, store: "DurableBuckets", announce: "Callable[[CreatedObject], None] | None" = None
    ) -> None:
        self._app = app
        self._store = store
        self._announce = announce
        self._count = 0
        self._idle = threading.Condition()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        with self._idle:
            self._count += 1
        try:
            return self._serve(environ, start_response)
        finally:
            with self._idle:
                self._count -= 1
                self._idle.notify_all()

    def _serve(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        answer: dict[str, Any] = {}

        def hold(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
            answer["status"], answer["headers"] = status, headers
            return lambda data: answer.setdefault("written", []).append(data)

        if self._names_missing_bytes(environ):
            # A version whose file was removed from disk behind the store's back (moto would answer a HEAD from
            # its record): S3's answer for an object that is not there (the API's 410), never a 500 to retry.
            start_response("404 Not Found", [("Content-Type", "application/xml")])
            return [_BYTES_MISSING]
        changes = RequestChanges()
        _request.changes = changes
        failure: BaseException | None = None
        streamed = self._reads_object_bytes(environ) and environ.get("REQUEST_METHOD") == "GET"
        try:
            with streamed_reads() if streamed else nullcontext():
                response = self._app(environ, hold)
            # Materialised here, so nothing of the response is sent before the changes are on disk; an object's
            # bytes, which a GET changes nothing to send, go from its file as they are sent (`s3_reads.py`).
            body = response if streamed and not (changes.keys or changes.buckets) else list(response)
        except BytesMissing:
            answer.update(status="404 Not Found", headers=[("Content-Type", "application/xml")])
            body = [_BYTES_MISSING]
        except BaseException as error:  # re-raised once what moto changed is on disk
            failure, body = error, []
        finally:
            _request.changes = None
        try:
            # Committed even when moto failed part way (a failed S3 request may have taken effect): undoing it
            # from disk could also undo another request's change to the same key that moto already holds.
            created = self._store.commit(changes) if changes.keys or changes.buckets else []
        except Exception:  # a full disk, a permission, or a bug: never an answer for a change not on disk
            _log.exception("could not write an S3 change to disk; it is undone")
            self._store.revert(changes)
            _settle(changes, committed=False)
            start_response("500 Internal Server Error", [("Content-Type", "application/xml")])
            return [_INTERNAL_ERROR]
        _settle(changes, committed=True)
        if failure is not None:
            raise failure
        if self._announce is not None:
            for stored in created:
                try:
                    self._announce(stored)
                except Exception:
                    _log.exception("could not announce a new object")
        start_response(answer["status"], answer["headers"])
        written = answer.get("written")
        return [*written, *body] if written else body

    @staticmethod
    def _reads_object_bytes(environ: dict[str, Any]) -> bool:
        """A GET or HEAD of an object version (path style: /bucket/key, `versionId` in the query); not one of a
        subresource (?tagging, ?acl, ...), which reads the record only."""
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return False
        bucket, _, key = environ.get("PATH_INFO", "").lstrip("/").partition("/")
        if not bucket or not key:
            return False
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        return all(_reads_the_object(name) for name in query)

    def _names_missing_bytes(self, environ: dict[str, Any]) -> bool:
        """A GET or HEAD of an object version whose file is gone."""
        if not self._reads_object_bytes(environ):
            return False
        bucket, _, key = environ.get("PATH_INFO", "").lstrip("/").partition("/")
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        try:
            key = key.encode("latin-1").decode("utf-8")  # WSGI hands the path over as latin-1 of its bytes
            return self._store.bytes_missing(bucket, key, (query.get("versionId") or [None])[0])
        except (UnicodeError, ValueError):
            return False

    def wait_idle(self, timeout: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._count == 0, timeout=timeout)
