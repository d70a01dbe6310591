"""What every ReplacementStore keeps (shared/ports/): a replacement made pending, exactly as asked; a decision
recorded only from pending (of two decisions exactly one is recorded), an approval with its planned version, an
expiry with no decider; and never another tenant's rows. A replacement replaces a file, so each test uploads
one through the file store first.

Each test works in tenants of its own, so the suite can run against one shared database."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.proposals import NewReplacement, ReplacementRecord, ReplacementState
from shared.ports import FileMetadataStore, ReplacementStore
from tests.contracts.file_metadata import new_tenant, stored

Stores = tuple[FileMetadataStore, ReplacementStore]
EXPIRES = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def proposed(stores: Stores, tenant: str) -> ReplacementRecord:
    files, replacements = stores
    base = stored(files, tenant)
    replacement_id = uuid.uuid4()
    new = NewReplacement(
        tenant_id=tenant,
        replacement_id=replacement_id,
        file_id=base.file_id,
        collection_id=base.collection_id,
        base_version_id=base.version_id,
        filename=base.filename,
        media_type=base.media_type,
        staged_key=f"derived/tenants/{tenant}/replacements/{replacement_id}",
        content_hash="ab" * 32,
        byte_size=1234,
        created_by="ann",
        expires_at=EXPIRES,
    )
    record = replacements.create(new)
    assert record.model_dump(include=set(NewReplacement.model_fields)) == new.model_dump()
    return record


class ReplacementStoreContract:
    @pytest.fixture
    def stores(self) -> Stores:
        raise NotImplementedError("a contract's subclass provides the implementation")

    def test_a_replacement_is_made_pending_and_undecided(self, stores: Stores) -> None:
        _, replacements = stores
        tenant = new_tenant()
        record = proposed(stores, tenant)
        assert (record.state, record.new_version_id, record.decided_by, record.decided_at) == (
            ReplacementState.PENDING,
            None,
            None,
            None,
        )
        assert abs(record.created_at - datetime.now(UTC)) < timedelta(minutes=5)
        assert replacements.get(tenant, record.replacement_id) == record
        assert replacements.get(tenant, uuid.uuid4()) is None

    def test_a_replacement_of_a_file_that_does_not_exist_is_refused(self, stores: Stores) -> None:
        files, replacements = stores
        tenant = new_tenant()
        base = stored(files, tenant)
        replacement_id = uuid.uuid4()
        orphan = NewReplacement(
            tenant_id=tenant,
            replacement_id=replacement_id,
            file_id=uuid.uuid4(),
            collection_id="docs",
            base_version_id=base.version_id,
            filename="x.pdf",
            media_type="application/pdf",
            staged_key=f"derived/tenants/{tenant}/replacements/{replacement_id}",
            content_hash="ab" * 32,
            byte_size=1,
            created_by="ann",
            expires_at=EXPIRES,
        )
        with pytest.raises(Exception, match=r"(?i)foreign key|does not exist"):  # the adapter's is psycopg's
            replacements.create(orphan)
        assert replacements.get(tenant, replacement_id) is None

    def test_an_approval_records_its_decider_and_the_planned_version_once(self, stores: Stores) -> None:
        _, replacements = stores
        tenant = new_tenant()
        record = proposed(stores, tenant)
        approved = replacements.decide(tenant, record.replacement_id, state=ReplacementState.APPROVED, decided_by="bob")
        assert approved is not None
        assert (approved.state, approved.decided_by, approved.new_version_id) == (
            ReplacementState.APPROVED,
            "bob",
            record.planned_version_id,
        )
        assert approved.decided_at is not None and approved.decided_at >= approved.created_at
        assert replacements.get(tenant, record.replacement_id) == approved
        # Of two decisions exactly one is recorded: the second changes nothing.
        for state in ReplacementState:
            assert replacements.decide(tenant, record.replacement_id, state=state, decided_by="eve") is None
        assert replacements.get(tenant, record.replacement_id) == approved

    def test_a_rejection_has_a_decider_and_no_version(self, stores: Stores) -> None:
        _, replacements = stores
        tenant = new_tenant()
        record = proposed(stores, tenant)
        rejected = replacements.decide(tenant, record.replacement_id, state=ReplacementState.REJECTED, decided_by="bob")
        assert rejected is not None
        assert (rejected.state, rejected.decided_by, rejected.new_version_id) == (
            ReplacementState.REJECTED,
            "bob",
            None,
        )

    def test_an_expiry_is_nobodys_decision(self, stores: Stores) -> None:
        _, replacements = stores
        tenant = new_tenant()
        record = proposed(stores, tenant)
        expired = replacements.decide(tenant, record.replacement_id, state=ReplacementState.EXPIRED, decided_by="bob")
        assert expired is not None
        assert (expired.state, expired.decided_by, expired.new_version_id) == (ReplacementState.EXPIRED, None, None)
        assert (
            replacements.decide(tenant, record.replacement_id, state=ReplacementState.APPROVED, decided_by="b") is None
        )

    def test_an_unknown_replacement_is_decided_by_nobody(self, stores: Stores) -> None:
        _, replacements = stores
        tenant = new_tenant()
        assert replacements.decide(tenant, uuid.uuid4(), state=ReplacementState.APPROVED, decided_by="bob") is None

    def test_one_tenant_never_reads_or_decides_anothers_replacements(self, stores: Stores) -> None:
        _, replacements = stores
        mine, theirs = new_tenant(), new_tenant()
        record = proposed(stores, theirs)
        assert replacements.get(mine, record.replacement_id) is None
        assert (
            replacements.decide(mine, record.replacement_id, state=ReplacementState.APPROVED, decided_by="eve") is None
        )
        assert replacements.get(theirs, record.replacement_id) == record
