"""What every FileContentStore keeps (shared/ports/): a versioned store whose originals are never overwritten,
reads that refuse rather than truncate, deletes that are safe to repeat, and signed URLs clamped in lifetime.

Each test works under a prefix of its own, so the suite can run against one shared bucket."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.errors import StoredBytesMissing
from shared.ports import MAX_SIGNED_READ_LIFETIME, FileContentStore


def new_prefix() -> str:
    return f"contract/{uuid.uuid4().hex[:12]}/"


class ContentStoreContract:
    @pytest.fixture
    def store(self) -> FileContentStore:
        raise NotImplementedError("a contract's subclass provides the implementation")

    def test_every_put_is_a_new_version_and_old_versions_stay_readable(self, store: FileContentStore) -> None:
        key = new_prefix() + "doc"
        first = store.put(key, b"first", content_type="text/plain")
        second = store.put(key, b"second!", content_type="text/plain")
        assert first.version_id and second.version_id and first.version_id != second.version_id
        assert (first.key, first.byte_size, second.byte_size) == (key, 5, 7)
        assert store.get(key, version_id=first.version_id, max_bytes=100) == b"first"
        assert store.get(key, max_bytes=100) == b"second!"
        assert store.get_versioned(key, max_bytes=100) == (b"second!", second.version_id)

    def test_head_reports_what_is_stored_and_none_for_nothing(self, store: FileContentStore) -> None:
        key = new_prefix() + "notes.md"
        first = store.put(key, b"# one", content_type="text/markdown")
        store.put(key, b"# two, longer", content_type="text/markdown")
        newest = store.head(key)
        assert newest is not None
        assert (newest.key, newest.byte_size, newest.content_type) == (key, 13, "text/markdown")
        old = store.head(key, version_id=first.version_id)
        assert old is not None and (old.version_id, old.byte_size) == (first.version_id, 5)
        assert store.head(new_prefix() + "missing") is None

    def test_a_read_past_the_limit_is_refused_not_truncated(self, store: FileContentStore) -> None:
        key = new_prefix() + "big"
        store.put(key, b"x" * 1000, content_type="application/octet-stream")
        with pytest.raises(ValueError, match="999"):
            store.get(key, max_bytes=999)
        with pytest.raises(ValueError, match="999"):
            store.get_versioned(key, max_bytes=999)
        assert len(store.get(key, max_bytes=1000)) == 1000

    def test_a_range_is_read_from_its_start_and_shorter_at_the_end(self, store: FileContentStore) -> None:
        key = new_prefix() + "range"
        first = store.put(key, b"0123456789", content_type="application/octet-stream")
        store.put(key, b"abcdefghij", content_type="application/octet-stream")
        assert store.read_range(key, version_id=first.version_id, start=2, length=3) == b"234"
        assert store.read_range(key, version_id=None, start=8, length=10) == b"ij"
        assert store.read_range(key, version_id=None, start=0, length=0) == b""
        # Past the end, and anything of an empty object: nothing, not an error.
        assert store.read_range(key, version_id=None, start=10, length=5) == b""
        empty = new_prefix() + "empty"
        store.put(empty, b"", content_type="application/octet-stream")
        assert store.read_range(empty, version_id=None, start=0, length=8192) == b""

    def test_deleting_the_newest_version_brings_the_one_before_back(self, store: FileContentStore) -> None:
        key = new_prefix() + "doc"
        first = store.put(key, b"first", content_type="text/plain")
        second = store.put(key, b"second", content_type="text/plain")
        assert second.version_id is not None
        store.delete_version(key, second.version_id)
        store.delete_version(key, second.version_id)  # already gone: not an error
        assert store.get_versioned(key, max_bytes=100) == (b"first", first.version_id)
        assert store.head(key, version_id=second.version_id) is None

    def test_deleting_every_version_counts_them_and_leaves_nothing(self, store: FileContentStore) -> None:
        prefix = new_prefix()
        key = prefix + "doc"
        for body in (b"a", b"bb", b"ccc"):
            store.put(key, body, content_type="text/plain")
        store.put(prefix + "doc-sibling", b"kept", content_type="text/plain")
        assert store.delete_all_versions(key) == 3
        assert store.head(key) is None
        assert list(store.object_versions(key + "/")) == []
        assert store.head(prefix + "doc-sibling") is not None  # the same prefix, another key: kept
        assert store.delete_all_versions(key) == 0

    def test_a_read_of_a_version_that_is_gone_raises_stored_bytes_missing(self, store: FileContentStore) -> None:
        key = new_prefix() + "doc"
        first = store.put(key, b"first", content_type="text/plain")
        assert first.version_id is not None
        store.delete_version(key, first.version_id)
        with pytest.raises(StoredBytesMissing) as missing:
            store.get(key, version_id=first.version_id, max_bytes=100)
        assert missing.value.key == key and key not in str(missing.value)  # the key is for the log, not the caller
        with pytest.raises(StoredBytesMissing):
            store.read_range(key, version_id=first.version_id, start=0, length=3)
        with pytest.raises(StoredBytesMissing):
            store.get(new_prefix() + "never", max_bytes=100)

    def test_withdrawing_removes_exactly_the_versions_named_and_repeats_safely(self, store: FileContentStore) -> None:
        prefix = new_prefix()
        first = store.put(prefix + "a", b"first", content_type="text/plain")
        second = store.put(prefix + "a", b"second", content_type="text/plain")
        other = store.put(prefix + "b", b"other", content_type="text/plain")
        assert first.version_id and other.version_id
        assert store.withdraw([(prefix + "a", first.version_id), (prefix + "b", other.version_id)]) == 2
        assert store.head(prefix + "a", version_id=first.version_id) is None
        assert store.head(prefix + "b") is None
        assert store.get_versioned(prefix + "a", max_bytes=100) == (b"second", second.version_id)  # not named: kept
        # Already gone, and nothing at all: not an error.
        store.withdraw([(prefix + "a", first.version_id)])
        assert store.withdraw([]) == 0

    def test_object_versions_lists_every_version_under_the_prefix_only(self, store: FileContentStore) -> None:
        prefix = new_prefix()
        a1 = store.put(prefix + "a", b"1", content_type="text/plain")
        a2 = store.put(prefix + "a", b"22", content_type="text/plain")
        b1 = store.put(prefix + "sub/b", b"333", content_type="text/plain")
        store.put(new_prefix() + "a", b"elsewhere", content_type="text/plain")
        listed = {(o.key, o.version_id, o.byte_size) for o in store.object_versions(prefix)}
        assert listed == {
            (prefix + "a", a1.version_id, 1),
            (prefix + "a", a2.version_id, 2),
            (prefix + "sub/b", b1.version_id, 3),
        }
        assert {o.key for o in store.object_versions(prefix + "sub/")} == {prefix + "sub/b"}

    def test_a_signed_read_is_clamped_to_the_longest_lifetime(self, store: FileContentStore) -> None:
        key = new_prefix() + "report.pdf"
        stored = store.put(key, b"%PDF-1.7", content_type="application/pdf")
        signed = store.signed_read(key, version_id=stored.version_id, filename="report.pdf", lifetime=timedelta(days=7))
        if signed is None:
            return  # an adapter that cannot sign says so: the caller proxies the bytes
        assert signed.url.startswith(("http://", "https://"))
        assert signed.expires_at <= datetime.now(UTC) + MAX_SIGNED_READ_LIFETIME + timedelta(seconds=5)
        assert signed.expires_at > datetime.now(UTC)

    def test_a_signed_read_may_serve_a_page_image_as_png_and_clamps_it_the_same(self, store: FileContentStore) -> None:
        key = new_prefix() + "pages/page-1-1600.png"
        stored = store.put(key, b"\x89PNG\r\n\x1a\n", content_type="image/png")
        signed = store.signed_read(
            key, version_id=stored.version_id, filename="p.png", lifetime=timedelta(days=7), media_type="image/png"
        )
        if signed is None:
            return  # an adapter that cannot sign says so: the caller proxies the bytes
        assert signed.url.startswith(("http://", "https://"))
        assert signed.expires_at <= datetime.now(UTC) + MAX_SIGNED_READ_LIFETIME + timedelta(seconds=5)

    @pytest.mark.parametrize(
        "asked", ["text/html", "image/svg+xml", "application/pdf", "image/png; charset=utf-8", "IMAGE/PNG", ""]
    )
    def test_a_signed_read_refuses_to_serve_any_other_type_as_itself(self, store: FileContentStore, asked: str) -> None:
        # Only a PNG Quire drew is ever served as what it is: an upload's bytes stay opaque, whatever is asked.
        key = new_prefix() + "page.html"
        stored = store.put(key, b"<script>alert(1)</script>", content_type="text/html")
        with pytest.raises(ValueError, match="image/png"):
            store.signed_read(
                key, version_id=stored.version_id, filename="p.html", lifetime=timedelta(minutes=1), media_type=asked
            )

    @pytest.mark.parametrize("page_type", ["text/html", "text/html; charset=utf-8", "image/svg+xml", "text/xml"])
    def test_a_type_a_browser_renders_as_a_page_is_stored_as_opaque_bytes(
        self, store: FileContentStore, page_type: str
    ) -> None:
        # An object stored as text/html would be a page on any URL that opened it inline: stored XSS.
        key = new_prefix() + "page"
        stored = store.put(key, b"<script>alert(1)</script>", content_type=page_type)
        head = store.head(key)
        assert head is not None
        assert stored.content_type == head.content_type == "application/octet-stream"
        upload = store.signed_upload(key, content_type=page_type, max_bytes=1000, lifetime=timedelta(minutes=5))
        assert upload.fields["Content-Type"] == "application/octet-stream"

    def test_a_signed_upload_pins_the_key_and_the_type(self, store: FileContentStore) -> None:
        key = new_prefix() + "upload.pdf"
        upload = store.signed_upload(key, content_type="application/pdf", max_bytes=1000, lifetime=timedelta(minutes=5))
        assert (upload.fields["key"], upload.fields["Content-Type"]) == (key, "application/pdf")
        assert upload.url.startswith(("http://", "https://"))
        assert datetime.now(UTC) < upload.expires_at <= datetime.now(UTC) + timedelta(minutes=5, seconds=5)
        assert store.head(key) is None  # signing stores nothing
