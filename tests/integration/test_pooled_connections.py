"""A pooled connection the server has dropped (an idle timeout, a failover, a restart) is found and replaced
before a transaction uses it: the caller never sees the dead one as a 500."""

import psycopg

from shared.adapters.postgres.database import Database
from tests.integration.conftest import MigratedDatabase


def test_a_connection_the_server_dropped_is_replaced_before_it_is_used(migrated_database: MigratedDatabase) -> None:
    database = Database(migrated_database.app_url, max_size=1)
    try:
        # Given a pool whose one connection has served a transaction and gone back to the pool
        with database.tenant_transaction("acme") as conn:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        # When the server drops it while it sits idle in the pool
        with psycopg.connect(migrated_database.owner_url, autocommit=True) as owner:
            owner.execute("SELECT pg_terminate_backend(%s)", (row[0],))
        # Then the next transaction gets a live connection and succeeds
        with database.tenant_transaction("acme") as conn:
            again = conn.execute("SELECT pg_backend_pid(), current_setting('quire.tenant_id')").fetchone()
        assert again is not None
        assert again[0] != row[0]
        assert again[1] == "acme"
    finally:
        database.close()
