"""PostgreSQL access as the application role, one tenant per transaction.

Row-level security is forced on every tenant table; the policies read `quire.tenant_id`, which is set
with `set_config(..., true)`: transaction-local, so a pooled connection never carries a tenant into
the next transaction.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from shared.domain.auth import IDENTIFIER_PATTERN

TENANT_SETTING = "quire.tenant_id"


class Database:
    def __init__(self, url: str, *, max_size: int = 4, wait_seconds: float = 10) -> None:
        # prepare_threshold=None: server-side prepared statements freeze plans across SET changes and pin
        # connections behind RDS Proxy.
        self._pool = ConnectionPool(
            url,
            min_size=0,
            max_size=max_size,
            kwargs={"prepare_threshold": None, "autocommit": False},
            open=False,
            name="quire-app",
            # How long a request waits for a connection before failing (not retried forever).
            timeout=wait_seconds,
        )
        self._opened = False

    def _ensure_open(self) -> None:
        # Opened on first use, not at import: a cold start that never touches the database pays nothing.
        if not self._opened:
            self._pool.open(wait=False)
            self._opened = True

    @contextmanager
    def tenant_transaction(self, tenant_id: str) -> Iterator[psycopg.Connection[Any]]:
        """A transaction in which RLS shows and accepts only `tenant_id`'s rows."""
        if not IDENTIFIER_PATTERN.fullmatch(tenant_id):
            raise ValueError(f"invalid tenant id {tenant_id!r}")
        self._ensure_open()
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, tenant_id))
            yield conn

    @contextmanager
    def unscoped_transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A transaction with no tenant: RLS shows it no tenant rows. For health checks and catalog reads."""
        self._ensure_open()
        with self._pool.connection() as conn, conn.transaction():
            yield conn

    def server_facts(self) -> dict[str, str | None]:
        """PostgreSQL and pgvector versions as the application role sees them."""
        with self.unscoped_transaction() as conn:
            row = conn.execute(
                "SELECT current_setting('server_version'),"
                " (SELECT extversion FROM pg_extension WHERE extname = 'vector'), current_user"
            ).fetchone()
        assert row is not None
        return {"postgres": row[0], "pgvector": row[1], "role": row[2]}

    def close(self) -> None:
        if self._opened:
            self._pool.close()
            self._opened = False
