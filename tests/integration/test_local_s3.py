"""moto's S3 server as Quire uses it: a versioned bucket, real presigned URLs, each change on disk before its answer."""

import hashlib
import random
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from shared.adapters.aws.s3_content_store import S3ContentStore
from shared.bootstrap import Container
from shared.config import Settings
from shared.domain.uploads import SAFE_DOWNLOAD_TYPE
from shared.local.embedded_postgres import free_port
from shared.local.s3_server import LocalS3Server
from shared.local.supervisor import ensure_bucket
from tests.builders.local_s3 import forget_bucket, server_process


def etag_of(body: bytes) -> str:
    """S3's ETag of an object put whole: the MD5 of its bytes, quoted."""
    return f'"{hashlib.md5(body).hexdigest()}"'  # noqa: S324 - S3's ETag


def store_for(endpoint: str, bucket: str) -> S3ContentStore:
    """Built by the composition root, exactly as a handler gets it."""
    store = Container(Settings(runtime="local", s3_endpoint_url=endpoint, bucket=bucket)).content
    assert isinstance(store, S3ContentStore)
    return store


@pytest.fixture
def bucket(s3_endpoint: str) -> str:
    name = f"quire-test-{free_port()}"
    assert ensure_bucket(s3_endpoint, name) == "Enabled"
    return name


def test_every_put_is_a_new_version_and_old_versions_stay_readable(s3_endpoint: str, bucket: str) -> None:
    store = store_for(s3_endpoint, bucket)
    first = store.put("t/a/doc", b"first", content_type="text/plain")
    second = store.put("t/a/doc", b"second", content_type="text/plain")
    assert first.version_id and second.version_id and first.version_id != second.version_id
    assert store.get("t/a/doc", version_id=first.version_id, max_bytes=100) == b"first"
    assert store.get("t/a/doc", max_bytes=100) == b"second"
    head = store.head("t/a/doc", version_id=first.version_id)
    assert head is not None and head.byte_size == 5
    assert store.head("t/a/missing") is None


def test_reading_more_than_the_limit_is_refused_not_truncated(s3_endpoint: str, bucket: str) -> None:
    store = store_for(s3_endpoint, bucket)
    store.put("big", b"x" * 1000, content_type="application/octet-stream")
    with pytest.raises(ValueError, match="limit is 999"):
        store.get("big", max_bytes=999)


def test_a_signed_read_works_over_http_and_is_clamped_to_fifteen_minutes(s3_endpoint: str, bucket: str) -> None:
    store = store_for(s3_endpoint, bucket)
    stored = store.put("t/a/page.html", b"<script>alert(1)</script>", content_type="text/html")
    signed = store.signed_read(
        "t/a/page.html", version_id=stored.version_id, filename="page.html", lifetime=timedelta(days=7)
    )
    assert signed is not None
    query = parse_qs(urlsplit(signed.url).query)
    assert query["X-Amz-Expires"] == ["900"]
    with urllib.request.urlopen(signed.url, timeout=10) as response:
        body = response.read()
        # Served as opaque bytes in an attachment: never rendered as HTML by a browser.
        assert response.headers["Content-Type"] == SAFE_DOWNLOAD_TYPE
        assert response.headers["Content-Disposition"].startswith('attachment; filename="page.html"')
    assert body == b"<script>alert(1)</script>"


def test_deleting_a_version_removes_only_that_version(s3_endpoint: str, bucket: str) -> None:
    store = store_for(s3_endpoint, bucket)
    old = store.put("k", b"old", content_type="text/plain")
    new = store.put("k", b"new", content_type="text/plain")
    assert old.version_id and new.version_id
    store.delete_version("k", old.version_id)
    store.delete_version("k", old.version_id)  # already gone: not an error
    assert store.head("k", version_id=old.version_id) is None
    assert store.get("k", version_id=new.version_id, max_bytes=10) == b"new"


def test_objects_versions_delete_markers_and_tags_survive_a_restart(tmp_path: Path, aws_credentials: None) -> None:
    server = LocalS3Server(tmp_path / "s3", port=free_port())
    server.start()
    name = f"quire-restart-{server.port}"
    try:
        ensure_bucket(server.endpoint, name, browser_origins=("http://127.0.0.1:1",))
        store = store_for(server.endpoint, name)
        v1 = store.put("doc", b"one", content_type="text/plain").version_id
        v2 = store.put("doc", b"two", content_type="text/plain").version_id
        gone = store.put("gone", b"soon deleted", content_type="text/plain").version_id
        assert v1 and v2 and gone
        store.withdraw([("gone", gone)])  # tagged, then that version deleted
        tagged = store.put("tagged", b"kept", content_type="text/plain").version_id
        assert tagged is not None
        store.client.put_object_tagging(
            Bucket=name, Key="tagged", VersionId=tagged, Tagging={"TagSet": [{"Key": "k", "Value": "v"}]}
        )
        store.client.delete_object(Bucket=name, Key="marked")  # a delete marker on a missing key: nothing
        marker = store.client.delete_object(Bucket=name, Key="doc")["VersionId"]  # a delete marker over "doc"
    finally:
        server.stop()  # no snapshot, no flush: each change was on disk when it was answered
    forget_bucket(name)
    restarted = LocalS3Server(tmp_path / "s3", port=free_port())
    assert restarted.start() >= 1
    try:
        store = store_for(restarted.endpoint, name)
        assert store.get("doc", version_id=v1, max_bytes=10) == b"one"
        assert store.get("doc", version_id=v2, max_bytes=10) == b"two"
        assert store.head("doc") is None  # the delete marker is still the newest version
        listed = store.client.list_object_versions(Bucket=name, Prefix="doc")
        assert [m["VersionId"] for m in listed.get("DeleteMarkers", [])] == [marker]
        assert [v["VersionId"] for v in listed["Versions"]] == [v2, v1]  # newest first, as before
        assert store.head("gone", version_id=gone) is None
        tags = store.client.get_object_tagging(Bucket=name, Key="tagged", VersionId=tagged)["TagSet"]
        assert tags == [{"Key": "k", "Value": "v"}]
        head = store.client.head_object(Bucket=name, Key="tagged")
        assert head["ContentType"] == "text/plain" and head["ContentLength"] == 4
        assert store.bucket_versioning() == "Enabled"
        rules = store.client.get_bucket_cors(Bucket=name)["CORSRules"]
        assert [rule["AllowedOrigins"] for rule in rules] == [["http://127.0.0.1:1"]]
        store.put("after", b"new", content_type="text/plain")  # and it keeps writing through
    finally:
        restarted.stop()
        forget_bucket(name)


def test_the_bytes_of_a_stored_version_are_read_from_disk_not_kept_in_memory(
    tmp_path: Path, aws_credentials: None
) -> None:
    from moto.s3.models import s3_backends

    from shared.local.durable_s3 import _StoredBytes

    server = LocalS3Server(tmp_path / "s3", port=free_port())
    server.start()
    name = f"quire-bytes-{server.port}"
    try:
        ensure_bucket(server.endpoint, name)
        store = store_for(server.endpoint, name)
        store.put("big", b"y" * 300_000, content_type="application/octet-stream")
        version = s3_backends["123456789012"]["aws"].buckets[name].keys["big"]
        assert isinstance(version._value_buffer, _StoredBytes)
        assert store.read_range("big", version_id=None, start=299_990, length=20) == b"y" * 10
    finally:
        server.stop()
        forget_bucket(name)


def test_a_read_of_a_large_object_is_sent_from_its_file_never_held_whole(s3_endpoint: str, bucket: str) -> None:
    """moto's GET reads a key's whole value and slices it for a Range: a 100-byte read of a 1 GB object held the
    gigabyte. The server (in this process) sends it from the file a MiB at a time, whole or ranged."""
    import tracemalloc

    store = store_for(s3_endpoint, bucket)
    body = bytes(range(256)) * (128 * 1024)  # 32 MiB
    version = store.put("large", body, content_type="application/octet-stream").version_id
    assert version is not None
    del body
    store.read_range("large", version_id=version, start=0, length=1)  # botocore reads its model on a first GET
    tracemalloc.start()
    try:
        ranged = store.read_range("large", version_id=version, start=20_000_000, length=100)
        _, ranged_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        whole = store.client.get_object(Bucket=bucket, Key="large", VersionId=version)["Body"]
        sent = sum(len(chunk) for chunk in whole.iter_chunks(1 << 20))
        _, whole_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ranged == bytes((20_000_000 + offset) % 256 for offset in range(100))
    assert sent == 32 * 1024 * 1024
    # A MiB or two in flight, and the 10 MB buffer werkzeug's server reads the finished connection's rest into;
    # never the object's 32.
    assert ranged_peak < 16 * 1024 * 1024, ranged_peak
    assert whole_peak < 16 * 1024 * 1024, whole_peak


def test_bytes_a_crash_left_without_their_record_are_never_restored(tmp_path: Path, aws_credentials: None) -> None:
    """A write cut short (its bytes synced, its record not yet written) was never acknowledged: it is removed."""
    server = LocalS3Server(tmp_path / "s3", port=free_port())
    server.start()
    name = f"quire-cut-{server.port}"
    try:
        ensure_bucket(server.endpoint, name)
        store = store_for(server.endpoint, name)
        store.put("doc", b"acknowledged", content_type="text/plain")
    finally:
        server.stop()
    forget_bucket(name)
    [key_directory] = list((tmp_path / "s3" / "buckets" / name / "keys").glob("*/*"))
    (key_directory / "ffffffffffffffff.data").write_bytes(b"cut short")
    (key_directory / "fffffffffffffffe.json.partial").write_bytes(b'{"key": "doc"')
    restarted = LocalS3Server(tmp_path / "s3", port=free_port())
    restarted.start()
    try:
        store = store_for(restarted.endpoint, name)
        assert store.get("doc", max_bytes=100) == b"acknowledged"
        assert len(store.client.list_object_versions(Bucket=name)["Versions"]) == 1
        assert sorted(path.suffix for path in key_directory.iterdir()) == [".data", ".json"]
    finally:
        restarted.stop()
        forget_bucket(name)


def test_a_change_that_cannot_reach_the_disk_is_refused_and_undone(
    tmp_path: Path, aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError

    from shared.local import durable_s3

    server = LocalS3Server(tmp_path / "s3", port=free_port())
    server.start()
    name = f"quire-full-{server.port}"
    try:
        ensure_bucket(server.endpoint, name)
        store = store_for(server.endpoint, name)
        store.put("doc", b"first", content_type="text/plain")
        real_write = durable_s3.write_synced

        def disk_full(path: Path, chunks: Any) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(durable_s3, "write_synced", disk_full)
        client = boto3.client(
            "s3", endpoint_url=server.endpoint, region_name="us-east-1", config=Config(retries={"max_attempts": 1})
        )
        with pytest.raises(ClientError, match="InternalError"):
            client.put_object(Bucket=name, Key="doc", Body=b"second")
        monkeypatch.setattr(durable_s3, "write_synced", real_write)
        # Nothing of the refused write can be read or listed.
        assert store.get("doc", max_bytes=100) == b"first"
        assert len(client.list_object_versions(Bucket=name, Prefix="doc")["Versions"]) == 1
    finally:
        server.stop()
        forget_bucket(name)


def test_versions_written_at_once_to_one_key_are_all_kept(tmp_path: Path, aws_credentials: None) -> None:
    """Eight writers on one key (two draws of one page image, a replacement racing a deletion): each commit
    sees the others' versions, and none takes another's for deleted."""
    server = LocalS3Server(tmp_path / "s3", port=free_port())
    server.start()
    name = f"quire-race-{server.port}"
    acknowledged: dict[str, bytes] = {}
    lock = threading.Lock()
    try:
        ensure_bucket(server.endpoint, name)
        store = store_for(server.endpoint, name)

        def write(worker: int) -> None:
            for number in range(12):
                body = f"{worker}-{number}".encode() * 50
                version = store.put("one/key", body, content_type="text/plain").version_id
                assert version is not None
                with lock:
                    acknowledged[version] = body

        threads = [threading.Thread(target=write, args=(worker,)) for worker in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(acknowledged) == 96
        for version, body in acknowledged.items():  # readable now ...
            assert store.get("one/key", version_id=version, max_bytes=10_000) == body
    finally:
        server.stop()
        forget_bucket(name)
    restarted = LocalS3Server(tmp_path / "s3", port=free_port())
    restarted.start()
    try:
        store = store_for(restarted.endpoint, name)
        for version, body in acknowledged.items():  # ... and after a restart
            assert store.get("one/key", version_id=version, max_bytes=10_000) == body
    finally:
        restarted.stop()
        forget_bucket(name)


class _PausedBuffer:
    """A version's bytes in memory, whose first seek by one thread (moto working out the ETag, past its check that
    none is known yet) waits until `go` is set; every other use goes straight to the buffer."""

    def __init__(self, buffer: Any, go: threading.Event) -> None:
        self._buffer = buffer
        self._go = go
        self.pausing: threading.Thread | None = None
        self.paused = threading.Event()

    def seek(self, *args: Any) -> int:
        if threading.current_thread() is self.pausing and not self.paused.is_set():
            self.paused.set()
            assert self._go.wait(30), "nothing came between the ETag's check and its read"
        return int(self._buffer.seek(*args))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._buffer, name)


class _ContendedLock:
    """A key's lock that sets `go` when a thread finds it held."""

    def __init__(self, go: threading.Event) -> None:
        self._lock = threading.Lock()
        self._go = go

    def __enter__(self) -> bool:
        if self._lock.locked():
            self._go.set()
        return self._lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(None, None, None)


def test_a_version_is_written_whole_while_its_put_works_out_the_etag(
    tmp_path: Path, aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """moto works out a new version's ETag when the put builds its answer: it seeks the version's bytes in memory
    back to the start and reads them. Another request's commit to the same key may be copying those bytes to disk
    then (a commit writes every version its key holds). Both read from the buffer's one position: without the
    key's lock, the ETag's read left the commit at the end, and the commit wrote an empty file under a record of
    the full size, an acknowledged version lost (the kill -9 test's flake). Here the put's thread is paused
    inside the ETag, as a thread switch once paused it, until the commit copies the bytes or waits for the lock."""
    from moto.s3.models import s3_backends

    from shared.local import durable_s3

    server = LocalS3Server(tmp_path / "s3", port=free_port())
    server.start()
    name = f"quire-etag-{server.port}"
    body = bytes(range(256)) * 64
    etag = etag_of(body)
    try:
        ensure_bucket(server.endpoint, name)
        store = store_for(server.endpoint, name)
        # A put moto has made and not yet answered: among the key's versions, its ETag not yet worked out.
        version = s3_backends["123456789012"]["aws"].put_object(name, "doc", body)
        go = threading.Event()
        version.lock = _ContendedLock(go)  # type: ignore[assignment]
        paused = version._value_buffer = _PausedBuffer(version._value_buffer, go)  # type: ignore[assignment]
        answered: list[str] = []
        answering = paused.pausing = threading.Thread(target=lambda: answered.append(version.etag))
        answering.start()
        assert paused.paused.wait(30)
        real_write = durable_s3.write_synced

        def copy_while_the_put_answers(path: Path, chunks: Any) -> None:
            if path.suffix == ".data" and not go.is_set():  # the commit has seeked to the start: the put reads now
                go.set()
                answering.join()
            real_write(path, chunks)

        monkeypatch.setattr(durable_s3, "write_synced", copy_while_the_put_answers)
        store.put("doc", b"another request's put to the key", content_type="text/plain")
        monkeypatch.setattr(durable_s3, "write_synced", real_write)
        answering.join()
        assert answered == [etag]
        assert store.get("doc", version_id=version.version_id, max_bytes=len(body)) == body
    finally:
        server.stop()
        forget_bucket(name)
    restarted = LocalS3Server(tmp_path / "s3", port=free_port())
    restarted.start()
    try:
        store = store_for(restarted.endpoint, name)
        assert store.get("doc", version_id=version.version_id, max_bytes=len(body)) == body
        assert store.client.head_object(Bucket=name, Key="doc", VersionId=version.version_id)["ETag"] == etag
    finally:
        restarted.stop()
        forget_bucket(name)


def test_moto_changes_one_keys_versions_one_request_at_a_time(tmp_path: Path, aws_credentials: None) -> None:
    """moto puts a version by reading a key's list and setting a longer one: two puts at once would each drop the
    other's version from memory, which its commit then never stores (an acknowledged write lost, as a kill -9 run
    once showed). Threads switched every microsecond make that interleaving near certain without the server's
    per-key lock; with it every put is kept and every deleted version is gone."""
    server = LocalS3Server(tmp_path / "s3", port=free_port())
    server.start()
    name = f"quire-rmw-{server.port}"
    backend = server._backend()
    interval = sys.getswitchinterval()
    try:
        ensure_bucket(server.endpoint, name)
        made: list[str] = []
        deleted: list[str] = []
        sys.setswitchinterval(1e-6)

        def write() -> None:
            for _ in range(150):
                made.append(backend.put_object(name, "one/key", b"x").version_id)

        def delete() -> None:
            while len(deleted) < 100:
                if len(made) > len(deleted):
                    version = made[len(deleted)]
                    backend.delete_object(name, "one/key", version_id=version)
                    deleted.append(version)

        threads = [threading.Thread(target=write) for _ in range(4)] + [threading.Thread(target=delete)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        sys.setswitchinterval(interval)
        kept = {str(version.version_id) for version in backend.buckets[name].keys.getlist("one/key", [])}
        assert len(made) == 600 and len(deleted) == 100
        assert kept == set(made) - set(deleted)
    finally:
        sys.setswitchinterval(interval)
        server.stop()
        forget_bucket(name)


def test_a_read_holding_a_version_deleted_meanwhile_still_gets_its_bytes(tmp_path: Path, aws_credentials: None) -> None:
    from moto.s3.models import s3_backends

    server = LocalS3Server(tmp_path / "s3", port=free_port())
    server.start()
    name = f"quire-grace-{server.port}"
    try:
        ensure_bucket(server.endpoint, name)
        store = store_for(server.endpoint, name)
        version = store.put("doc", b"held by a reader", content_type="text/plain").version_id
        assert version is not None
        held = s3_backends["123456789012"]["aws"].buckets[name].keys["doc"]  # looked up, not yet read
        store.client.delete_object(Bucket=name, Key="doc", VersionId=version)
        assert store.head("doc", version_id=version) is None
        assert held.value == b"held by a reader"  # its bytes wait in the trash for the grace period
    finally:
        server.stop()
        forget_bucket(name)


def test_bytes_removed_behind_the_stores_back_are_missing_not_an_error(tmp_path: Path, aws_credentials: None) -> None:
    """A hand-deleted or truncated file under .quire/s3: S3's NoSuchKey (the API's 410 content_missing), not a
    500 that a client retries forever, for GET and HEAD alike, before and after a restart; the version stays the
    current one and the others are untouched. A bucket whose settings file is unreadable keeps its objects."""
    from shared.domain.errors import StoredBytesMissing

    server = LocalS3Server(tmp_path / "s3", port=free_port())
    server.start()
    name = f"quire-missing-{server.port}"
    try:
        ensure_bucket(server.endpoint, name)
        store = store_for(server.endpoint, name)
        kept = store.put("doc", b"kept", content_type="text/plain").version_id
        lost = store.put("doc", b"lost by hand", content_type="text/plain").version_id
        cut = store.put("cut", b"cut short by hand", content_type="text/plain").version_id
        keys = tmp_path / "s3" / "buckets" / name / "keys"
        [lost_file] = [p for p in keys.glob("*/*/*.data") if p.read_bytes() == b"lost by hand"]
        [cut_file] = [p for p in keys.glob("*/*/*.data") if p.read_bytes() == b"cut short by hand"]
        lost_file.unlink()
        cut_file.write_bytes(b"cut")
        with pytest.raises(StoredBytesMissing):
            store.get("doc", version_id=lost, max_bytes=100)
        with pytest.raises(StoredBytesMissing):
            store.get("doc", max_bytes=100)  # the current version, not the older one behind it
        assert store.head("doc", version_id=lost) is None  # HEAD looks at the file too, not only the record
        assert store.get("doc", version_id=kept, max_bytes=100) == b"kept"
    finally:
        server.stop()
        forget_bucket(name)
    (tmp_path / "s3" / "buckets" / name / "bucket.json").write_bytes(b'{"name": "quire-mis')
    restarted = LocalS3Server(tmp_path / "s3", port=free_port())
    restarted.start()
    try:
        store = store_for(restarted.endpoint, name)
        assert store.head("doc", version_id=lost) is None and store.head("cut", version_id=cut) is None
        assert store.head("doc") is None  # still the current version: an older one does not stand in for it
        assert store.get("doc", version_id=kept, max_bytes=100) == b"kept"
        listed = store.client.list_object_versions(Bucket=name, Prefix="doc")["Versions"]
        assert [v["VersionId"] for v in listed] == [lost, kept]  # the record stays, for a person to see
        assert store.bucket_versioning() == "Enabled"
    finally:
        restarted.stop()
        forget_bucket(name)


def test_a_snapshot_of_an_earlier_build_is_imported_once(tmp_path: Path, aws_credentials: None) -> None:
    import pickle

    from moto.s3.models import s3_backends

    from shared.local.s3_server import _rebuild_key_store

    backend = s3_backends["123456789012"]["aws"]
    name = f"quire-legacy-{free_port()}"
    bucket = backend.create_bucket(name, "us-east-1")
    backend.put_bucket_versioning(name, "Enabled")
    old = backend.put_object(name, "doc", b"from the snapshot")
    # The earlier build's format: the buckets pickled, each key store reduced to its version lists.
    lists = {key: list(versions) for key, versions in bucket.keys.lists()}
    bucket.keys = _rebuild_key_store(lists)
    snapshot = tmp_path / "s3-snapshot.pickle"
    snapshot.write_bytes(pickle.dumps({name: bucket}))
    forget_bucket(name)
    # An import a crash cut short before (its marker still there, a bucket half written) is started over.
    half = tmp_path / "s3" / "buckets" / "quire-half-imported"
    half.mkdir(parents=True)
    (half / "bucket.json").write_text('{"name": "quire-half-imported"}')
    (tmp_path / "s3" / "importing-snapshot").touch()
    server = LocalS3Server(tmp_path / "s3", port=free_port(), legacy_snapshot=snapshot)
    server.start()
    try:
        store = store_for(server.endpoint, name)
        assert store.get("doc", version_id=old.version_id, max_bytes=100) == b"from the snapshot"
        assert not half.exists() and not (tmp_path / "s3" / "importing-snapshot").exists()
        assert not snapshot.exists() and (tmp_path / "s3-snapshot.pickle.imported").exists()
    finally:
        server.stop()
        forget_bucket(name)
    restarted = LocalS3Server(tmp_path / "s3", port=free_port(), legacy_snapshot=snapshot)
    restarted.start()
    try:
        assert store_for(restarted.endpoint, name).get("doc", max_bytes=100) == b"from the snapshot"
    finally:
        restarted.stop()
        forget_bucket(name)


def test_the_server_keeps_only_what_its_buckets_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """moto deep-copied every version of every key on each version listing and kept every model instance it
    made: each listing then cost the whole bucket again, for good. Fails loudly if a moto upgrade undoes it."""
    from moto.s3.models import FakeKey

    # A server of its own: starting is what sets moto up this way (a mock_aws elsewhere in the process resets it).
    server = LocalS3Server(tmp_path / "s3", port=free_port())
    server.start()
    name = f"quire-test-{server.port}"
    ensure_bucket(server.endpoint, name)
    store = store_for(server.endpoint, name)
    for number in range(20):
        store.put(f"t/{number}/doc", b"x" * 10_000, content_type="text/plain")
    store.put("t/0/doc", b"newer", content_type="text/plain")
    copies: list[object] = []
    real_setstate = FakeKey.__setstate__

    def copied(key: FakeKey, state: dict[str, Any]) -> None:
        copies.append(key)
        real_setstate(key, state)

    monkeypatch.setattr(FakeKey, "__setstate__", copied)
    listed = [list(store.object_versions("t/0/")) for _ in range(5)]
    assert [len(versions) for versions in listed] == [2] * 5
    server.stop()
    assert copies == []  # no key (nor its bytes) was copied to answer a listing
    # And nothing made is kept beyond the bucket (moto's model metaclass adds the list).
    assert FakeKey.instances_tracked == []  # type: ignore[attr-defined]


class Writes:
    """Puts and deletes from several threads against a server that may die at any moment; only what it answered
    2xx for is recorded as acknowledged."""

    def __init__(self, endpoint: str, bucket: str, server: "subprocess.Popen[bytes]") -> None:
        self.endpoint, self.bucket, self.server = endpoint, bucket, server
        self.acknowledged: dict[tuple[str, str], bytes] = {}
        self.deleted: set[tuple[str, str]] = set()
        self.maybe_deleted: dict[tuple[str, str], bytes] = {}
        self.lock = threading.Lock()
        self.answered = threading.Condition(self.lock)  # told of each write acknowledged and each writer that ends
        self.writing = 0

    def until(self, acknowledged: int) -> None:
        """Returns once that many writes and a delete are acknowledged, or no writer is left."""
        with self.answered:
            self.answered.wait_for(
                lambda: (len(self.acknowledged) >= acknowledged and bool(self.deleted)) or not self.writing
            )

    def run(self, worker: int) -> None:
        with self.answered:
            self.writing += 1
        try:
            self._write(worker)
        finally:
            with self.answered:
                self.writing -= 1
                self.answered.notify_all()

    def _write(self, worker: int) -> None:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError

        # A session per thread: boto3's default one is not safe to make clients from in several threads at once.
        client = boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, region_name="us-east-1", config=Config(retries={"max_attempts": 1})
        )
        chance = random.Random(worker)
        for number in range(10_000):
            # Half on keys every thread writes: concurrent commits of one key must not drop each other's versions.
            key = f"shared/{number % 5}" if number % 2 else f"w{worker}/{number % 40}"
            try:
                if number % 7 == 6:
                    self._delete_one(client, key, chance)
                    continue
                body = bytes(chance.randrange(256) for _ in range(chance.randrange(1, 40_000)))
                version = client.put_object(Bucket=self.bucket, Key=key, Body=body)["VersionId"]
            except (BotoCoreError, ClientError):
                if self.server.poll() is not None:
                    return
                continue
            with self.answered:
                self.acknowledged[(key, version)] = body
                self.answered.notify_all()

    def _delete_one(self, client: Any, key: str, chance: random.Random) -> None:
        from botocore.exceptions import BotoCoreError

        with self.lock:
            versions = sorted(k for k in self.acknowledged if k[0] == key)
        if versions:
            target = chance.choice(versions)
            try:
                client.delete_object(Bucket=self.bucket, Key=target[0], VersionId=target[1])
            except BotoCoreError:
                # Unanswered (the kill came meanwhile): the delete may have been carried out before it, so the
                # version may be there or not, as on S3; if it is, it must be whole (checked at the end).
                with self.lock:
                    body = self.acknowledged.pop(target, None)
                    if body is not None:
                        self.maybe_deleted[target] = body
                raise
            with self.answered:
                self.deleted.add(target)
                self.acknowledged.pop(target, None)
                self.answered.notify_all()


def test_every_acknowledged_write_survives_kill_9_of_the_server(tmp_path: Path, aws_credentials: None) -> None:
    """The server in a process of its own takes writes from four threads and is killed mid-stream: each put
    and delete it answered 2xx for is there after a restart, byte for byte; each refused or unanswered one
    may be there or not (as on S3), but never half."""
    # A bucket of this run's own: a request the kill left to be retried, sent to a server another run has since
    # started on the same port, fails there rather than being acknowledged by it.
    port = free_port()
    name = f"quire-kill-{port}"
    child = server_process(tmp_path / "s3", port, name)
    writes = Writes(f"http://127.0.0.1:{port}", name, child)
    threads = [threading.Thread(target=writes.run, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    # Killed after a number of acknowledged writes, not a time: a loaded machine has taken over 4 s for the first.
    writes.until(acknowledged=random.randrange(40, 300))
    child.send_signal(signal.SIGKILL)
    child.wait()
    for thread in threads:
        thread.join()
    # The kill came mid-stream, after many acknowledged writes.
    assert len(writes.acknowledged) > 20 and writes.deleted, len(writes.acknowledged)
    forget_bucket(name)
    restarted = LocalS3Server(tmp_path / "s3", port=free_port())
    restarted.start()
    try:
        store = store_for(restarted.endpoint, name)
        for (key, version), body in writes.acknowledged.items():
            stored = store.client.get_object(Bucket=name, Key=key, VersionId=version)
            assert (stored["Body"].read(), stored["ETag"]) == (body, etag_of(body)), key
        for key, version in writes.deleted:
            assert store.head(key, version_id=version) is None
        for (key, version), body in writes.maybe_deleted.items():  # gone, or there as written
            if store.head(key, version_id=version) is not None:
                assert store.get(key, version_id=version, max_bytes=100_000) == body
        listed = store.client.list_object_versions(Bucket=name)
        for survivor in listed["Versions"]:  # whatever else survived is whole
            whole = store.get(survivor["Key"], version_id=survivor["VersionId"], max_bytes=100_000)
            assert len(whole) == survivor["Size"]
    finally:
        restarted.stop()
        forget_bucket(name)
