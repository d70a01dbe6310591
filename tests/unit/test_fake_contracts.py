"""The in-memory fakes (tests/fakes.py) against the contract suites the real adapters pass too
(tests/integration/test_adapter_contracts.py): a fake that drifts from its port fails here."""

import pytest

from shared.ports import FileContentStore, FileMetadataStore, SweepProgress, ToolCallAudit, UsageLedger
from tests.contracts.content_store import ContentStoreContract
from tests.contracts.file_metadata import FileMetadataContract
from tests.contracts.spend import SpendContract
from tests.contracts.sweep_progress import SweepProgressContract
from tests.contracts.tool_calls import ToolCallAuditContract
from tests.fakes import (
    FakeContentStore,
    FakeFileMetadataStore,
    FakeSweepProgress,
    FakeToolCallAudit,
    FakeUsageLedger,
)


class TestFakeFileMetadataStore(FileMetadataContract):
    @pytest.fixture
    def store(self) -> FileMetadataStore:
        return FakeFileMetadataStore()


class TestFakeContentStore(ContentStoreContract):
    @pytest.fixture
    def store(self) -> FileContentStore:
        return FakeContentStore()


class TestFakeSweepProgress(SweepProgressContract):
    @pytest.fixture
    def stores(self) -> tuple[FileMetadataStore, SweepProgress]:
        metadata = FakeFileMetadataStore()
        return metadata, FakeSweepProgress(metadata)


class TestFakeSpend(SpendContract):
    @pytest.fixture
    def stores(self) -> tuple[FileMetadataStore, UsageLedger]:
        return FakeFileMetadataStore(), FakeUsageLedger()


class TestFakeToolCallAudit(ToolCallAuditContract):
    @pytest.fixture
    def audit(self) -> ToolCallAudit:
        return FakeToolCallAudit()
