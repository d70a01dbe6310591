"""S3 on 127.0.0.1: moto in server mode, written through to disk (`shared/local/durable_s3.py`).

Every change a request makes (object versions, delete markers, tags, bucket settings, multipart uploads and their
parts: `shared/local/s3_multipart.py`) is on disk, synced, before S3's answer leaves the server, and is read back on
the next start: what the local S3 acknowledged
survives `kill -9`, as it would on S3. Object bytes are read from their files, so the server's memory holds
metadata only.

S3 announces each new object to EventBridge on AWS; moto does not, so this server does it itself: every object
version a request stored is reported to `on_object_created` as the same "Object Created" event, once it is
on disk.

A stack of an earlier build kept its objects in `.quire/s3-snapshot.pickle`, written on a clean stop; such a
snapshot is read once, written through, and renamed `*.imported`.
"""

import logging
import pickle
import shutil
import threading
import types
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from moto.core.model_instances import model_data
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.s3.models import s3_backends
from moto.s3.utils import _VersionedKeyStore
from werkzeug.serving import BaseWSGIServer, make_server

from shared.local.durable_s3 import CreatedObject, DurableBuckets, fsync_directory
from shared.local.s3_changes import DurableRequests
from shared.local.s3_multipart import MultipartRequests
from shared.local.s3_uploads import UploadStore

DEFAULT_ACCOUNT = "123456789012"
_PARTITION = "aws"
_DRAIN_SECONDS = 10
_log = logging.getLogger(__name__)

ObjectCreatedListener = Callable[[dict[str, Any]], None]


def _rebuild_key_store(lists: dict[str, list[Any]]) -> _VersionedKeyStore:
    """How snapshots of earlier builds stored a bucket's keys (pickle names this function): read on upgrade."""
    store = _VersionedKeyStore()
    for name, versions in lists.items():
        store.setlist(name, versions)
    return store


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


def object_created_event(
    bucket: str, key: str, version_id: str | None, size: int, etag: str, *, reason: str = "PutObject"
) -> dict[str, Any]:
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
            "reason": reason,
        },
    }


class LocalS3Server:
    def __init__(
        self,
        data_dir: Path,
        *,
        port: int,
        on_object_created: ObjectCreatedListener | None = None,
        legacy_snapshot: Path | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.port = port
        self._listener = on_object_created
        self._legacy_snapshot = legacy_snapshot
        self._server: BaseWSGIServer | None = None
        self._app: DurableRequests | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @staticmethod
    def _backend() -> Any:
        return s3_backends[DEFAULT_ACCOUNT][_PARTITION]

    def start(self) -> int:
        """Read what is on disk back and start serving; returns how many buckets were restored."""
        # A long-lived server must hold only what its buckets hold (every listing once leaked a bucket's copy).
        _stop_tracking_instances()
        _listing_without_copies(self._backend())
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        store = DurableBuckets(self.data_dir, self._backend())
        imported = self._import_legacy_snapshot(store)
        restored = store.restore()
        if imported:
            _log.info("an earlier build's snapshot was imported: %s buckets, now kept in %s", restored, self.data_dir)
        uploads = UploadStore(self.data_dir / "uploads")
        uploads.restore()
        moto_app = DomainDispatcherApplication(create_backend_app)
        self._app = DurableRequests(MultipartRequests(moto_app, self._backend(), uploads), store, self._announce)
        self._server = make_server("127.0.0.1", self.port, self._app, threaded=True, request_handler=MotoRequestHandler)
        threading.Thread(target=self._server.serve_forever, name="quire-local-s3", daemon=True).start()
        return restored

    def _import_legacy_snapshot(self, store: DurableBuckets) -> bool:
        """A snapshot of an earlier build (written on its last clean stop) becomes the store, once."""
        snapshot = self._legacy_snapshot
        if snapshot is None or not snapshot.exists():
            return False
        # A marker for the import's duration: an import a crash cut short is started over, not taken for done.
        importing = self.data_dir / "importing-snapshot"
        if importing.exists():
            shutil.rmtree(self.data_dir / "buckets", ignore_errors=True)
        elif not store.is_empty():
            return False
        importing.touch()
        fsync_directory(self.data_dir)  # the marker outlives a crash, or the import is taken for done
        with snapshot.open("rb") as handle:
            buckets = pickle.load(handle)  # noqa: S301 - our own file, written by an earlier build of this server
        self._backend().buckets.update(buckets)
        store.persist_everything()
        snapshot.replace(snapshot.with_name(snapshot.name + ".imported"))
        importing.unlink()
        return True

    def _announce(self, stored: CreatedObject) -> None:
        if self._listener is not None:
            self._listener(
                object_created_event(
                    stored.bucket, stored.key, stored.version_id, stored.size, stored.etag, reason=stored.reason
                )
            )

    def stop(self) -> None:
        """Stop accepting requests and let those being served finish (each is on disk before it answers)."""
        if self._server is not None and self._app is not None:
            self._server.shutdown()
            if not self._app.wait_idle(_DRAIN_SECONDS):
                _log.warning("S3 requests still running after %ss", _DRAIN_SECONDS)
            self._server.server_close()
            self._server = None
        # The listing stays without copies: the backend is the process's, shared by any other server in it.
