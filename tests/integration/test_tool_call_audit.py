"""The tool-call audit (migrations/0018) as the application role: one tenant never reads or writes another's
calls, and nobody (not even the tenant itself) rewrites or removes a call once it is recorded."""

import uuid
from datetime import UTC, datetime

import psycopg
import pytest
from psycopg import errors

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.tool_calls import PostgresToolCallAudit
from shared.bootstrap import Container
from shared.config import Settings
from shared.domain.auth import Role, with_role
from shared.domain.errors import Forbidden
from tests.contracts.tool_calls import tool_call
from tests.integration.conftest import MigratedDatabase

INSERT = (
    "INSERT INTO tool_calls (tenant_id, subject, tool, surface, argument_ids, collection_ids, outcome, duration_ms,"
    " called_at) VALUES (%s, 'eve', 'read_file', 'mcp', '{}', ARRAY['docs'], 'ok', 1, now())"
)


def tenants() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"a-{suffix}", f"b-{suffix}"


def call_ids(database: Database, tenant: str) -> set[uuid.UUID]:
    with database.tenant_transaction(tenant) as conn:
        return {row[0] for row in conn.execute("SELECT call_id FROM tool_calls")}


def test_the_table_forces_row_level_security_and_grants_the_application_only_insert_and_select(
    owner_connection: psycopg.Connection, migrated_database: MigratedDatabase
) -> None:
    table = owner_connection.execute(
        "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = 'tool_calls'::regclass"
    ).fetchone()
    policies = owner_connection.execute(
        "SELECT policyname, cmd, qual, with_check, roles FROM pg_policies WHERE tablename = 'tool_calls'"
    ).fetchall()
    privileges = {
        privilege: owner_connection.execute(
            "SELECT has_table_privilege(%s, 'tool_calls', %s)", (migrated_database.app_role, privilege)
        ).fetchone()
        for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
    }
    assert table == (True, True)
    tenant_match = "(tenant_id = current_tenant())"
    assert policies == [("tenant_isolation", "ALL", tenant_match, tenant_match, ["public"])]
    assert {name for name, granted in privileges.items() if granted == (True,)} == {"SELECT", "INSERT"}


def test_tenant_a_never_reads_tenant_bs_calls_as_the_application_role(app_database: Database) -> None:
    mine, theirs = tenants()
    audit = PostgresToolCallAudit(app_database)
    audit.record(tool_call(mine))
    audit.record(tool_call(theirs))
    audit.record(tool_call(theirs, collections=(), outcome="not_found"))
    foreign = next(iter(call_ids(app_database, theirs)))
    with app_database.tenant_transaction(mine) as conn:
        # Naming B's tenant, or B's call by its id, returns nothing.
        by_tenant = conn.execute("SELECT count(*) FROM tool_calls WHERE tenant_id = %s", (theirs,)).fetchone()
        by_id = conn.execute("SELECT count(*) FROM tool_calls WHERE call_id = %s", (foreign,)).fetchone()
        everything = conn.execute("SELECT DISTINCT tenant_id FROM tool_calls").fetchall()
    assert (by_tenant, by_id, everything) == ((0,), (0,), [(mine,)])
    # Through the adapter, whatever collections are named.
    rows, _ = audit.recent(mine, visible_collections=frozenset({"docs", "hr"}), limit=100, before=None)
    assert {row.tenant_id for row in rows} == {mine}
    with app_database.unscoped_transaction() as conn:
        assert conn.execute("SELECT count(*) FROM tool_calls").fetchone() == (0,)


def test_a_call_cannot_be_written_in_another_tenants_name_or_without_a_tenant(app_database: Database) -> None:
    mine, theirs = tenants()
    with pytest.raises(errors.InsufficientPrivilege), app_database.tenant_transaction(mine) as conn:
        conn.execute(INSERT, (theirs,))
    with pytest.raises(errors.InsufficientPrivilege), app_database.unscoped_transaction() as conn:
        conn.execute(INSERT, (theirs,))
    assert call_ids(app_database, theirs) == set()


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE tool_calls SET outcome = 'ok'",
        "UPDATE tool_calls SET tenant_id = tenant_id",
        "DELETE FROM tool_calls",
        "TRUNCATE tool_calls",
    ],
)
def test_no_tenant_rewrites_or_removes_a_recorded_call_not_even_its_own(app_database: Database, statement: str) -> None:
    mine, _ = tenants()
    PostgresToolCallAudit(app_database).record(tool_call(mine, outcome="forbidden"))
    before = call_ids(app_database, mine)
    with pytest.raises(errors.InsufficientPrivilege), app_database.tenant_transaction(mine) as conn:
        conn.execute(statement)
    assert call_ids(app_database, mine) == before
    with app_database.tenant_transaction(mine) as conn:
        assert conn.execute("SELECT outcome FROM tool_calls").fetchall() == [("forbidden",)]


def test_the_application_role_cannot_switch_the_tables_policy_off(app_database: Database) -> None:
    mine, _ = tenants()
    for statement in (
        "ALTER TABLE tool_calls DISABLE ROW LEVEL SECURITY",
        "ALTER TABLE tool_calls NO FORCE ROW LEVEL SECURITY",
        "DROP POLICY tenant_isolation ON tool_calls",
        "CREATE POLICY everyone ON tool_calls USING (true)",
    ):
        with pytest.raises(errors.InsufficientPrivilege), app_database.tenant_transaction(mine) as conn:
            conn.execute(statement)


def test_the_composition_root_records_and_shows_calls_to_the_admins_of_their_collections(
    migrated_database: MigratedDatabase,
) -> None:
    mine, theirs = tenants()
    container = Container(Settings(runtime="local", database_url=migrated_database.app_url))
    try:
        log = container.audit_log
        assert log.record(tool_call(mine, collections=("docs",), tool="in_docs"))
        assert log.record(tool_call(mine, collections=("hr",), tool="in_hr"))
        assert log.record(tool_call(theirs, collections=("docs",), tool="theirs"))
        admin = with_role(mine, "admin", ["docs"], Role.ADMIN)
        page = log.recent(admin, limit=50, cursor=None)
        assert [call.tool for call in page.calls] == ["in_docs"]
        assert page.calls[0].called_at == datetime(2026, 11, 29, 12, 0, 0, 123456, tzinfo=UTC)
        with pytest.raises(Forbidden, match="admin role"):
            log.recent(with_role(mine, "writer", ["docs", "hr"], Role.WRITE), limit=50, cursor=None)
    finally:
        container.database.close()
