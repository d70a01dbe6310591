"""S3 on 127.0.0.1: moto in server mode, with its objects kept across `quire down` / `quire up`.

moto keeps everything in memory. On a clean shutdown the buckets (every object version, delete
markers and bucket settings included) are written to a snapshot under `.quire/`, and restored on the
next start, so version ids stay valid. moto's versioned key store pickles only the newest version of
each key, so it is reduced explicitly to its full version lists. A killed supervisor loses what
changed since the last snapshot: `quire status` says so.

S3 announces each new object to EventBridge on AWS; moto does not, so this server does it itself:
every object moto stores is reported to `on_object_created` as the same "Object Created" event.
"""

import copyreg
import io
import logging
import pickle
import threading
import time
import types
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from moto.core.model_instances import model_data
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.s3.models import s3_backends
from moto.s3.utils import _VersionedKeyStore
from werkzeug.serving import BaseWSGIServer, make_server

DEFAULT_ACCOUNT = "123456789012"
_PARTITION = "aws"
_DRAIN_SECONDS = 10
_log = logging.getLogger(__name__)

ObjectCreatedListener = Callable[[dict[str, Any]], None]


def _rebuild_key_store(lists: dict[str, list[Any]]) -> _VersionedKeyStore:
    store = _VersionedKeyStore()
    for name, versions in lists.items():
        store.setlist(name, versions)
    return store


def _reduce_key_store(store: _VersionedKeyStore) -> tuple[Any, tuple[dict[str, list[Any]]]]:
    return _rebuild_key_store, ({name: list(versions) for name, versions in store.lists()},)


class _Untracked(list[Any]):
    """moto's models append every instance they make to a class-level list (for its dashboard, which the
    local stack does not serve), so every object ever stored, deleted or copied stays in memory."""

    def append(self, _instance: Any) -> None:
        return None


def _stop_tracking_instances() -> None:
    for models in model_data.values():
        for model in models.values():
            model.instances_tracked = _Untracked()  # type: ignore[attr-defined]


class _SharedVersions:
    """Stands in for the `copy` module inside moto's `list_object_versions`, which deep-copies every version of
    every key in the bucket (bytes included), whatever the prefix, only to set `is_latest` on the copies. The
    versions are listed as they are instead (`is_latest` is true of the stored version too)."""

    @staticmethod
    def deepcopy(versions: Any) -> Any:
        return versions


def _listing_without_copies(backend: Any) -> None:
    listing = type(backend).list_object_versions
    patched = types.FunctionType(
        listing.__code__,
        {**listing.__globals__, "copy": _SharedVersions},
        listing.__name__,
        listing.__defaults__,
        listing.__closure__,
    )
    backend.list_object_versions = types.MethodType(patched, backend)


class _SnapshotPickler(pickle.Pickler):
    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[_VersionedKeyStore] = _reduce_key_store


def object_created_event(bucket: str, key: str, version_id: str | None, size: int, etag: str) -> dict[str, Any]:
    """The EventBridge "Object Created" event S3 sends (events/s3_object_created.json has one)."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": DEFAULT_ACCOUNT,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-east-1",
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": {
            "version": "0",
            "bucket": {"name": bucket},
            "object": {"key": key, "size": size, "etag": etag.strip('"'), "version-id": version_id, "sequencer": "0"},
            "request-id": uuid.uuid4().hex[:16].upper(),
            "requester": DEFAULT_ACCOUNT,
            "source-ip-address": "127.0.0.1",
            "reason": "PutObject",
        },
    }


class _InFlight:
    """WSGI middleware counting requests being served, so shutdown can wait for them to finish."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self._count = 0
        self._lock = threading.Condition()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        with self._lock:
            self._count += 1
        try:
            # Materialised here so the count covers the whole response, not just its first byte.
            return list(self._app(environ, start_response))
        finally:
            with self._lock:
                self._count -= 1
                self._lock.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: self._count == 0, timeout=timeout)


class LocalS3Server:
    def __init__(
        self, snapshot_file: Path, *, port: int, on_object_created: ObjectCreatedListener | None = None
    ) -> None:
        self.snapshot_file = snapshot_file
        self.port = port
        self._listener = on_object_created
        self._server: BaseWSGIServer | None = None
        self._app: _InFlight | None = None
        self._original_put_object: Any = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @staticmethod
    def _backend() -> Any:
        return s3_backends[DEFAULT_ACCOUNT][_PARTITION]

    def start(self) -> int:
        """Start serving; returns how many buckets were restored from the snapshot."""
        # A long-lived server must hold only what its buckets hold (every listing once leaked a bucket's copy).
        _stop_tracking_instances()
        _listing_without_copies(self._backend())
        restored = 0
        if self.snapshot_file.exists():
            with self.snapshot_file.open("rb") as snapshot:
                buckets = pickle.load(snapshot)  # noqa: S301 - our own file, written by snapshot()
            self._backend().buckets.update(buckets)
            restored = len(buckets)
        if self._listener is not None:
            self._announce_new_objects(self._listener)
        self._app = _InFlight(DomainDispatcherApplication(create_backend_app))
        self._server = make_server("127.0.0.1", self.port, self._app, threaded=True, request_handler=MotoRequestHandler)
        threading.Thread(target=self._server.serve_forever, name="quire-local-s3", daemon=True).start()
        return restored

    def _announce_new_objects(self, listener: ObjectCreatedListener) -> None:
        backend = self._backend()
        original = backend.put_object
        self._original_put_object = original

        def put_object(bucket_name: str, key_name: str, *args: Any, **kwargs: Any) -> Any:
            stored = original(bucket_name, key_name, *args, **kwargs)
            try:
                listener(object_created_event(bucket_name, key_name, stored.version_id, stored.size, stored.etag))
            except Exception:
                _log.exception("could not announce a new object")
            return stored

        backend.put_object = put_object

    def stop(self) -> None:
        """Stop accepting requests and let those being served finish, so a snapshot misses none."""
        if self._server is not None and self._app is not None:
            self._server.shutdown()
            if not self._app.wait_idle(_DRAIN_SECONDS):
                _log.warning("S3 requests still running after %ss; the snapshot may miss them", _DRAIN_SECONDS)
            self._server.server_close()
            self._server = None
        if self._original_put_object is not None:
            self._backend().put_object = self._original_put_object
            self._original_put_object = None
        # The listing stays without copies: the backend is the process's, shared by any other server in it.

    def snapshot(self) -> None:
        for attempt in range(3):
            buffer = io.BytesIO()
            try:
                _SnapshotPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(dict(self._backend().buckets))
                break
            except RuntimeError:  # a dict changed size under us: a request outlived the drain
                if attempt == 2:
                    raise
                time.sleep(0.2)
        partial = self.snapshot_file.with_suffix(".partial")
        partial.write_bytes(buffer.getvalue())
        partial.replace(self.snapshot_file)  # atomic: a crash mid-write keeps the previous snapshot
