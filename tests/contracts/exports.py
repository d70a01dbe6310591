"""What every ExportStore keeps (shared/ports/): one export per source and format (an artifact version, a file
version, an operation), whoever claims it first; transitions as compare-and-set on `pending` and the generation
(a late worker of an earlier generation changes nothing); an export rendered again as its next generation, at
most MAX_GENERATIONS times; pending exports nobody touched, oldest first; and never another tenant's rows.

Each test works in tenants of its own, so the suite can run against one shared database."""

import hashlib
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.artifacts import SourceRef
from shared.domain.exports import (
    MAX_GENERATIONS,
    ExportFormat,
    ExportKind,
    ExportRecord,
    ExportState,
    NewExport,
    RenderedFile,
)
from shared.ports import ArtifactStore, ExportStore
from tests.contracts.artifacts import made
from tests.contracts.file_metadata import new_tenant

Stores = tuple[ArtifactStore, ExportStore]
RENDERED = RenderedFile(
    content=b"%PDF-1.7 rendered", format=ExportFormat.PDF, page_count=2, unsupported_characters=("☃",)
)


def conversion(
    tenant: str, *, source_version: uuid.UUID | None = None, fmt: ExportFormat = ExportFormat.PDF
) -> NewExport:
    return NewExport(
        tenant_id=tenant,
        export_id=uuid.uuid4(),
        collection_id="docs",
        kind=ExportKind.CONVERSION,
        format=fmt,
        source_file_id=uuid.uuid4(),
        source_version_id=source_version or uuid.uuid4(),
        created_by="ann",
    )


def operation(tenant: str, name: str = "merged") -> NewExport:
    normalised = {"op": "merge", "name": name, "collectionId": "docs"}
    return NewExport(
        tenant_id=tenant,
        export_id=uuid.uuid4(),
        collection_id="docs",
        kind=ExportKind.PDF,
        format=ExportFormat.PDF,
        operation=normalised,
        operation_hash=hashlib.sha256(name.encode()).hexdigest(),
        created_by="ann",
    )


def pending(store: ExportStore, tenant: str) -> ExportRecord:
    record, made_now = store.claim(conversion(tenant))
    assert made_now
    return record


def rendered(store: ExportStore, tenant: str) -> ExportRecord:
    record = pending(store, tenant)
    assert store.mark_rendered(tenant, record.export_id, generation=0, file_id=uuid.uuid4(), rendered=RENDERED)
    found = store.get(tenant, record.export_id)
    assert found is not None
    return found


class ExportStoreContract:
    @pytest.fixture
    def stores(self) -> Stores:
        raise NotImplementedError("a contract's subclass provides the implementation")

    def test_a_claim_makes_a_pending_export_once_per_source_and_format(self, stores: Stores) -> None:
        artifacts, store = stores
        tenant = new_tenant()
        artifact, _ = made(artifacts, tenant)
        new = NewExport(
            tenant_id=tenant,
            export_id=uuid.uuid4(),
            collection_id="docs",
            kind=ExportKind.ARTIFACT,
            format=ExportFormat.DOCX,
            artifact_id=artifact.artifact_id,
            version=1,
            created_by="ann",
            # Its provenance, kept as claimed (each file's metadata then).
            sources=(
                SourceRef(
                    file_id=uuid.uuid4(),
                    version_id=uuid.uuid4(),
                    chunk_ids=("c:0",),
                    metadata={"customer": "acme", "amount": 12.5, "tags": ["nda"]},
                    metadata_revision=3,
                ),
            ),
        )
        record, made_now = store.claim(new)
        assert made_now and record.model_dump(include=set(NewExport.model_fields)) == new.model_dump()
        assert (record.state, record.render_attempts, record.generation, record.file_id) == (
            ExportState.PENDING,
            0,
            0,
            None,
        )
        assert store.get(tenant, new.export_id) == record
        # A second claim of the same source and format, under another id: the first export, not a new one.
        again, made_now = store.claim(new.model_copy(update={"export_id": uuid.uuid4(), "created_by": "bob"}))
        assert (again, made_now) == (record, False)
        # Another format, or another version of the same artifact, is another export.
        assert store.claim(new.model_copy(update={"export_id": uuid.uuid4(), "format": ExportFormat.PDF}))[1]

    def test_an_export_of_an_artifact_that_does_not_exist_is_refused(self, stores: Stores) -> None:
        _, store = stores
        tenant = new_tenant()
        missing = NewExport(
            tenant_id=tenant,
            export_id=uuid.uuid4(),
            collection_id="docs",
            kind=ExportKind.ARTIFACT,
            format=ExportFormat.PDF,
            artifact_id=uuid.uuid4(),
            version=1,
            created_by="ann",
        )
        with pytest.raises(Exception, match=r"(?i)foreign key|does not exist"):  # the adapter's is psycopg's
            store.claim(missing)
        assert store.get(tenant, missing.export_id) is None

    def test_conversions_and_operations_are_one_export_per_source_too(self, stores: Stores) -> None:
        _, store = stores
        tenant = new_tenant()
        first, made_now = store.claim(conversion(tenant))
        assert made_now
        assert store.claim(conversion(tenant, source_version=first.source_version_id)) == (first, False)
        assert store.claim(conversion(tenant, source_version=first.source_version_id, fmt=ExportFormat.HTML))[1]
        merged, made_now = store.claim(operation(tenant))
        assert made_now and merged.operation == {"op": "merge", "name": "merged", "collectionId": "docs"}
        assert store.claim(operation(tenant)) == (merged, False)
        assert store.claim(operation(tenant, "another"))[1]

    def test_an_attempt_is_counted_only_while_pending(self, stores: Stores) -> None:
        _, store = stores
        tenant = new_tenant()
        record = pending(store, tenant)
        first = store.begin_attempt(tenant, record.export_id)
        second = store.begin_attempt(tenant, record.export_id)
        assert first is not None and second is not None
        assert (first.render_attempts, second.render_attempts) == (1, 2)
        assert second.updated_at >= record.updated_at
        assert store.mark_failed(tenant, record.export_id, generation=0, reason="cannot")
        assert store.begin_attempt(tenant, record.export_id) is None
        assert store.begin_attempt(tenant, uuid.uuid4()) is None

    def test_rendered_keeps_the_file_and_what_the_render_said(self, stores: Stores) -> None:
        _, store = stores
        tenant = new_tenant()
        record = pending(store, tenant)
        file_id = uuid.uuid4()
        assert store.mark_rendered(tenant, record.export_id, generation=0, file_id=file_id, rendered=RENDERED)
        found = store.get(tenant, record.export_id)
        assert found is not None
        assert (found.state, found.file_id, found.page_count, found.byte_size, found.unsupported_characters) == (
            ExportState.RENDERED,
            file_id,
            2,
            len(RENDERED.content),
            ("☃",),
        )
        assert found.rendered_at is not None and found.failure_reason is None
        # Decided once: a duplicate worker changes nothing.
        assert not store.mark_rendered(tenant, record.export_id, generation=0, file_id=uuid.uuid4(), rendered=RENDERED)
        assert not store.mark_failed(tenant, record.export_id, generation=0, reason="late")
        assert store.get(tenant, record.export_id) == found

    def test_failed_keeps_its_sentence_cut_to_two_thousand_characters(self, stores: Stores) -> None:
        _, store = stores
        tenant = new_tenant()
        record = pending(store, tenant)
        assert store.mark_failed(tenant, record.export_id, generation=0, reason="x" * 2500, retryable=True)
        found = store.get(tenant, record.export_id)
        assert found is not None
        assert (found.state, found.failure_reason, found.failure_retryable, found.file_id) == (
            ExportState.FAILED,
            "x" * 2000,
            True,
            None,
        )

    def test_a_rendered_or_retryable_export_reopens_as_its_next_generation_once(self, stores: Stores) -> None:
        _, store = stores
        tenant = new_tenant()
        record = rendered(store, tenant)
        reopened = store.reopen(tenant, record.export_id, generation=0)
        assert reopened is not None
        assert (reopened.state, reopened.generation, reopened.render_attempts, reopened.file_id) == (
            ExportState.PENDING,
            1,
            0,
            None,
        )
        assert (reopened.page_count, reopened.byte_size, reopened.rendered_at, reopened.unsupported_characters) == (
            None,
            None,
            None,
            (),
        )
        assert reopened.output_file_id != record.output_file_id
        # A second request holding generation 0 finds it moved on; a late worker of generation 0 changes nothing.
        assert store.reopen(tenant, record.export_id, generation=0) is None
        assert not store.mark_rendered(tenant, record.export_id, generation=0, file_id=uuid.uuid4(), rendered=RENDERED)
        assert not store.mark_failed(tenant, record.export_id, generation=0, reason="late")
        assert store.reopen(tenant, record.export_id, generation=1) is None  # pending: nothing to render again
        assert store.mark_failed(tenant, record.export_id, generation=1, reason="timed out", retryable=True)
        again = store.reopen(tenant, record.export_id, generation=1)
        assert again is not None and (again.generation, again.failure_reason, again.failure_retryable) == (
            2,
            None,
            False,
        )

    def test_a_failure_of_the_content_stays_failed_and_generations_are_bounded(self, stores: Stores) -> None:
        _, store = stores
        tenant = new_tenant()
        failed = pending(store, tenant)
        assert store.mark_failed(tenant, failed.export_id, generation=0, reason="too many pages")
        assert store.reopen(tenant, failed.export_id, generation=0) is None
        record = pending(store, tenant)
        for generation in range(MAX_GENERATIONS - 1):
            assert store.mark_rendered(
                tenant, record.export_id, generation=generation, file_id=uuid.uuid4(), rendered=RENDERED
            )
            reopened = store.reopen(tenant, record.export_id, generation=generation)
            assert reopened is not None and reopened.generation == generation + 1
        last = MAX_GENERATIONS - 1
        assert store.mark_rendered(tenant, record.export_id, generation=last, file_id=uuid.uuid4(), rendered=RENDERED)
        assert store.reopen(tenant, record.export_id, generation=last) is None

    def test_stalled_lists_pending_exports_untouched_since_oldest_first(self, stores: Stores) -> None:
        _, store = stores
        tenant = new_tenant()
        before = datetime.now(UTC) - timedelta(minutes=1)
        first, second = pending(store, tenant), pending(store, tenant)
        done = rendered(store, tenant)
        later = datetime.now(UTC) + timedelta(minutes=1)
        assert [r.export_id for r in store.stalled(tenant, updated_before=later)] == [first.export_id, second.export_id]
        assert [r.export_id for r in store.stalled(tenant, updated_before=later, limit=1)] == [first.export_id]
        assert store.stalled(tenant, updated_before=before) == []
        # Touching the first (an attempt begun) puts it after the second.
        assert store.begin_attempt(tenant, first.export_id) is not None
        assert [r.export_id for r in store.stalled(tenant, updated_before=later)] == [second.export_id, first.export_id]
        assert done.export_id not in {r.export_id for r in store.stalled(tenant, updated_before=later)}

    def test_one_tenant_never_reads_or_changes_anothers_exports(self, stores: Stores) -> None:
        _, store = stores
        mine, theirs = new_tenant(), new_tenant()
        record = pending(store, theirs)
        later = datetime.now(UTC) + timedelta(minutes=1)
        assert store.get(mine, record.export_id) is None
        assert store.begin_attempt(mine, record.export_id) is None
        assert not store.mark_rendered(mine, record.export_id, generation=0, file_id=uuid.uuid4(), rendered=RENDERED)
        assert not store.mark_failed(mine, record.export_id, generation=0, reason="no")
        assert store.stalled(mine, updated_before=later) == []
        # The same source claimed by another tenant is that tenant's own export.
        same = conversion(mine, source_version=record.source_version_id)
        assert store.claim(same)[1]
        assert store.get(theirs, record.export_id) == record
