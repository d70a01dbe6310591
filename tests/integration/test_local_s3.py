"""moto's S3 server as Quire uses it: versioned bucket, real presigned URLs, snapshot across restarts."""

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


def test_objects_and_their_versions_survive_a_snapshot_and_restart(tmp_path: Path, aws_credentials: None) -> None:
    from moto.s3.models import s3_backends

    snapshot = tmp_path / "s3.pickle"
    server = LocalS3Server(snapshot, port=free_port())
    server.start()
    buckets = s3_backends["123456789012"]["aws"].buckets
    before = dict(buckets)
    try:
        ensure_bucket(server.endpoint, "quire-restart")
        store = store_for(server.endpoint, "quire-restart")
        v1 = store.put("doc", b"one", content_type="text/plain").version_id
        v2 = store.put("doc", b"two", content_type="text/plain").version_id
        server.snapshot()
    finally:
        server.stop()
    # A new process starts with an empty moto: simulate it by forgetting the bucket.
    buckets.pop("quire-restart")
    restarted = LocalS3Server(snapshot, port=free_port())
    assert restarted.start() >= 1
    try:
        store = store_for(restarted.endpoint, "quire-restart")
        assert store.get("doc", version_id=v1, max_bytes=10) == b"one"
        assert store.get("doc", version_id=v2, max_bytes=10) == b"two"
        assert store.get("doc", max_bytes=10) == b"two"
        assert store.bucket_versioning() == "Enabled"
    finally:
        restarted.stop()
        buckets.clear()
        buckets.update(before)


def test_the_server_keeps_only_what_its_buckets_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """moto deep-copied every version of every key on each version listing and kept every model instance it
    made: each listing then cost the whole bucket again, for good. Fails loudly if a moto upgrade undoes it."""
    from moto.s3.models import FakeKey

    # A server of its own: starting is what sets moto up this way (a mock_aws elsewhere in the process resets it).
    server = LocalS3Server(tmp_path / "snapshot.pickle", port=free_port())
    server.start()
    monkeypatch.setattr(server, "snapshot", lambda: None)
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
