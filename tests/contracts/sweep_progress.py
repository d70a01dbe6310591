"""What every SweepProgress keeps (shared/ports/): per tenant and sweep, where it stopped, until told it reached the
end; and the order of the turns, the tenant whose turn is longest ago (or never was) first.

Each test works in tenants of its own, so the suite can run against one shared database."""

import uuid
from datetime import UTC, datetime

import pytest

from shared.ports import FileMetadataStore, SweepProgress
from tests.contracts.file_metadata import new_tenant, upload


class SweepProgressContract:
    @pytest.fixture
    def stores(self) -> tuple[FileMetadataStore, SweepProgress]:
        raise NotImplementedError("a contract's subclass provides the implementation")

    def test_a_resume_point_is_kept_per_tenant_and_sweep_until_cleared(
        self, stores: tuple[FileMetadataStore, SweepProgress]
    ) -> None:
        metadata, progress = stores
        tenant, other = new_tenant(), new_tenant()
        upload(metadata, tenant)
        upload(metadata, other)
        point = (datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC), uuid.uuid4())
        assert progress.resume_point(tenant, "pending") is None
        progress.save_resume_point(tenant, "pending", point)
        assert progress.resume_point(tenant, "pending") == point
        assert progress.resume_point(tenant, "deleting") is None
        assert progress.resume_point(other, "pending") is None
        later = (datetime(2024, 5, 2, tzinfo=UTC), uuid.uuid4())
        progress.save_resume_point(tenant, "pending", later)
        assert progress.resume_point(tenant, "pending") == later
        progress.save_resume_point(tenant, "pending", None)
        assert progress.resume_point(tenant, "pending") is None

    def test_the_tenants_whose_turn_is_longest_ago_come_first(
        self, stores: tuple[FileMetadataStore, SweepProgress]
    ) -> None:
        metadata, progress = stores
        first, second = sorted([new_tenant(), new_tenant()])
        upload(metadata, first)
        upload(metadata, second)

        def order() -> list[str]:
            return [t for t in progress.tenants_in_turn() if t in (first, second)]

        assert order() == [first, second]  # neither had a turn: by id
        progress.end_turn(first)
        assert order() == [second, first]
        progress.end_turn(second)
        assert order() == [first, second]
