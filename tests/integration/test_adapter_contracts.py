"""The real adapters (PostgreSQL as the application role, moto's S3 server) against the contract suites the
in-memory fakes pass too (tests/unit/test_fake_contracts.py)."""

import pytest

from shared.adapters.aws.s3_content_store import S3ContentStore
from shared.adapters.postgres.answers import PostgresAnswerStore
from shared.adapters.postgres.artifacts import PostgresArtifactStore
from shared.adapters.postgres.database import Database
from shared.adapters.postgres.exports import PostgresExportStore
from shared.adapters.postgres.file_metadata import PostgresFileMetadataStore
from shared.adapters.postgres.replacements import PostgresReplacementStore
from shared.adapters.postgres.sweep_progress import PostgresSweepProgress
from shared.adapters.postgres.tool_calls import PostgresToolCallAudit
from shared.adapters.postgres.usage import PostgresUsageLedger
from shared.bootstrap import Container
from shared.config import Settings
from shared.local.embedded_postgres import free_port
from shared.local.supervisor import ensure_bucket
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


class TestPostgresFileMetadataStore(FileMetadataContract):
    @pytest.fixture
    def store(self, app_database: Database) -> FileMetadataStore:
        return PostgresFileMetadataStore(app_database)


class TestPostgresSweepProgress(SweepProgressContract):
    @pytest.fixture
    def stores(self, app_database: Database) -> tuple[FileMetadataStore, SweepProgress]:
        return PostgresFileMetadataStore(app_database), PostgresSweepProgress(app_database)


class TestPostgresSpend(SpendContract):
    @pytest.fixture
    def stores(self, app_database: Database) -> tuple[FileMetadataStore, UsageLedger]:
        return PostgresFileMetadataStore(app_database), PostgresUsageLedger(app_database)


class TestPostgresToolCallAudit(ToolCallAuditContract):
    @pytest.fixture
    def audit(self, app_database: Database) -> ToolCallAudit:
        return PostgresToolCallAudit(app_database)


class TestPostgresArtifactStore(ArtifactStoreContract):
    @pytest.fixture
    def store(self, app_database: Database) -> ArtifactStore:
        return PostgresArtifactStore(app_database)


class TestPostgresExportStore(ExportStoreContract):
    @pytest.fixture
    def stores(self, app_database: Database) -> tuple[ArtifactStore, ExportStore]:
        return PostgresArtifactStore(app_database), PostgresExportStore(app_database)


class TestPostgresReplacementStore(ReplacementStoreContract):
    @pytest.fixture
    def stores(self, app_database: Database) -> tuple[FileMetadataStore, ReplacementStore]:
        return PostgresFileMetadataStore(app_database), PostgresReplacementStore(app_database)


class TestPostgresAnswerStore(AnswerStoreContract):
    @pytest.fixture
    def store(self, app_database: Database) -> AnswerStore:
        return PostgresAnswerStore(app_database)


@pytest.fixture(scope="module")
def contract_bucket(s3_endpoint: str) -> str:
    name = f"quire-contract-{free_port()}"
    assert ensure_bucket(s3_endpoint, name) == "Enabled"
    return name


class TestS3ContentStore(ContentStoreContract):
    @pytest.fixture
    def store(self, s3_endpoint: str, contract_bucket: str) -> FileContentStore:
        # Built by the composition root, exactly as a handler gets it.
        content = Container(Settings(runtime="local", s3_endpoint_url=s3_endpoint, bucket=contract_bucket)).content
        assert isinstance(content, S3ContentStore)
        return content
