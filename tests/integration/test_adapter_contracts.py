"""The real adapters (PostgreSQL as the application role, moto's S3 server) against the contract suites the
in-memory fakes pass too (tests/unit/test_fake_contracts.py)."""

import pytest

from shared.adapters.aws.s3_content_store import S3ContentStore
from shared.adapters.postgres.database import Database
from shared.adapters.postgres.file_metadata import PostgresFileMetadataStore
from shared.adapters.postgres.sweep_progress import PostgresSweepProgress
from shared.adapters.postgres.tool_calls import PostgresToolCallAudit
from shared.adapters.postgres.usage import PostgresUsageLedger
from shared.bootstrap import Container
from shared.config import Settings
from shared.local.embedded_postgres import free_port
from shared.local.supervisor import ensure_bucket
from shared.ports import FileContentStore, FileMetadataStore, SweepProgress, ToolCallAudit, UsageLedger
from tests.contracts.content_store import ContentStoreContract
from tests.contracts.file_metadata import FileMetadataContract
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
