"""FileMetadataStore over PostgreSQL: the four file ports over the same rows, one adapter per port composed into
the Container's `file_metadata` (docs/architecture.md, "Ports and their adapters")."""

from shared.adapters.postgres.file_catalog import PostgresFileCatalog
from shared.adapters.postgres.file_rows import FileRows
from shared.adapters.postgres.processing_attempts import PostgresProcessingAttempts
from shared.adapters.postgres.reconciliation_queries import PostgresReconciliationQueries
from shared.ports import FileMetadataStore, HealthProbe


class PostgresHealthProbe(FileRows, HealthProbe):
    def ping(self) -> None:
        with self._database.unscoped_transaction() as conn:
            conn.execute("SELECT 1")


class PostgresFileMetadataStore(
    PostgresFileCatalog,
    PostgresProcessingAttempts,
    PostgresReconciliationQueries,
    PostgresHealthProbe,
    FileMetadataStore,
):
    """Every file port over one database (a service given two of them is given this store as both)."""
