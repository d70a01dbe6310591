"""moto's S3 buckets kept on disk, so that what the local S3 acknowledged survives a SIGKILL.

`DurableBuckets.commit` makes the disk say what moto's memory says for every key and bucket a request changed
(`shared/local/s3_changes.py` notes them, and holds the response until the commit is done); `restore` reads it all
back on the next start. Layout under the store's root (`.quire/s3/`):

    buckets/<bucket>/bucket.json                 the bucket's region, versioning and CORS rules
    buckets/<bucket>/keys/<hh>/<h>/<seq>.data    one object version's bytes (h: sha256 of the key's name)
    buckets/<bucket>/keys/<hh>/<h>/<seq>.json    its record: version id, etag, metadata, tags (the commit)

A version exists once its record does: the bytes are written and synced first, then the record (written aside
and renamed), then the directory is synced. A crash in between leaves bytes without a record, never acknowledged,
which the next start removes. A deleted version's record goes first, then its bytes (moved aside for a minute, so
that a read already holding the version finishes). Versions of one key keep their order by `seq`.

The bytes stay on disk: once written, an object version in moto's memory reads them from its file, so the
server holds metadata only, however much is stored. Until then they are in a buffer with one read position, which
every reader seeks and reads under the version's lock (moto's ETag included: `_etag_worked_out_under_the_lock`).
"""

import hashlib
import json
import logging
import os
import threading
import time
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from moto.s3.models import FakeDeleteMarker, FakeKey

from shared.local.s3_changes import BytesMissing, RequestChanges, install_notes, noting_keys
from shared.local.s3_reads import FileView, reads_are_streamed

_log = logging.getLogger(__name__)

_COPY_CHUNK = 1 << 20
_TRASH_GRACE_SECONDS = 60.0
_LOCK_STRIPES = 64


@dataclass(frozen=True)
class CreatedObject:
    """An object version a request stored: what S3 announces as "Object Created"."""

    bucket: str
    key: str
    version_id: str | None
    size: int
    etag: str
    reason: str = "PutObject"  # what S3's event names as its cause (CompleteMultipartUpload for a multipart's)


class _StoredBytes:
    """An object version's bytes, read from its file on demand: what moto's key reads in place of its buffer
    once the version is on disk. Versions are immutable, so writing is refused."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._position = 0

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_SET:
            self._position = offset
        elif whence == os.SEEK_CUR:
            self._position += offset
        else:
            try:
                self._position = self.path.stat().st_size + offset
            except FileNotFoundError as missing:
                raise BytesMissing(str(self.path)) from missing
        return self._position

    def intact(self, size: int) -> bool:
        try:
            return self.path.stat().st_size == size
        except OSError:
            return False

    def tell(self) -> int:
        return self._position

    def read(self, size: int = -1) -> bytes | FileView:
        try:
            if (size is None or size < 0) and reads_are_streamed():
                view = FileView.open(self.path, self._position)  # a GET's body, sent from the file
                self._position += len(view)
                return view
            handle = self.path.open("rb")
        except FileNotFoundError as missing:
            raise BytesMissing(str(self.path)) from missing
        with handle:
            handle.seek(self._position)
            data = handle.read() if size is None or size < 0 else handle.read(size)
        self._position += len(data)
        return data

    def write(self, _data: bytes) -> int:
        raise OSError("a stored object version is immutable")

    def truncate(self, _size: int | None = None) -> int:
        raise OSError("a stored object version is immutable")

    def close(self) -> None:
        return None


class StagedBytes(_StoredBytes):
    """The bytes of a new object version already written and synced elsewhere under the store's root (a completed
    multipart upload's): its commit moves the file into place rather than copying it."""


@dataclass
class _Persisted:
    version: Any  # the FakeKey or FakeDeleteMarker in moto's memory (held, so its identity stays its own)
    seq: int
    record: dict[str, Any]


def fsync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_synced(path: Path, chunks: Iterable[bytes]) -> None:
    """Write aside, sync, rename into place: a reader (or a restart) sees the whole file or none of it."""
    partial = path.with_name(path.name + ".partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                view = view[os.write(descriptor, view) :]
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    partial.replace(path)


def _make_directories(path: Path, *, up_to: Path) -> None:
    """mkdir -p, syncing each parent that gained an entry, so a new key's directory survives a crash."""
    missing: list[Path] = []
    current = path
    while not current.exists() and current != up_to:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)
        fsync_directory(directory.parent)


def _iso(moment: datetime) -> str:
    return moment.isoformat()


_etag_without_the_lock: Callable[[FakeKey], str] = vars(FakeKey)["etag"].fget


def _etag_under_the_lock(version: FakeKey) -> str:
    if version._etag is None:
        with version.lock:
            return _etag_without_the_lock(version)
    return _etag_without_the_lock(version)


def _etag_worked_out_under_the_lock() -> None:
    """moto works out a new version's ETag when first asked (the put's own thread, building its answer) by seeking
    the version's buffer to the start and reading it, without the version's lock. A commit of another request to
    the same key may be copying that buffer to disk at the same moment (`_write_bytes`, under the lock): the two
    moved one read position, and the commit wrote an empty file under a record of the full size (an acknowledged
    version lost), or the ETag was of no bytes. Once per process: moto's class is the process's."""
    if vars(FakeKey)["etag"].fget is not _etag_under_the_lock:
        FakeKey.etag = property(_etag_under_the_lock)  # type: ignore[assignment,method-assign]


class DurableBuckets:
    """The buckets of one moto backend, kept on disk under `root`."""

    def __init__(self, root: Path, backend: Any) -> None:
        self.root = root
        self._buckets_root = root / "buckets"
        self._trash = root / "trash"
        self._backend = backend
        self._persisted: dict[tuple[str, str], list[_Persisted]] = {}
        self._cors: dict[str, list[dict[str, Any]]] = {}
        self._seq = 0
        self._seq_lock = threading.Lock()
        self._stripes = [threading.Lock() for _ in range(_LOCK_STRIPES)]
        self._trashed: list[tuple[float, Path]] = []
        self._trash_lock = threading.Lock()
        self._bucket_lock = threading.Lock()
        _etag_worked_out_under_the_lock()

    # -- reading back ------------------------------------------------------------------------------------------

    def is_empty(self) -> bool:
        return not self._buckets_root.exists() or not any(self._buckets_root.iterdir())

    def restore(self) -> int:
        """Read every bucket back into moto's memory; returns how many. A bucket moto already holds (a server
        restarted in the same process) is replaced by what the disk says, which is what was acknowledged."""
        install_notes(self._backend)
        self._remember_cors_calls()
        self._buckets_root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._empty_trash(everything=True)
        restored = 0
        for directory in sorted(self._buckets_root.iterdir()):
            settings = _read_json(directory / "bucket.json")
            if settings is None:
                if not (directory / "bucket.json").exists():
                    continue  # a deleted bucket (S3 deletes only empty ones)
                # Unreadable settings must not hide the objects: the bucket comes back versioned, as the
                # stack creates its buckets, without CORS rules until they are put again.
                _log.error(
                    "%s is unreadable; the bucket is restored versioned, without CORS", directory / "bucket.json"
                )
                settings = {"name": directory.name, "versioning": "Enabled"}
            self._restore_bucket(directory, settings)
            restored += 1
        return restored

    def _restore_bucket(self, directory: Path, settings: dict[str, Any]) -> None:
        from moto.s3.models import s3_backends

        name = settings["name"]
        if name in self._backend.buckets:
            self._backend.buckets.pop(name)
            s3_backends.bucket_accounts.pop(name, None)
        bucket = self._backend.create_bucket(name, settings.get("region") or "us-east-1")
        if settings.get("versioning"):
            self._backend.put_bucket_versioning(name, settings["versioning"])
        if settings.get("cors"):
            self._backend.put_bucket_cors(name, settings["cors"])
            self._cors[name] = settings["cors"]
        noting_keys(bucket)
        keys_root = directory / "keys"
        if not keys_root.exists():
            return
        for key_directory in keys_root.glob("*/*"):
            self._restore_key(bucket, key_directory)

    def _restore_key(self, bucket: Any, directory: Path) -> None:
        records: list[tuple[int, dict[str, Any]]] = []
        for path in directory.iterdir():
            if path.name.endswith(".partial"):
                path.unlink()  # a write a crash cut short: never acknowledged
            elif path.suffix == ".json":
                record = _read_json(path)
                if record is not None:
                    records.append((int(path.stem, 16), record))
        records.sort(key=lambda pair: pair[0])
        recorded = {seq for seq, _ in records}
        for path in directory.glob("*.data"):
            if int(path.stem, 16) not in recorded:
                path.unlink()  # bytes whose record was never written (or was deleted): never acknowledged
        if not records:
            return
        name = records[0][1]["key"]
        versions: list[Any] = []
        persisted: list[_Persisted] = []
        for seq, record in records:
            if not record.get("deleteMarker") and not _bytes_intact(directory / f"{seq:016x}.data", record):
                # Removed or cut short behind the store's back. The version keeps its place (an older one must not
                # become current), and a GET or HEAD of it answers NoSuchKey (`bytes_missing`): the API's 410.
                _log.warning(
                    "the bytes of %s (version %s) are missing or not %s bytes in %s",
                    record["key"],
                    record.get("versionId"),
                    record.get("size"),
                    directory,
                )
            version = self._version_of(bucket, directory, seq, record, versions[-1] if versions else None)
            versions.append(version)
            persisted.append(_Persisted(version, seq, record))
            self._seq = max(self._seq, seq)
        dict.__setitem__(bucket.keys, name, versions)
        self._persisted[(bucket.name, name)] = persisted

    def _version_of(self, bucket: Any, directory: Path, seq: int, record: dict[str, Any], previous: Any) -> Any:
        if record.get("deleteMarker"):
            # moto reads only the name of what a marker hides (and whether it is a marker itself).
            marker = FakeDeleteMarker(key=previous or types.SimpleNamespace(name=record["key"]))  # type: ignore[arg-type]
            marker._version_id = record["versionId"]
            marker.last_modified = datetime.fromisoformat(record["lastModified"])
            return marker
        version = FakeKey(
            name=record["key"],
            value=b"",
            account_id=self._backend.account_id,
            region_name=bucket.region_name,
            storage=record.get("storageClass"),
            etag=record.get("etag"),
            is_versioned=bool(record.get("versioned")),
            version_id=record.get("versionId"),
            bucket_name=bucket.name,
        )
        version._value_buffer.close()
        version._value_buffer = _StoredBytes(directory / f"{seq:016x}.data")  # type: ignore[assignment]
        version.contentsize = int(record["size"])
        version.last_modified = datetime.fromisoformat(record["lastModified"])
        version._metadata.clear()
        version._metadata.update(record.get("metadata", {}))
        for attribute, value in record.get("attributes", {}).items():
            if hasattr(version, attribute):
                setattr(version, attribute, value)
        tags = record.get("tags") or {}
        if tags:
            self._backend.tagger.tag_resource(version.arn, [{"Key": k, "Value": v} for k, v in tags.items()])
        return version

    # -- writing through ---------------------------------------------------------------------------------------

    def commit(self, changes: RequestChanges) -> list[CreatedObject]:
        """Make the disk say what moto's memory says for everything a request changed; the object versions it
        created, to be announced once they are safe."""
        created: list[CreatedObject] = []
        for bucket in sorted(changes.buckets):
            self._sync_bucket(bucket)
        for bucket, key in sorted(changes.keys):
            created.extend(self._sync_key(bucket, key))
        self._empty_trash()
        return created

    def revert(self, changes: RequestChanges) -> None:
        """After a commit failed: moto's memory goes back to what the disk holds for those keys, so nothing
        unacknowledged can be read or listed."""
        for bucket_name, key in changes.keys:
            bucket = self._backend.buckets.get(bucket_name)
            if bucket is None:
                continue
            with self._lock_of(bucket_name, key):
                self._persisted.pop((bucket_name, key), None)
                dict.pop(bucket.keys, key, None)
                directory = self._key_directory(bucket_name, key)
                if directory.exists():
                    self._restore_key(bucket, directory)

    def bytes_missing(self, bucket_name: str, key: str, version_id: str | None) -> bool:
        """True when the object version a GET or HEAD names (the current one without an id) is a stored version
        whose file is gone or not its size: moto's memory would still answer from its record."""
        bucket = self._backend.buckets.get(bucket_name)
        versions = dict.get(bucket.keys, key) if bucket is not None else None
        if not versions:
            return False
        if version_id is None:
            version = versions[-1]
        else:
            version = next((v for v in versions if str(getattr(v, "version_id", "")) == version_id), None)
        buffer = getattr(version, "_value_buffer", None)
        return isinstance(buffer, _StoredBytes) and not buffer.intact(int(getattr(version, "contentsize", -1)))

    def _remember_cors_calls(self) -> None:
        """CORS rules as the backend was handed them (moto keeps them parsed), to be handed back on restore."""
        backend = self._backend
        if getattr(backend, "_quire_cors_remembered", None) is self:
            return
        put_cors, delete_cors = backend.put_bucket_cors, backend.delete_bucket_cors

        def put_bucket_cors(bucket_name: str, cors_rules: list[dict[str, Any]]) -> None:
            put_cors(bucket_name, cors_rules)
            self._cors[bucket_name] = cors_rules

        def delete_bucket_cors(bucket_name: str) -> None:
            delete_cors(bucket_name)
            self._cors.pop(bucket_name, None)

        backend.put_bucket_cors = put_bucket_cors
        backend.delete_bucket_cors = delete_bucket_cors
        backend._quire_cors_remembered = self

    def _sync_bucket(self, name: str) -> None:
        with self._bucket_lock:
            self._sync_bucket_settings(name)

    def _sync_bucket_settings(self, name: str) -> None:
        directory = self._buckets_root / name
        bucket = self._backend.buckets.get(name)
        if bucket is None:
            # Deleted (S3 deletes only empty buckets): its settings go, and the directory with them.
            (directory / "bucket.json").unlink(missing_ok=True)
            return
        _make_directories(directory, up_to=self.root)
        settings = {
            "name": name,
            "region": bucket.region_name,
            "versioning": bucket.versioning_status,
            "cors": self._cors.get(name),
        }
        write_synced(directory / "bucket.json", [json.dumps(settings).encode()])
        fsync_directory(directory)

    def _key_directory(self, bucket: str, key: str) -> Path:
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        return self._buckets_root / bucket / "keys" / digest[:2] / digest

    def _lock_of(self, bucket: str, key: str) -> threading.Lock:
        return self._stripes[hash((bucket, key)) % _LOCK_STRIPES]

    def _next_seq(self) -> int:
        with self._seq_lock:
            self._seq += 1
            return self._seq

    def _sync_key(self, bucket_name: str, key: str) -> list[CreatedObject]:
        bucket = self._backend.buckets.get(bucket_name)
        directory = self._key_directory(bucket_name, key)
        created: list[CreatedObject] = []
        with self._lock_of(bucket_name, key):
            # Read under the lock: a list read before it could miss a version another request has committed
            # since, which this commit would then take for deleted.
            current = list(bucket.keys.getlist(key, []) or []) if bucket is not None else []
            persisted = self._persisted.get((bucket_name, key), [])
            kept: list[_Persisted] = []
            changed = False
            for version in current:
                known = next((entry for entry in persisted if entry.version is version), None)
                record = self._record_of(key, version)
                if known is None:
                    _make_directories(directory, up_to=self.root)
                    seq = self._next_seq()
                    if isinstance(version, FakeKey):
                        staged = isinstance(version._value_buffer, StagedBytes)
                        self._write_bytes(version, directory / f"{seq:016x}.data")
                        reason = "CompleteMultipartUpload" if staged else "PutObject"
                        created.append(
                            CreatedObject(bucket_name, key, version.version_id, version.size, record["etag"], reason)
                        )
                    write_synced(directory / f"{seq:016x}.json", [json.dumps(record).encode()])
                    kept.append(_Persisted(version, seq, record))
                    changed = True
                else:
                    if record != known.record:
                        write_synced(directory / f"{known.seq:016x}.json", [json.dumps(record).encode()])
                        changed = True
                    kept.append(_Persisted(version, known.seq, record))
            kept_seqs = {entry.seq for entry in kept}
            for entry in persisted:
                if entry.seq not in kept_seqs:
                    (directory / f"{entry.seq:016x}.json").unlink(missing_ok=True)
                    self._move_to_trash(entry.version, directory / f"{entry.seq:016x}.data")
                    changed = True
            if changed and directory.exists():
                fsync_directory(directory)
            if kept:
                self._persisted[(bucket_name, key)] = kept
            else:
                self._persisted.pop((bucket_name, key), None)
        return created

    def _record_of(self, key: str, version: Any) -> dict[str, Any]:
        if isinstance(version, FakeDeleteMarker) or not isinstance(version, FakeKey):
            return {
                "key": key,
                "deleteMarker": True,
                "versionId": version.version_id,
                "lastModified": _iso(version.last_modified),
            }
        tags = self._backend.tagger.get_tag_dict_for_resource(version.arn)
        return {
            "key": key,
            "versionId": version._version_id,
            "versioned": version._is_versioned,
            "etag": version.etag.strip('"'),
            "size": version.size,
            "lastModified": _iso(version.last_modified),
            "storageClass": version.storage_class,
            "metadata": dict(version.metadata),
            "attributes": {
                name: getattr(version, name)
                for name in (
                    "checksum_algorithm",
                    "checksum_value",
                    "checksum_type",
                    "checksum_parts",
                    "encryption",
                    "kms_key_id",
                    "bucket_key_enabled",
                    "lock_mode",
                    "lock_legal_status",
                    "lock_until",
                    "website_redirect_location",
                )
                if isinstance(getattr(version, name, None), str | int | bool)
            },
            "tags": tags,
        }

    def _write_bytes(self, version: FakeKey, path: Path) -> None:
        with version.lock:
            buffer = version._value_buffer
            if isinstance(buffer, StagedBytes):
                buffer.path.replace(path)  # synced where it was written; the key's directory is synced next
                version._value_buffer = _StoredBytes(path)  # type: ignore[assignment]
                return
            buffer.seek(0)
            write_synced(path, iter(lambda: buffer.read(_COPY_CHUNK), b""))
            # From now on the version reads its file: moto's memory keeps no copy of the bytes.
            version._value_buffer = _StoredBytes(path)  # type: ignore[assignment]
            buffer.close()

    def _move_to_trash(self, version: Any, path: Path) -> None:
        if not path.exists():
            return
        self._trash.mkdir(mode=0o700, exist_ok=True)
        target = self._trash / f"{time.time_ns()}-{path.name}"
        lock = getattr(version, "lock", None) or threading.Lock()
        with lock:
            path.replace(target)
            # A read that looked the version up before its deletion still finds its bytes, for the grace period.
            if isinstance(getattr(version, "_value_buffer", None), _StoredBytes):
                version._value_buffer.path = target
        with self._trash_lock:
            self._trashed.append((time.monotonic(), target))

    def _empty_trash(self, *, everything: bool = False) -> None:
        """Bytes of deleted versions go for good once no read can still be holding them."""
        if everything:
            if self._trash.exists():
                for path in self._trash.iterdir():
                    path.unlink(missing_ok=True)
            return
        cutoff = time.monotonic() - _TRASH_GRACE_SECONDS
        with self._trash_lock:
            due = [path for moved, path in self._trashed if moved < cutoff]
            self._trashed = [(moved, path) for moved, path in self._trashed if moved >= cutoff]
        for path in due:
            path.unlink(missing_ok=True)

    def persist_everything(self) -> int:
        """Write every bucket and key moto holds (an old snapshot read into memory); how many keys."""
        install_notes(self._backend)
        self._remember_cors_calls()
        count = 0
        for name, bucket in list(self._backend.buckets.items()):
            noting_keys(bucket)
            self._sync_bucket(name)
            for key in list(dict.keys(bucket.keys)):
                self._sync_key(name, key)
                count += 1
        return count


def _bytes_intact(path: Path, record: dict[str, Any]) -> bool:
    try:
        return path.stat().st_size == int(record["size"])
    except (OSError, KeyError, TypeError, ValueError):
        return False


def _read_json(path: Path) -> dict[str, Any] | None:
    """A record or settings file, or None for one that is missing or unreadable (garbage, cut short)."""
    try:
        loaded = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(loaded, dict) or not isinstance(loaded.get("name", loaded.get("key")), str):
        return None
    return loaded
