"""The in-memory fakes (tests/fakes.py, tests/fakes_writing.py) against the contract suites the real adapters pass too
(tests/integration/test_adapter_contracts.py): a fake that drifts from its port fails here."""

import pytest

from shared.ports import (
    AnswerStore,
    ArtifactStore,
    ExportStore,
    FileContentStore,
    FileMetadataStore,
    ReplacementStore,
    SweepProgress,
    ToolCallAudit,
    UsageLedger,
)
from tests.contracts.answers import AnswerStoreContract
from tests.contracts.artifacts import ArtifactStoreContract
from tests.contracts.content_store import ContentStoreContract
from tests.contracts.exports import ExportStoreContract
from tests.contracts.file_metadata import FileMetadataContract
from tests.contracts.replacements import ReplacementStoreContract
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
from tests.fakes_writing import FakeAnswerStore, FakeArtifactStore, FakeExportStore, FakeReplacementStore


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


class TestFakeArtifactStore(ArtifactStoreContract):
    @pytest.fixture
    def store(self) -> ArtifactStore:
        return FakeArtifactStore()


class TestFakeExportStore(ExportStoreContract):
    @pytest.fixture
    def stores(self) -> tuple[ArtifactStore, ExportStore]:
        artifacts = FakeArtifactStore()
        return artifacts, FakeExportStore(artifacts=artifacts)


class TestFakeReplacementStore(ReplacementStoreContract):
    @pytest.fixture
    def stores(self) -> tuple[FileMetadataStore, ReplacementStore]:
        files = FakeFileMetadataStore()
        return files, FakeReplacementStore(files=files)


class TestFakeAnswerStore(AnswerStoreContract):
    @pytest.fixture
    def store(self) -> AnswerStore:
        return FakeAnswerStore()
