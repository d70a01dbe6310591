"""What every ArtifactStore keeps (shared/ports/): an artifact made at version 1 with that version; versions
numbered by compare-and-set on the latest (a stale writer gets VersionConflict naming the current version and
writes nothing; a missing artifact is NotFound); history in order from a version on; the collection's artifacts
newest first in keyset pages; and never another tenant's rows.

Each test works in tenants of its own, so the suite can run against one shared database."""

import uuid
from datetime import UTC, datetime
from uuid import UUID

import pytest

from shared.domain.artifacts import (
    ArtifactRecord,
    ArtifactVersionRecord,
    NewArtifactVersion,
    Provenance,
    VersionConflict,
    artifact_content_key,
)
from shared.domain.errors import NotFound
from shared.domain.proposals import AppliedProposal
from shared.ports import ArtifactStore
from tests.contracts.file_metadata import new_tenant

EVERYWHERE = frozenset({"docs", "hr", "legal"})


def content(tenant: str, artifact_id: UUID, text: str = "v1", *, by: str = "ann") -> NewArtifactVersion:
    digest = uuid.uuid5(artifact_id, text).hex * 2  # 64 hex digits, one per text
    return NewArtifactVersion(
        content_key=artifact_content_key(tenant, artifact_id, digest),
        content_hash=digest,
        content_bytes=len(text) + 10,
        block_count=len(text),
        provenance=Provenance(producer="contract", inputs={"text": text}, sources=()),
        created_by=by,
    )


def made(
    store: ArtifactStore, tenant: str, *, collection: str = "docs", name: str = "Q3 report"
) -> tuple[ArtifactRecord, ArtifactVersionRecord]:
    artifact_id = uuid.uuid4()
    record = ArtifactRecord(
        tenant_id=tenant,
        artifact_id=artifact_id,
        collection_id=collection,
        name=name,
        latest_version=1,
        created_by="ann",
        created_at=datetime.now(UTC),
        updated_at=datetime.now(UTC),
    )
    first = store.create(record, content(tenant, artifact_id))
    found = store.get(tenant, artifact_id)
    assert found is not None
    return found, first


class ArtifactStoreContract:
    @pytest.fixture
    def store(self) -> ArtifactStore:
        raise NotImplementedError("a contract's subclass provides the implementation")

    def test_an_artifact_is_made_at_version_one_with_that_version(self, store: ArtifactStore) -> None:
        tenant = new_tenant()
        artifact, first = made(store, tenant)
        assert (artifact.collection_id, artifact.name, artifact.latest_version, artifact.created_by) == (
            "docs",
            "Q3 report",
            1,
            "ann",
        )
        assert artifact.created_at.utcoffset() is not None and artifact.updated_at >= artifact.created_at
        assert (first.artifact_id, first.version) == (artifact.artifact_id, 1)
        assert (
            first.model_dump(exclude={"artifact_id", "version", "created_at"})
            == content(tenant, artifact.artifact_id).model_dump()
        )
        assert store.version(tenant, artifact.artifact_id, 1) == first
        assert store.version(tenant, artifact.artifact_id, 2) is None
        assert store.get(tenant, uuid.uuid4()) is None

    def test_a_version_is_added_only_against_the_latest(self, store: ArtifactStore) -> None:
        tenant = new_tenant()
        artifact, _ = made(store, tenant)
        second = store.add_version(
            tenant, artifact.artifact_id, expected_latest=1, new=content(tenant, artifact.artifact_id, "v2")
        )
        assert second.version == 2 and second.content_key.endswith(".json")
        after = store.get(tenant, artifact.artifact_id)
        assert after is not None and after.latest_version == 2 and after.updated_at >= artifact.updated_at
        # A writer that read version 1 is too late: told the current version, and nothing is written.
        with pytest.raises(VersionConflict, match="at version 2, not 1") as raised:
            store.add_version(
                tenant, artifact.artifact_id, expected_latest=1, new=content(tenant, artifact.artifact_id, "late")
            )
        assert raised.value.latest_version == 2
        assert [v.version for v in store.versions(tenant, artifact.artifact_id, after=None, limit=10)] == [1, 2]
        with pytest.raises(NotFound):
            store.add_version(tenant, uuid.uuid4(), expected_latest=1, new=content(tenant, uuid.uuid4()))

    def test_a_version_made_by_a_proposal_is_stored_with_it(self, store: ArtifactStore) -> None:
        tenant = new_tenant()
        artifact, _ = made(store, tenant)
        proposal = AppliedProposal(
            proposal_id=uuid.uuid4(),
            base_version=1,
            operations=({"op": "delete_block", "blockId": "b1"},),
            created_by="ann",
        )
        added = store.add_version(
            tenant,
            artifact.artifact_id,
            expected_latest=1,
            new=content(tenant, artifact.artifact_id, "edited"),
            proposal=proposal,
        )
        assert added.version == 2

    def test_history_is_in_order_from_the_version_after_the_one_named(self, store: ArtifactStore) -> None:
        tenant = new_tenant()
        artifact, _ = made(store, tenant)
        for number in range(1, 5):
            store.add_version(
                tenant,
                artifact.artifact_id,
                expected_latest=number,
                new=content(tenant, artifact.artifact_id, f"v{number + 1}"),
            )

        def numbers(after: int | None, limit: int) -> list[int]:
            return [v.version for v in store.versions(tenant, artifact.artifact_id, after=after, limit=limit)]

        assert numbers(None, 10) == [1, 2, 3, 4, 5]
        assert numbers(None, 2) == [1, 2]
        assert numbers(2, 2) == [3, 4]
        assert numbers(5, 2) == []
        assert store.versions(tenant, uuid.uuid4(), after=None, limit=10) == []

    def test_refers_to_answers_whether_any_version_names_the_content(self, store: ArtifactStore) -> None:
        tenant = new_tenant()
        artifact, first = made(store, tenant)
        other, _ = made(store, tenant)
        store.add_version(
            tenant, artifact.artifact_id, expected_latest=1, new=content(tenant, artifact.artifact_id, "v2")
        )
        assert store.refers_to(tenant, artifact.artifact_id, first.content_key)
        assert not store.refers_to(tenant, other.artifact_id, first.content_key)
        assert not store.refers_to(tenant, artifact.artifact_id, content(tenant, artifact.artifact_id, "x").content_key)

    def test_artifacts_are_listed_newest_first_in_keyset_pages_of_the_readable_collections(
        self, store: ArtifactStore
    ) -> None:
        tenant = new_tenant()
        docs = [made(store, tenant)[0] for _ in range(3)]
        hr = made(store, tenant, collection="hr")[0]
        made(store, tenant, collection="legal")

        def ids(rows: list[ArtifactRecord]) -> list[UUID]:
            return [row.artifact_id for row in rows]

        newest_first = ids(sorted([*docs, hr], key=lambda a: (a.created_at, a.artifact_id), reverse=True))
        page, more = store.list(tenant, frozenset({"docs", "hr"}), collection_id=None, limit=3, after=None)
        assert (ids(page), more) == (newest_first[:3], True)
        page, more = store.list(
            tenant, frozenset({"docs", "hr"}), collection_id=None, limit=3, after=page[-1].artifact_id
        )
        assert (ids(page), more) == (newest_first[3:], False)
        # One collection, only if it is readable.
        page, more = store.list(tenant, frozenset({"docs", "hr"}), collection_id="hr", limit=10, after=None)
        assert (ids(page), more) == ([hr.artifact_id], False)
        assert store.list(tenant, frozenset({"docs"}), collection_id="legal", limit=10, after=None) == ([], False)
        assert store.list(tenant, frozenset(), collection_id=None, limit=10, after=None) == ([], False)

    def test_one_tenant_never_reads_or_writes_anothers_artifacts(self, store: ArtifactStore) -> None:
        mine, theirs = new_tenant(), new_tenant()
        artifact, first = made(store, theirs)
        assert store.get(mine, artifact.artifact_id) is None
        assert store.version(mine, artifact.artifact_id, 1) is None
        assert store.versions(mine, artifact.artifact_id, after=None, limit=10) == []
        assert not store.refers_to(mine, artifact.artifact_id, first.content_key)
        assert store.list(mine, EVERYWHERE, collection_id=None, limit=10, after=None) == ([], False)
        assert store.list(mine, EVERYWHERE, collection_id=None, limit=10, after=artifact.artifact_id) == ([], False)
        with pytest.raises(NotFound):
            store.add_version(mine, artifact.artifact_id, expected_latest=1, new=content(mine, artifact.artifact_id))
        after = store.get(theirs, artifact.artifact_id)
        assert after is not None and after.latest_version == 1
