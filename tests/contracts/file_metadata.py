"""What every FileMetadataStore keeps (shared/ports/: FileCatalog, ProcessingAttempts, ReconciliationQueries):
the upload order's compare-and-set transitions, one processing attempt at a time, keyset pages, tenant scoping.

Each test works in tenants of its own, so the suite can run against one shared database."""

import uuid
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from shared.domain.errors import NotFound
from shared.domain.files import (
    MAX_STALLED_RETRIES,
    MAX_TIMEOUT_RETRIES,
    ExtractionSummary,
    FailureReason,
    MalwareScan,
    NewVersion,
    OcrState,
    ProcessingState,
    Recognition,
    SameBytes,
    VersionState,
)
from shared.domain.uploads import storage_key
from shared.ports import FileMetadataStore

LATER = timedelta(hours=1)


def new_tenant() -> str:
    return f"c{uuid.uuid4().hex[:12]}"


def upload(
    store: FileMetadataStore,
    tenant: str,
    *,
    collection: str = "docs",
    filename: str = "report.pdf",
    file_id: UUID | None = None,
    export_id: UUID | None = None,
) -> NewVersion:
    """A pending version (and its file, unless `file_id` names an existing one)."""
    existing = file_id is not None
    file_id = file_id or uuid.uuid4()
    version_id = uuid.uuid4()
    new = NewVersion(
        tenant_id=tenant,
        file_id=file_id,
        version_id=version_id,
        collection_id=collection,
        filename=filename,
        media_type="application/pdf",
        declared_byte_size=100,
        storage_key=storage_key(tenant, file_id, version_id),
        created_by="alice",
        export_id=export_id,
    )
    store.create_version(new, new_file=not existing)
    return new


def stored(store: FileMetadataStore, tenant: str, **kwargs: object) -> NewVersion:
    new = upload(store, tenant, **kwargs)  # type: ignore[arg-type]
    assert store.mark_stored(tenant, new.version_id, byte_size=90, storage_version_id="object-1")
    return new


SAME = "ab" * 32  # a SHA-256 in hex


def hashed(store: FileMetadataStore, tenant: str, sha256: str, **kwargs: object) -> NewVersion:
    """A stored version whose bytes' hash its first attempt recorded."""
    new = stored(store, tenant, **kwargs)
    attempt = store.queue_processing(tenant, new.version_id, stale_before=datetime.now(UTC) - LATER)
    assert attempt is not None and store.record_content_hash(tenant, new.version_id, sha256, attempt=attempt)
    return new


def claimed(store: FileMetadataStore, tenant: str) -> tuple[NewVersion, int]:
    """A stored version whose first attempt is extracting."""
    new = stored(store, tenant)
    attempt = store.queue_processing(tenant, new.version_id, stale_before=datetime.now(UTC) - LATER)
    assert attempt == 1
    assert store.move_processing(
        tenant, new.version_id, attempt=attempt, to=ProcessingState.EXTRACTING, expected=[ProcessingState.QUEUED]
    )
    return new, attempt


def summary(key: str = "derived/doc.json") -> ExtractionSummary:
    return ExtractionSummary(
        page_count=3,
        block_count=12,
        pages_without_text=(2,),
        warnings=("a warning",),
        truncated=False,
        document_key=key,
        document_version_id="doc-1",
        recognition=Recognition(ocr_state=OcrState.UNAVAILABLE, ocr_detail="no engine"),
    )


def processing(store: FileMetadataStore, tenant: str, version_id: UUID) -> ProcessingState:
    found = store.find_version(tenant, version_id)
    assert found is not None
    return found[1].processing_state


def future() -> datetime:
    return datetime.now(UTC) + LATER


class FileMetadataContract:
    @pytest.fixture
    def store(self) -> FileMetadataStore:
        raise NotImplementedError("a contract's subclass provides the implementation")

    # --- FileCatalog ---------------------------------------------------------------------------------------

    def test_a_created_version_is_pending_and_found_only_by_its_tenant(self, store: FileMetadataStore) -> None:
        tenant, other = new_tenant(), new_tenant()
        new = upload(store, tenant)
        found = store.find_version(tenant, new.version_id)
        assert found is not None
        record, version = found
        assert (record.file_id, record.collection_id, record.filename) == (new.file_id, "docs", "report.pdf")
        assert (version.state, version.processing_state) == (VersionState.PENDING, ProcessingState.NOT_STARTED)
        assert (version.storage_key, version.declared_byte_size, version.byte_size) == (new.storage_key, 100, None)
        assert store.get_file(tenant, new.file_id) == record
        assert store.find_version(other, new.version_id) is None
        assert store.get_file(other, new.file_id) is None

    def test_an_exports_version_skips_processing_from_the_start(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new = upload(store, tenant, export_id=uuid.uuid4())
        assert processing(store, tenant, new.version_id) is ProcessingState.SKIPPED

    def test_a_new_version_is_listed_first_and_a_deleted_file_gets_none(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        first = stored(store, tenant)
        second = upload(store, tenant, file_id=first.file_id, filename="report-v2.pdf")
        record = store.get_file(tenant, first.file_id)
        assert record is not None
        assert [v.version_id for v in record.versions] == [second.version_id, first.version_id]
        assert record.current.version_id == first.version_id  # the newest *stored* one
        store.begin_delete_file(tenant, first.file_id)
        with pytest.raises(NotFound):
            upload(store, tenant, file_id=first.file_id)

    def test_mark_stored_is_a_compare_and_set_from_pending(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new = upload(store, tenant, filename="draft.pdf")
        assert not store.mark_stored(new_tenant(), new.version_id, byte_size=1, storage_version_id="x")
        assert store.mark_stored(tenant, new.version_id, byte_size=90, storage_version_id="object-1")
        assert not store.mark_stored(tenant, new.version_id, byte_size=91, storage_version_id="object-2")
        assert not store.mark_rejected(tenant, new.version_id, reason="late", byte_size=1, storage_version_id=None)
        found = store.find_version(tenant, new.version_id)
        assert found is not None
        record, version = found
        assert (version.state, version.byte_size, version.storage_version_id) == (VersionState.STORED, 90, "object-1")
        assert version.stored_at is not None
        assert record.filename == "draft.pdf"

    def test_the_file_takes_the_name_of_its_newest_stored_version(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        first = stored(store, tenant, filename="old.pdf")
        second = upload(store, tenant, file_id=first.file_id, filename="new.pdf")
        assert store.mark_stored(tenant, second.version_id, byte_size=5, storage_version_id="o2")
        record = store.get_file(tenant, first.file_id)
        assert record is not None and record.filename == "new.pdf"

    def test_mark_rejected_keeps_the_reason_and_only_from_pending(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new = upload(store, tenant)
        assert store.mark_rejected(
            tenant, new.version_id, reason="it is not a PDF", byte_size=7, storage_version_id="object-9"
        )
        assert not store.mark_stored(tenant, new.version_id, byte_size=7, storage_version_id="object-9")
        found = store.find_version(tenant, new.version_id)
        assert found is not None
        version = found[1]
        assert (version.state, version.rejection_reason, version.byte_size) == (
            VersionState.REJECTED,
            "it is not a PDF",
            7,
        )

    def test_a_malware_verdict_is_kept_on_its_object_and_one_that_rejects_ends_the_version(
        self, store: FileMetadataStore
    ) -> None:
        tenant = new_tenant()
        clean = stored(store, tenant)
        # Another object under the key (a second post) is not this version's: nothing is recorded.
        assert (
            store.record_malware_scan(
                tenant, clean.version_id, MalwareScan.NO_THREATS_FOUND, storage_version_id="object-2"
            )
            is None
        )
        recorded = store.record_malware_scan(
            tenant, clean.version_id, MalwareScan.NO_THREATS_FOUND, storage_version_id="object-1"
        )
        assert recorded is not None
        assert (recorded.state, recorded.malware_scan) == (VersionState.STORED, MalwareScan.NO_THREATS_FOUND)
        assert recorded.malware_scan_object == "object-1" and recorded.found_clean
        infected = stored(store, tenant)
        rejected = store.record_malware_scan(
            tenant, infected.version_id, MalwareScan.THREATS_FOUND, storage_version_id="object-1"
        )
        assert rejected is not None and rejected.state is VersionState.REJECTED
        assert rejected.rejection_reason == MalwareScan.THREATS_FOUND.rejection()
        # Decided: a later verdict changes nothing, and another tenant cannot record one.
        assert (
            store.record_malware_scan(
                tenant, infected.version_id, MalwareScan.NO_THREATS_FOUND, storage_version_id=None
            )
            is None
        )
        assert (
            store.record_malware_scan(
                new_tenant(), clean.version_id, MalwareScan.THREATS_FOUND, storage_version_id=None
            )
            is None
        )
        # A verdict before the bytes are stored is kept on the pending version.
        early = upload(store, tenant)
        pending = store.record_malware_scan(
            tenant, early.version_id, MalwareScan.NO_THREATS_FOUND, storage_version_id="object-1"
        )
        assert pending is not None and (pending.state, pending.malware_scan) == (
            VersionState.PENDING,
            MalwareScan.NO_THREATS_FOUND,
        )
        # Another object stored under the key afterwards is not the one found clean.
        assert store.mark_stored(tenant, early.version_id, byte_size=90, storage_version_id="object-2")
        found = store.find_version(tenant, early.version_id)
        assert found is not None and not found[1].found_clean

    def test_a_new_version_for_the_collection_the_file_left_is_refused(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        first = stored(store, tenant, collection="drafts")
        assert store.move_file(tenant, first.file_id, from_collection="drafts", to_collection="board")
        # A writer of `drafts` checked before the move: its new version must not land in `board`.
        with pytest.raises(NotFound):
            upload(store, tenant, collection="drafts", file_id=first.file_id)
        upload(store, tenant, collection="board", file_id=first.file_id)

    def test_a_reindex_queues_an_indexed_version_only_and_only_once(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new, attempt = claimed(store, tenant)
        # Not indexed yet (extracting): nothing to re-index.
        assert store.queue_reindex(tenant, new.version_id) is None
        for to, expected in (
            (ProcessingState.EXTRACTED, ProcessingState.EXTRACTING),
            (ProcessingState.INDEXING, ProcessingState.EXTRACTED),
            (ProcessingState.INDEXED, ProcessingState.INDEXING),
        ):
            assert store.move_processing(tenant, new.version_id, attempt=attempt, to=to, expected=[expected])
        assert store.queue_reindex(tenant, new.version_id) == attempt + 1
        assert processing(store, tenant, new.version_id) is ProcessingState.QUEUED
        assert store.queue_reindex(tenant, new.version_id) is None
        assert store.queue_reindex(new_tenant(), new.version_id) is None

    def test_files_are_listed_newest_first_by_entitled_collection_page_by_page(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        older = upload(store, tenant)
        newer = upload(store, tenant)
        secret = upload(store, tenant, collection="secret")
        upload(store, new_tenant())  # another tenant's file in the same collection
        page, more = store.list_files(tenant, frozenset({"docs"}), collection_id=None, limit=1, after=None)
        assert [r.file_id for r in page] == [newer.file_id] and more
        rest, more = store.list_files(
            tenant,
            frozenset({"docs"}),
            collection_id=None,
            limit=5,
            after=(page[-1].created_at, page[-1].file_id),
        )
        assert [r.file_id for r in rest] == [older.file_id] and not more
        everything, _ = store.list_files(
            tenant, frozenset({"docs", "secret"}), collection_id=None, limit=10, after=None
        )
        assert {r.file_id for r in everything} == {older.file_id, newer.file_id, secret.file_id}
        only, _ = store.list_files(tenant, frozenset({"docs"}), collection_id="secret", limit=10, after=None)
        assert only == []  # asking for a collection one is not entitled to lists nothing

    def test_deleting_a_file_moves_every_live_version_and_hides_it(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        first = stored(store, tenant)
        upload(store, tenant, file_id=first.file_id)
        assert store.begin_delete_file(new_tenant(), first.file_id) == 0
        assert store.begin_delete_file(tenant, first.file_id) == 2
        assert store.get_file(tenant, first.file_id) is None
        gone = store.get_file(tenant, first.file_id, include_gone=True)
        assert gone is not None and {v.state for v in gone.versions} == {VersionState.DELETING}
        listed, _ = store.list_files(tenant, frozenset({"docs"}), collection_id=None, limit=10, after=None)
        assert listed == []
        assert store.begin_delete_file(tenant, first.file_id) == 0
        assert store.mark_deleted(tenant, first.version_id)
        assert not store.mark_deleted(tenant, first.version_id)
        found = store.find_version(tenant, first.version_id)
        assert found is not None and found[1].state is VersionState.DELETED

    def test_mark_deleted_needs_a_deletion_to_have_begun(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new = stored(store, tenant)
        assert not store.mark_deleted(tenant, new.version_id)

    def test_deleting_a_collection_takes_pending_uploads_and_nothing_else(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        kept = stored(store, tenant, collection="keep")
        stored(store, tenant)
        upload(store, tenant)
        assert store.begin_delete_collection(tenant, "docs") == 2
        listed, _ = store.list_files(tenant, frozenset({"docs", "keep"}), collection_id=None, limit=10, after=None)
        assert [r.file_id for r in listed] == [kept.file_id]

    def test_a_moved_file_is_listed_and_read_in_its_new_collection_only_with_every_version(
        self, store: FileMetadataStore
    ) -> None:
        tenant = new_tenant()
        first = stored(store, tenant)
        second = upload(store, tenant, file_id=first.file_id)
        assert store.move_file(tenant, first.file_id, from_collection="docs", to_collection="board")
        moved = store.get_file(tenant, first.file_id)
        assert moved is not None and moved.collection_id == "board"
        assert [v.version_id for v in moved.versions] == [second.version_id, first.version_id]
        assert store.list_files(tenant, frozenset({"docs"}), collection_id=None, limit=10, after=None) == ([], False)
        listed, _ = store.list_files(tenant, frozenset({"board"}), collection_id=None, limit=10, after=None)
        assert [r.file_id for r in listed] == [first.file_id]
        found = store.find_version(tenant, first.version_id)
        assert found is not None and found[0].collection_id == "board"

    def test_a_move_is_a_compare_and_set_from_the_collection_the_caller_saw(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new = stored(store, tenant)
        # Another move came first: this one, made against "elsewhere", changes nothing.
        assert not store.move_file(tenant, new.file_id, from_collection="elsewhere", to_collection="board")
        assert not store.move_file(new_tenant(), new.file_id, from_collection="docs", to_collection="board")
        assert not store.move_file(tenant, uuid.uuid4(), from_collection="docs", to_collection="board")
        record = store.get_file(tenant, new.file_id)
        assert record is not None and record.collection_id == "docs"
        # To the collection it is in: nothing to do, and said so as a success (a retried move is safe).
        assert store.move_file(tenant, new.file_id, from_collection="docs", to_collection="docs")
        assert store.begin_delete_file(tenant, new.file_id) == 1
        assert not store.move_file(tenant, new.file_id, from_collection="docs", to_collection="board")

    # --- ProcessingAttempts -----------------------------------------------------------------------------------

    def test_queueing_hands_out_one_attempt_at_a_time(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        pending = upload(store, tenant)
        assert store.queue_processing(tenant, pending.version_id, stale_before=future()) is None  # no bytes yet
        new = stored(store, tenant)
        fresh = datetime.now(UTC) - LATER
        assert store.queue_processing(new_tenant(), new.version_id, stale_before=fresh) is None
        assert store.queue_processing(tenant, new.version_id, stale_before=fresh) == 1
        assert store.queue_processing(tenant, new.version_id, stale_before=fresh) is None  # under way, not silent
        found = store.find_version(tenant, new.version_id)
        assert found is not None
        version = found[1]
        assert (version.processing_state, version.processing_attempt, version.processing_retries) == (
            ProcessingState.QUEUED,
            1,
            0,
        )
        assert version.processing_requested_at is not None
        # Silent past the threshold: a new attempt, counted as a retry.
        assert store.queue_processing(tenant, new.version_id, stale_before=future()) == 2
        found = store.find_version(tenant, new.version_id)
        assert found is not None and found[1].processing_retries == 1

    def test_a_released_attempt_can_be_queued_again_without_spending_a_retry(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new = stored(store, tenant)
        fresh = datetime.now(UTC) - LATER
        attempt = store.queue_processing(tenant, new.version_id, stale_before=fresh)
        assert attempt == 1
        store.release_processing(tenant, new.version_id, attempt=attempt + 1)  # not the current attempt
        assert processing(store, tenant, new.version_id) is ProcessingState.QUEUED
        store.release_processing(tenant, new.version_id, attempt=attempt)
        found = store.find_version(tenant, new.version_id)
        assert found is not None
        assert (found[1].processing_state, found[1].processing_requested_at) == (ProcessingState.NOT_STARTED, None)
        assert store.queue_processing(tenant, new.version_id, stale_before=fresh) == 2
        found = store.find_version(tenant, new.version_id)
        assert found is not None and found[1].processing_retries == 0

    def test_moving_processing_is_a_compare_and_set_for_the_current_attempt(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new = stored(store, tenant)
        assert store.queue_processing(tenant, new.version_id, stale_before=datetime.now(UTC) - LATER) == 1
        assert store.queue_processing(tenant, new.version_id, stale_before=future()) == 2  # supersedes attempt 1
        extracting = ProcessingState.EXTRACTING
        queued = [ProcessingState.QUEUED]
        assert not store.move_processing(tenant, new.version_id, attempt=1, to=extracting, expected=queued)
        assert not store.move_processing(new_tenant(), new.version_id, attempt=2, to=extracting, expected=queued)
        assert store.move_processing(tenant, new.version_id, attempt=2, to=extracting, expected=queued)
        assert not store.move_processing(tenant, new.version_id, attempt=2, to=extracting, expected=queued)
        assert processing(store, tenant, new.version_id) is extracting

    def test_a_heartbeat_holds_only_for_the_current_attempt_in_its_state(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new, attempt = claimed(store, tenant)
        before = store.find_version(tenant, new.version_id)
        assert before is not None
        assert store.heartbeat(tenant, new.version_id, attempt=attempt, state=ProcessingState.EXTRACTING)
        after = store.find_version(tenant, new.version_id)
        assert after is not None and after[1].updated_at > before[1].updated_at
        assert after[1].processing_state is ProcessingState.EXTRACTING
        assert not store.heartbeat(tenant, new.version_id, attempt=attempt, state=ProcessingState.INDEXING)
        assert not store.heartbeat(tenant, new.version_id, attempt=attempt + 1, state=ProcessingState.EXTRACTING)
        assert not store.heartbeat(new_tenant(), new.version_id, attempt=attempt, state=ProcessingState.EXTRACTING)

    def test_an_extraction_is_recorded_by_its_attempt_only(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new, attempt = claimed(store, tenant)
        assert not store.record_extraction(tenant, new.version_id, summary(), attempt=attempt + 1)
        assert store.record_extraction(tenant, new.version_id, summary(), attempt=attempt)
        found = store.find_version(tenant, new.version_id)
        assert found is not None
        version = found[1]
        assert version.processing_state is ProcessingState.EXTRACTED
        assert (version.page_count, version.block_count, version.pages_without_text) == (3, 12, (2,))
        assert (version.document_key, version.document_version_id) == ("derived/doc.json", "doc-1")
        assert version.extraction_warnings == ("a warning",)
        assert (version.ocr_state, version.ocr_detail) == (OcrState.UNAVAILABLE, "no engine")
        assert not store.record_extraction(tenant, new.version_id, summary(), attempt=attempt)  # not extracting

    def test_the_bytes_hash_is_recorded_by_the_current_attempt_only(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new, attempt = claimed(store, tenant)
        assert not store.record_content_hash(tenant, new.version_id, SAME, attempt=attempt + 1)
        assert not store.record_content_hash(new_tenant(), new.version_id, SAME, attempt=attempt)
        assert store.record_content_hash(tenant, new.version_id, SAME, attempt=attempt)
        found = store.find_version(tenant, new.version_id)
        assert found is not None
        assert (found[1].content_sha256, found[1].processing_state) == (SAME, ProcessingState.EXTRACTING)
        pending = upload(store, tenant)
        assert not store.record_content_hash(tenant, pending.version_id, SAME, attempt=0)  # no bytes stored

    def test_the_same_bytes_name_the_earliest_stored_copy_in_the_collection(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        first = hashed(store, tenant, SAME, filename="first.pdf")
        hashed(store, tenant, SAME, collection="board")
        second = hashed(store, tenant, SAME, filename="second.pdf")
        other = hashed(store, tenant, "cd" * 32)
        assert store.same_bytes(tenant, "docs", SAME) == SameBytes(
            file_id=first.file_id, version_id=first.version_id, filename="first.pdf"
        )
        assert store.same_bytes(tenant, "hr", SAME) is None
        assert store.same_bytes(new_tenant(), "docs", SAME) is None

        def duplicate_of(new: NewVersion) -> SameBytes | None:
            record = store.get_file(tenant, new.file_id)
            assert record is not None
            return record.current.duplicate_of

        # Each version names the earliest one before it in its collection, never a later one nor another's bytes.
        assert duplicate_of(first) is None and duplicate_of(other) is None
        assert duplicate_of(second) == store.same_bytes(tenant, "docs", SAME)
        listed, _ = store.list_files(tenant, frozenset({"docs"}), collection_id=None, limit=10, after=None)
        assert {record.file_id: record.current.duplicate_of for record in listed}[second.file_id] == duplicate_of(
            second
        )
        # Once the first is being deleted it is not named any more.
        assert store.begin_delete_file(tenant, first.file_id) == 1
        assert duplicate_of(second) is None
        assert store.same_bytes(tenant, "docs", SAME) == SameBytes(
            file_id=second.file_id, version_id=second.version_id, filename="second.pdf"
        )

    def test_an_extraction_awaiting_recognition_is_recognizing_then_extracted(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new, attempt = claimed(store, tenant)
        layer = summary("derived/text-layer.json")
        assert store.record_extraction(tenant, new.version_id, layer, attempt=attempt, awaiting_recognition=True)
        assert processing(store, tenant, new.version_id) is ProcessingState.RECOGNIZING
        assert store.record_extraction(tenant, new.version_id, summary(), attempt=attempt)
        found = store.find_version(tenant, new.version_id)
        assert found is not None
        assert (found[1].processing_state, found[1].document_key) == (ProcessingState.EXTRACTED, "derived/doc.json")

    def test_a_failure_ends_the_attempt_with_its_reason(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new, attempt = claimed(store, tenant)
        reason = FailureReason.ENCRYPTED
        assert not store.record_failure(tenant, new.version_id, reason=reason, detail="locked", attempt=attempt + 1)
        assert store.record_failure(tenant, new.version_id, reason=reason, detail="locked", attempt=attempt)
        found = store.find_version(tenant, new.version_id)
        assert found is not None
        version = found[1]
        assert (version.processing_state, version.failure_reason, version.failure_detail) == (
            ProcessingState.FAILED,
            reason,
            "locked",
        )
        # Over: neither a second failure nor an interruption rewrites it.
        assert not store.record_failure(tenant, new.version_id, reason=reason, detail="again", attempt=attempt)
        assert not store.record_interruption(tenant, new.version_id, detail="late", attempt=attempt)

    def test_a_timed_out_extraction_is_requeued_a_bounded_number_of_times_and_no_other_failure_is(
        self, store: FileMetadataStore
    ) -> None:
        tenant = new_tenant()
        new, attempt = claimed(store, tenant)
        for _ in range(MAX_TIMEOUT_RETRIES):
            assert store.record_failure(
                tenant, new.version_id, reason=FailureReason.TIMED_OUT, detail="slow", attempt=attempt
            )
            # A timeout may go differently next time: listed for the sweep, and queued again (not stale-gated).
            assert new.version_id in {
                v.version_id for _, v in store.versions_awaiting_processing(tenant, cutoff=future())
            }
            requeued = store.queue_processing(tenant, new.version_id, stale_before=datetime.now(UTC) - LATER)
            assert requeued == attempt + 1
            attempt = requeued
            assert store.move_processing(
                tenant,
                new.version_id,
                attempt=attempt,
                to=ProcessingState.EXTRACTING,
                expected=[ProcessingState.QUEUED],
            )
        # Its timeouts spent, it stays failed.
        assert store.record_failure(
            tenant, new.version_id, reason=FailureReason.TIMED_OUT, detail="slow", attempt=attempt
        )
        assert store.queue_processing(tenant, new.version_id, stale_before=future()) is None
        assert store.versions_awaiting_processing(tenant, cutoff=future()) == []
        # Any other failure is the document's: never requeued, never listed.
        other, other_attempt = claimed(store, tenant)
        assert store.record_failure(
            tenant, other.version_id, reason=FailureReason.ENCRYPTED, detail="locked", attempt=other_attempt
        )
        assert store.queue_processing(tenant, other.version_id, stale_before=future()) is None
        assert other.version_id not in {
            v.version_id for _, v in store.versions_awaiting_processing(tenant, cutoff=future())
        }

    def test_an_interruption_names_what_failed_and_the_sweep_may_requeue_it(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new, attempt = claimed(store, tenant)
        detail = "the extract step failed: ConnectionError: gone"
        assert not store.record_interruption(tenant, new.version_id, detail=detail, attempt=attempt + 1)
        assert store.record_interruption(tenant, new.version_id, detail=detail, attempt=attempt)
        found = store.find_version(tenant, new.version_id)
        assert found is not None
        assert (found[1].processing_state, found[1].failure_detail) == (ProcessingState.INTERRUPTED, detail)
        assert not store.record_interruption(tenant, new.version_id, detail=detail, attempt=attempt)
        assert store.queue_processing(tenant, new.version_id, stale_before=future()) == attempt + 1

    def test_a_rescan_queues_a_finished_version_and_starts_the_count_again(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new, attempt = claimed(store, tenant)
        assert store.queue_rescan(tenant, new.version_id) is None  # still under way
        assert store.record_failure(
            tenant, new.version_id, reason=FailureReason.OCR_FAILED, detail="unreadable", attempt=attempt
        )
        assert store.queue_rescan(new_tenant(), new.version_id) is None
        assert store.queue_rescan(tenant, new.version_id) == attempt + 1
        found = store.find_version(tenant, new.version_id)
        assert found is not None
        version = found[1]
        assert (version.processing_state, version.processing_retries, version.failure_reason) == (
            ProcessingState.QUEUED,
            0,
            None,
        )

    def test_the_deleting_versions_with_bytes_are_those_stored_of_the_file_or_collection(
        self, store: FileMetadataStore
    ) -> None:
        tenant = new_tenant()
        first = stored(store, tenant, collection="hr")
        second = stored(store, tenant, collection="hr", file_id=first.file_id)
        never_landed = upload(store, tenant, collection="hr")
        elsewhere = stored(store, tenant, collection="docs")
        assert store.deleting_versions_with_bytes(tenant, collection_id="hr", limit=10) == ([], 0)
        assert store.begin_delete_collection(tenant, "hr") == 3
        assert store.begin_delete_file(tenant, elsewhere.file_id) == 1
        listed, total = store.deleting_versions_with_bytes(tenant, collection_id="hr", limit=10)
        assert total == 2 and {v.version_id for v in listed} == {first.version_id, second.version_id}
        assert never_landed.version_id not in {v.version_id for v in listed}  # no bytes: no link to end
        assert all(v.storage_version_id == "object-1" for v in listed)
        bounded, total = store.deleting_versions_with_bytes(tenant, file_id=first.file_id, limit=1)
        assert (len(bounded), total) == (1, 2)
        assert store.deleting_versions_with_bytes(new_tenant(), collection_id="hr", limit=10) == ([], 0)
        assert [
            v.version_id for v in store.deleting_versions_with_bytes(tenant, collection_id="docs", limit=10)[0]
        ] == [elsewhere.version_id]

    # --- ReconciliationQueries ------------------------------------------------------------------------------

    def test_every_tenant_that_uploaded_is_listed(self, store: FileMetadataStore) -> None:
        first, second = new_tenant(), new_tenant()
        upload(store, first)
        upload(store, second)
        listed = store.tenant_ids()
        assert {first, second} <= set(listed)
        assert listed == sorted(listed)

    def test_versions_in_states_are_paged_oldest_first_by_tenant(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        pending = [upload(store, tenant) for _ in range(3)]
        stored(store, tenant)
        upload(store, new_tenant())
        walked = []
        after = None
        while page := store.versions_in_states(
            tenant, [VersionState.PENDING], updated_before=future(), after=after, limit=2
        ):
            assert len(page) <= 2
            walked += page
            after = (page[-1][1].updated_at, page[-1][1].version_id)
        assert [(file_id, v.version_id) for file_id, v in walked] == [(p.file_id, p.version_id) for p in pending]
        long_ago = datetime.now(UTC) - LATER
        assert store.versions_in_states(tenant, [VersionState.PENDING], updated_before=long_ago) == []

    def test_stored_versions_never_asked_for_await_processing(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        waiting = stored(store, tenant)
        upload(store, tenant)  # pending: not yet
        claimed(store, tenant)  # asked for just now
        awaiting = store.versions_awaiting_processing(tenant, cutoff=datetime.now(UTC) - LATER)
        assert awaiting == []  # nothing is older than the cutoff
        awaiting = store.versions_awaiting_processing(tenant, cutoff=future())
        assert waiting.version_id in {v.version_id for _, v in awaiting}
        assert all(v.state is VersionState.STORED for _, v in awaiting)

    def test_a_version_whose_retries_are_spent_is_given_up_not_awaiting(self, store: FileMetadataStore) -> None:
        tenant = new_tenant()
        new, _ = claimed(store, tenant)
        for _ in range(MAX_STALLED_RETRIES):
            assert store.queue_processing(tenant, new.version_id, stale_before=future()) is not None
        assert store.queue_processing(tenant, new.version_id, stale_before=future()) is None
        given_up = store.versions_given_up(tenant, cutoff=future())
        assert [v.version_id for _, v in given_up] == [new.version_id]
        assert given_up[0][1].processing_retries == MAX_STALLED_RETRIES
        assert store.versions_awaiting_processing(tenant, cutoff=future()) == []
        assert store.versions_given_up(new_tenant(), cutoff=future()) == []
