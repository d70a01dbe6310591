"""S3 on 127.0.0.1: moto in server mode, with its objects kept across `quire down` / `quire up`.

moto keeps everything in memory. On a clean shutdown the buckets (every object version, delete
markers and bucket settings included) are written to a snapshot under `.quire/`, and restored on the
next start, so version ids stay valid. moto's versioned key store pickles only the newest version of
each key, so it is reduced explicitly to its full version lists. A killed supervisor loses what
changed since the last snapshot: `quire status` says so.
"""

import copyreg
import io
import logging
import pickle
from pathlib import Path
from typing import Any

from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.s3.models import s3_backends
from moto.s3.utils import _VersionedKeyStore

DEFAULT_ACCOUNT = "123456789012"
_PARTITION = "aws"
_log = logging.getLogger(__name__)


def _rebuild_key_store(lists: dict[str, list[Any]]) -> _VersionedKeyStore:
    store = _VersionedKeyStore()
    for name, versions in lists.items():
        store.setlist(name, versions)
    return store


def _reduce_key_store(store: _VersionedKeyStore) -> tuple[Any, tuple[dict[str, list[Any]]]]:
    return _rebuild_key_store, ({name: list(versions) for name, versions in store.lists()},)


class _SnapshotPickler(pickle.Pickler):
    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[_VersionedKeyStore] = _reduce_key_store


class LocalS3Server:
    def __init__(self, snapshot_file: Path, *, port: int) -> None:
        self.snapshot_file = snapshot_file
        self.port = port
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @staticmethod
    def _buckets() -> dict[str, Any]:
        buckets: dict[str, Any] = s3_backends[DEFAULT_ACCOUNT][_PARTITION].buckets
        return buckets

    def start(self) -> int:
        """Start serving; returns how many buckets were restored from the snapshot."""
        restored = 0
        if self.snapshot_file.exists():
            with self.snapshot_file.open("rb") as snapshot:
                buckets = pickle.load(snapshot)  # noqa: S301 - our own file, written by snapshot()
            self._buckets().update(buckets)
            restored = len(buckets)
        self._server.start()
        return restored

    def snapshot(self) -> None:
        buffer = io.BytesIO()
        _SnapshotPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(dict(self._buckets()))
        partial = self.snapshot_file.with_suffix(".partial")
        partial.write_bytes(buffer.getvalue())
        partial.replace(self.snapshot_file)  # atomic: a crash mid-write keeps the previous snapshot

    def stop(self) -> None:
        self._server.stop()
