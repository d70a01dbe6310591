"""Tenant isolation, proven as the application role (not the owner, not a superuser, no BYPASSRLS)."""

import uuid

import psycopg
import pytest
from psycopg import errors

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.file_metadata import PostgresFileMetadataStore
from tests.integration.conftest import MigratedDatabase

# Every table holding tenant rows; the keyword statistics are written by triggers on knowledge_chunks.
TENANT_TABLES = [
    "files",
    "file_versions",
    "knowledge_chunks",
    "keyword_terms",
    "keyword_collections",
    "keyword_postings",
    "document_titles",
    "artifacts",
    "exports",
    "file_replacements",
    "sweep_progress",
    "upload_sessions",
    "chunk_situations",
]
# Written and removed by the application, never changed in place (a version's titles go with its chunks, a file's
# situating sentences with the file).
NEVER_UPDATED_TABLES = ["document_titles", "chunk_situations"]
# Updated by the application (their state moves on) but never deleted by it.
NEVER_DELETED_TABLES = ["exports", "file_replacements", "upload_sessions"]
# Append-only for the application: read and insert, never rewrite what was charged or what an agent did.
APPEND_ONLY_TABLES = [
    "usage_records",
    "request_usage",
    "artifact_versions",
    "artifact_proposals",
    "tool_calls",
    "answers",
    "answer_claims",
    "answer_citations",
    "answer_claim_citations",
    "answer_feedback",
]
# Read only for the application: written by a trigger on knowledge_chunks, as the owner (migrations/0020).
TRIGGER_WRITTEN_TABLES = ["collection_index_generations"]


def add_file(database: Database, tenant: str, collection: str = "docs") -> uuid.UUID:
    file_id = uuid.uuid4()
    with database.tenant_transaction(tenant) as conn:
        conn.execute(
            "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by) VALUES (%s, %s, %s, %s, %s)",
            (tenant, file_id, collection, f"{tenant}.pdf", "tester"),
        )
    return file_id


def visible_files(conn: psycopg.Connection) -> set[uuid.UUID]:
    return {row[0] for row in conn.execute("SELECT file_id FROM files")}


def test_the_application_role_is_neither_owner_nor_superuser_nor_bypasses_rls(
    app_database: Database, migrated_database: MigratedDatabase
) -> None:
    with app_database.unscoped_transaction() as conn:
        role = conn.execute(
            "SELECT rolname, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles"
            " WHERE rolname = current_user"
        ).fetchone()
        owned = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)"
        ).fetchone()
        memberships = conn.execute(
            "SELECT count(*) FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = current_user"
        ).fetchone()
        may_create = conn.execute("SELECT has_schema_privilege('public', 'CREATE')").fetchone()
    assert role == (migrated_database.app_role, False, False, False, False)
    assert owned == (0,)
    # It cannot become another role, nor create objects it would then own.
    assert memberships == (0,)
    assert may_create == (False,)


def test_every_tenant_table_has_forced_row_level_security(owner_connection: psycopg.Connection) -> None:
    rows = owner_connection.execute(
        "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,"
        "       (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid)"
        " FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped"
        " WHERE c.relkind IN ('r', 'p') AND c.relnamespace = 'public'::regnamespace"
    ).fetchall()
    assert {row[0] for row in rows} >= set(TENANT_TABLES + APPEND_ONLY_TABLES + TRIGGER_WRITTEN_TABLES)
    for name, enabled, forced, policies in rows:
        assert (enabled, forced, policies >= 1) == (True, True, True), name


def test_without_a_tenant_nothing_is_visible_and_nothing_can_be_written(app_database: Database) -> None:
    add_file(app_database, "tenant-a")
    with app_database.unscoped_transaction() as conn:
        assert visible_files(conn) == set()
    with pytest.raises(errors.InsufficientPrivilege), app_database.unscoped_transaction() as conn:
        conn.execute(
            "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by)"
            " VALUES ('tenant-a', gen_random_uuid(), 'docs', 'x.pdf', 'nobody')"
        )


def test_tenant_a_never_reads_tenant_bs_rows(app_database: Database) -> None:
    mine = add_file(app_database, "tenant-a")
    theirs = add_file(app_database, "tenant-b")
    with app_database.tenant_transaction("tenant-a") as conn:
        seen = visible_files(conn)
        # Even asking for B's row by its id, or naming B's tenant explicitly, returns nothing.
        by_id = conn.execute("SELECT 1 FROM files WHERE file_id = %s", (theirs,)).fetchall()
        by_tenant = conn.execute("SELECT 1 FROM files WHERE tenant_id = 'tenant-b'").fetchall()
    assert mine in seen and theirs not in seen
    assert by_id == [] and by_tenant == []


def register(database: Database, *tenants: str) -> None:
    for tenant in tenants:
        with database.tenant_transaction(tenant) as conn:
            conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", (tenant,))


def test_the_tenant_registry_shows_the_application_only_its_current_tenant(app_database: Database) -> None:
    # Given two registered tenants
    register(app_database, "registry-a", "registry-b")
    # When the application role reads the registry as A, then only A is there; with no tenant, nothing is
    with app_database.tenant_transaction("registry-a") as conn:
        as_a = conn.execute("SELECT * FROM tenants").fetchall()
    with app_database.unscoped_transaction() as conn:
        unscoped = conn.execute("SELECT * FROM tenants").fetchall()
    assert [row[0] for row in as_a] == ["registry-a"]
    assert unscoped == []


def test_the_sweeps_still_list_every_tenant_id_and_nothing_else(app_database: Database) -> None:
    register(app_database, "registry-a", "registry-b")
    with app_database.unscoped_transaction() as conn:
        listed = conn.execute("SELECT * FROM tenant_ids_for_sweeps()")
        columns = [column.name for column in listed.description or []]
        ids = {row[0] for row in listed}
    assert columns == ["tenant_id"]
    assert {"registry-a", "registry-b"} <= ids
    assert {"registry-a", "registry-b"} <= set(PostgresFileMetadataStore(app_database).tenant_ids())


def test_the_listing_function_cannot_be_handed_the_callers_own_table(app_database: Database) -> None:
    # A SECURITY DEFINER function that resolved names through the caller's search_path would read a temporary
    # table the caller made (pg_temp is searched first for tables unless the path says otherwise).
    register(app_database, "registry-a")
    with app_database.unscoped_transaction() as conn:
        conn.execute("CREATE TEMPORARY TABLE tenants (tenant_id text) ON COMMIT DROP")
        conn.execute("INSERT INTO pg_temp.tenants VALUES ('planted-by-the-caller')")
        conn.execute("SET LOCAL search_path = pg_temp, public")
        ids = {row[0] for row in conn.execute("SELECT tenant_id FROM public.tenant_ids_for_sweeps()")}
    assert "registry-a" in ids and "planted-by-the-caller" not in ids


def test_tenant_a_cannot_write_into_or_change_tenant_bs_rows(app_database: Database) -> None:
    theirs = add_file(app_database, "tenant-b")
    mine = add_file(app_database, "tenant-a")
    with pytest.raises(errors.InsufficientPrivilege), app_database.tenant_transaction("tenant-a") as conn:
        conn.execute(
            "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by)"
            " VALUES ('tenant-b', gen_random_uuid(), 'docs', 'planted.pdf', 'eve')"
        )
    with app_database.tenant_transaction("tenant-a") as conn:
        updated = conn.execute("UPDATE files SET filename = 'pwned.pdf' WHERE file_id = %s", (theirs,)).rowcount
        deleted = conn.execute("DELETE FROM files WHERE file_id = %s", (theirs,)).rowcount
    assert (updated, deleted) == (0, 0)
    # Moving one's own row into another tenant is refused too.
    with pytest.raises(errors.InsufficientPrivilege), app_database.tenant_transaction("tenant-a") as conn:
        conn.execute("UPDATE files SET tenant_id = 'tenant-b' WHERE file_id = %s", (mine,))
    with app_database.tenant_transaction("tenant-b") as conn:
        assert conn.execute("SELECT filename FROM files WHERE file_id = %s", (theirs,)).fetchone() == ("tenant-b.pdf",)


def test_a_pooled_connection_does_not_carry_the_previous_tenant(migrated_database: MigratedDatabase) -> None:
    # One connection in the pool, so every transaction below reuses the same server session.
    database = Database(migrated_database.app_url, max_size=1)
    try:
        a_file = add_file(database, "tenant-a")
        with database.tenant_transaction("tenant-a") as conn:
            backend = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert a_file in visible_files(conn)
        with database.unscoped_transaction() as conn:
            assert conn.execute("SELECT pg_backend_pid()").fetchone() == backend
            assert conn.execute("SELECT current_tenant()").fetchone() == (None,)
            assert visible_files(conn) == set()
        with database.tenant_transaction("tenant-b") as conn:
            assert conn.execute("SELECT pg_backend_pid()").fetchone() == backend
            assert a_file not in visible_files(conn)
    finally:
        database.close()


def test_the_application_role_cannot_switch_row_level_security_off(app_database: Database) -> None:
    with pytest.raises(errors.InsufficientPrivilege), app_database.tenant_transaction("tenant-a") as conn:
        conn.execute("ALTER TABLE files DISABLE ROW LEVEL SECURITY")
    # row_security = off makes PostgreSQL refuse a query RLS would filter, rather than skip the policy.
    with pytest.raises(errors.InsufficientPrivilege), app_database.tenant_transaction("tenant-a") as conn:
        conn.execute("SET LOCAL row_security = off")
        conn.execute("SELECT count(*) FROM files")


@pytest.mark.parametrize("history", ["schema_migrations", "schema_backfills"])
def test_the_application_role_cannot_read_or_rewrite_migration_history(app_database: Database, history: str) -> None:
    with pytest.raises(errors.InsufficientPrivilege), app_database.unscoped_transaction() as conn:
        conn.execute(f"SELECT * FROM {history}")


def test_a_tenant_id_that_is_not_an_identifier_never_reaches_sql(app_database: Database) -> None:
    with pytest.raises(ValueError, match="invalid tenant id"), app_database.tenant_transaction("a' OR '1'='1"):
        pass


TENANT_POLICY = "(tenant_id = current_tenant())"
# The registry: a tenant reads and registers only itself; the owner alone lists every id, which the sweeps
# read through tenant_ids_for_sweeps() (migrations/0014).
REGISTRY_POLICIES = {
    ("tenant_reads_itself", "SELECT", TENANT_POLICY, None),
    ("tenant_registers_itself", "INSERT", None, TENANT_POLICY),
    # Its own row only, and only `last_turn_at` (a column grant): when the sweep last gave it a turn.
    ("tenant_records_its_turn", "UPDATE", TENANT_POLICY, TENANT_POLICY),
}


OWNER_LISTINGS = {
    ("tenants", "owner_lists_tenant_ids"),
    ("events", "owner_lists_unpublished"),
    ("webhook_deliveries", "owner_lists_due"),
}


def test_every_policy_on_a_tenant_table_is_exactly_the_tenant_match(owner_connection: psycopg.Connection) -> None:
    # Permissive policies combine with OR: one extra `USING (true)` would open a table to every tenant.
    rows = owner_connection.execute(
        "SELECT p.tablename, p.policyname, p.cmd, p.qual, p.with_check, p.permissive, p.roles FROM pg_policies p"
        " WHERE p.schemaname = 'public'"
    ).fetchall()
    owner = owner_connection.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'tenants'").fetchone()
    by_table: dict[str, set[tuple[object, ...]]] = {}
    for table, name, command, qual, with_check, permissive, roles in rows:
        # The owner alone lists across tenants, each through one narrow SECURITY DEFINER function: the tenant ids
        # (0014), the tenants with events to publish and with webhook deliveries due (0027).
        if (table, name) in OWNER_LISTINGS:
            assert (command, qual, roles) == ("SELECT", "true", [owner[0] if owner else None])
            continue
        assert permissive == "PERMISSIVE" and roles == ["public"], (table, name)
        by_table.setdefault(table, set()).add((name, command, qual, with_check))
    assert by_table.pop("tenants") == REGISTRY_POLICIES
    assert by_table, "no tenant tables found"
    for table, policies in by_table.items():
        assert policies == {("tenant_isolation", "ALL", TENANT_POLICY, TENANT_POLICY)}, table


def seed_tenant(database: Database, tenant: str) -> dict[str, uuid.UUID]:
    """One row in every tenant table, written through the application role."""
    file_id, version_id = uuid.uuid4(), uuid.uuid4()
    with database.tenant_transaction(tenant) as conn:
        conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", (tenant,))
        conn.execute(
            "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by)"
            " VALUES (%s, %s, 'c', 'f', 's')",
            (tenant, file_id),
        )
        conn.execute(
            "INSERT INTO file_versions (tenant_id, file_id, version_id, filename, media_type, declared_byte_size,"
            " storage_key, created_by) VALUES (%s, %s, %s, 'f', 'text/plain', 1, %s, 's')",
            (tenant, file_id, version_id, f"k/{version_id}"),
        )
        conn.execute(
            "INSERT INTO knowledge_chunks (tenant_id, chunk_id, file_id, version_id, ordinal, subjects, content,"
            " content_hash, collection_id, filename, media_type, uploaded_at, block_kind, location, heading_path,"
            " block_start, block_end, body_offset, token_count, analyser, search_vector) VALUES (%s, %s, %s, %s, 0,"
            " ARRAY['c'], 'secret words', 'h', 'c', 'f', 'text/plain', now(), 'paragraph', '{}', '{}', 0, 0, 0, 2,"
            " 'english', to_tsvector('english', 'secret words'))",
            (tenant, f"{version_id}:0", file_id, version_id),
        )
        conn.execute(
            "INSERT INTO document_titles (tenant_id, version_id, title_key, file_id, source)"
            " VALUES (%s, %s, 'secret plan', %s, 'heading')",
            (tenant, version_id, file_id),
        )
        conn.execute(
            "INSERT INTO usage_records (tenant_id, version_id, step, attempt, file_id, collection_id, provider,"
            " operation, priced, pages) VALUES (%s, %s, 'ocr', 1, %s, 'c', 'textract', 'textract:x', true, 3)",
            (tenant, version_id, file_id),
        )
        conn.execute(
            "INSERT INTO request_usage (tenant_id, usage_id, collection_id, kind, subject, provider, operation,"
            " priced, input_tokens, output_tokens)"
            " VALUES (%s, gen_random_uuid(), 'c', 'answer', 's', 'bedrock', 'bedrock:Converse', true, 40, 2)",
            (tenant,),
        )
        conn.execute(
            "INSERT INTO artifacts (tenant_id, artifact_id, collection_id, name, latest_version, created_by)"
            " VALUES (%s, %s, 'c', 'report', 1, 's')",
            (tenant, file_id),
        )
        conn.execute(
            "INSERT INTO artifact_versions (tenant_id, artifact_id, version, content_key, content_hash, content_bytes,"
            " block_count, provenance, created_by) VALUES (%s, %s, 1, %s, %s, 2, 0,"
            """ '{"producer": "test", "inputs": {}, "sources": []}', 's')""",
            (tenant, file_id, f"derived/tenants/{tenant}/artifacts/{file_id}/content/x.json", "0" * 64),
        )
        conn.execute(
            "INSERT INTO artifact_versions (tenant_id, artifact_id, version, content_key, content_hash, content_bytes,"
            " block_count, provenance, created_by) VALUES (%s, %s, 2, %s, %s, 2, 0,"
            """ '{"producer": "test", "inputs": {}, "sources": []}', 's')""",
            (tenant, file_id, f"derived/tenants/{tenant}/artifacts/{file_id}/content/y.json", "1" * 64),
        )
        conn.execute(
            "INSERT INTO artifact_proposals (tenant_id, proposal_id, artifact_id, base_version, result_version,"
            " operations, created_by) VALUES (%s, gen_random_uuid(), %s, 1, 2, '[]', 's')",
            (tenant, file_id),
        )
        conn.execute(
            "INSERT INTO exports (tenant_id, export_id, collection_id, kind, format, artifact_id, version, created_by)"
            " VALUES (%s, gen_random_uuid(), 'c', 'artifact', 'pdf', %s, 1, 's')",
            (tenant, file_id),
        )
        conn.execute(
            "INSERT INTO chunk_situations (tenant_id, file_id, model, chunk_hash, situation)"
            " VALUES (%s, %s, 'anthropic.claude-haiku', %s, 'The part of the report about revenue.')",
            (tenant, file_id, "a" * 64),
        )
        conn.execute(
            "INSERT INTO sweep_progress (tenant_id, sweep, after_updated_at, after_version_id)"
            " VALUES (%s, 'pending', now(), %s)",
            (tenant, version_id),
        )
        conn.execute(
            "INSERT INTO file_replacements (tenant_id, replacement_id, file_id, collection_id, base_version_id,"
            " filename, media_type, staged_key, content_hash, byte_size, created_by, expires_at)"
            " VALUES (%s, gen_random_uuid(), %s, 'c', %s, 'f', 'text/plain', %s, %s, 1, 's', now())",
            (tenant, file_id, version_id, f"derived/tenants/{tenant}/replacements/x", "2" * 64),
        )
        conn.execute(
            "INSERT INTO upload_sessions (tenant_id, upload_id, version_id, storage_upload_id, byte_size, part_size,"
            " part_count, created_by, expires_at) VALUES (%s, gen_random_uuid(), %s, 's3-id', 1, 5242880, 1, 's',"
            " now() + interval '1 day')",
            (tenant, version_id),
        )
    return {"file_id": file_id, "version_id": version_id}


def test_artifact_history_is_isolated_and_append_only_for_the_application(app_database: Database) -> None:
    suffix = uuid.uuid4().hex[:8]
    mine, theirs = f"a-{suffix}", f"b-{suffix}"
    seed_tenant(app_database, mine)
    foreign = seed_tenant(app_database, theirs)
    with app_database.tenant_transaction(mine) as conn:
        assert conn.execute("SELECT count(*) FROM artifact_versions WHERE tenant_id = %s", (theirs,)).fetchone() == (0,)
    for statement in (
        "UPDATE artifact_versions SET content_hash = repeat('1', 64)",
        "DELETE FROM artifact_versions",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege), app_database.tenant_transaction(mine) as conn:
            conn.execute(statement)
    # A version in another tenant's name, even of an artifact id that exists there, is refused.
    with pytest.raises(psycopg.errors.Error), app_database.tenant_transaction(mine) as conn:
        conn.execute(
            "INSERT INTO artifact_versions (tenant_id, artifact_id, version, content_key, content_hash, content_bytes,"
            " block_count, provenance, created_by) VALUES (%s, %s, 2, 'derived/tenants/x', %s, 1, 0,"
            """ '{"producer": "eve", "inputs": {}, "sources": []}', 'eve')""",
            (theirs, foreign["file_id"], "0" * 64),
        )
    # Provenance is required: a version without it is refused by the schema itself.
    with pytest.raises(psycopg.errors.CheckViolation), app_database.tenant_transaction(theirs) as conn:
        conn.execute(
            "INSERT INTO artifact_versions (tenant_id, artifact_id, version, content_key, content_hash, content_bytes,"
            " block_count, provenance, created_by) VALUES (%s, %s, 2, 'derived/tenants/x', %s, 1, 0, '{}', 's')",
            (theirs, foreign["file_id"], "0" * 64),
        )


def test_the_usage_ledger_is_isolated_and_append_only_for_the_application(app_database: Database) -> None:
    suffix = uuid.uuid4().hex[:8]
    mine, theirs = f"a-{suffix}", f"b-{suffix}"
    seed_tenant(app_database, mine)
    foreign = seed_tenant(app_database, theirs)
    with app_database.tenant_transaction(mine) as conn:
        assert conn.execute("SELECT count(*) FROM usage_records WHERE tenant_id = %s", (theirs,)).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM usage_records").fetchone() == (1,)
    # Writing a row in another tenant's name is refused by the policy's WITH CHECK.
    with pytest.raises(psycopg.errors.InsufficientPrivilege), app_database.tenant_transaction(mine) as conn:
        conn.execute(
            "INSERT INTO usage_records (tenant_id, version_id, step, attempt, file_id, collection_id, provider,"
            " operation, priced) VALUES (%s, %s, 'vision', 1, %s, 'c', 'bedrock', 'bedrock:Converse', true)",
            (theirs, foreign["version_id"], foreign["file_id"]),
        )
    # Nobody rewrites a charge, not even in their own tenant.
    for statement in ("UPDATE usage_records SET pages = 0", "DELETE FROM usage_records"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege), app_database.tenant_transaction(mine) as conn:
            conn.execute(statement)
    with app_database.tenant_transaction(theirs) as conn:
        assert conn.execute("SELECT sum(pages) FROM usage_records").fetchone() == (3,)


def test_request_usage_is_isolated_and_append_only_for_the_application(app_database: Database) -> None:
    suffix = uuid.uuid4().hex[:8]
    mine, theirs = f"a-{suffix}", f"b-{suffix}"
    seed_tenant(app_database, mine)
    seed_tenant(app_database, theirs)
    with app_database.tenant_transaction(mine) as conn:
        assert conn.execute("SELECT count(*) FROM request_usage WHERE tenant_id = %s", (theirs,)).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM request_usage").fetchone() == (1,)
    # Booking tokens in another tenant's name is refused by the policy's WITH CHECK, and without a tenant nothing.
    insert = (
        "INSERT INTO request_usage (tenant_id, usage_id, collection_id, kind, subject, provider, operation, priced)"
        " VALUES (%s, gen_random_uuid(), 'c', 'summary', 'eve', 'bedrock', 'bedrock:Converse', true)"
    )
    with pytest.raises(psycopg.errors.InsufficientPrivilege), app_database.tenant_transaction(mine) as conn:
        conn.execute(insert, (theirs,))
    with pytest.raises(psycopg.errors.InsufficientPrivilege), app_database.unscoped_transaction() as conn:
        conn.execute(insert, (theirs,))
    # A kind the ledger does not know is refused by the schema.
    with pytest.raises(psycopg.errors.CheckViolation), app_database.tenant_transaction(mine) as conn:
        conn.execute(insert.replace("'summary'", "'poem'"), (mine,))
    # Nobody rewrites a charge, not even in their own tenant.
    for statement in ("UPDATE request_usage SET input_tokens = 0", "DELETE FROM request_usage"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege), app_database.tenant_transaction(mine) as conn:
            conn.execute(statement)
    with app_database.tenant_transaction(theirs) as conn:
        assert conn.execute("SELECT sum(input_tokens + output_tokens) FROM request_usage").fetchone() == (42,)


@pytest.mark.parametrize("table", TENANT_TABLES)
def test_no_tenant_table_lets_one_tenant_read_or_change_anothers_rows(app_database: Database, table: str) -> None:
    suffix = uuid.uuid4().hex[:8]
    mine, theirs = f"a-{suffix}", f"b-{suffix}"
    seed_tenant(app_database, mine)
    seed_tenant(app_database, theirs)
    with app_database.tenant_transaction(mine) as conn:
        read = conn.execute(f"SELECT count(*) FROM {table} WHERE tenant_id = %s", (theirs,)).fetchone()
        may_update = conn.execute("SELECT has_table_privilege(%s, 'UPDATE')", (table,)).fetchone() == (True,)
        assert may_update == (table not in NEVER_UPDATED_TABLES)
        updated = (
            conn.execute(f"UPDATE {table} SET tenant_id = tenant_id WHERE tenant_id = %s", (theirs,)).rowcount
            if may_update
            else 0
        )
        may_delete = conn.execute("SELECT has_table_privilege(%s, 'DELETE')", (table,)).fetchone() == (True,)
        deleted = conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s", (theirs,)).rowcount if may_delete else 0
    assert (read, updated, deleted) == ((0,), 0, 0)
    if table in NEVER_DELETED_TABLES:
        assert not may_delete  # records of what was rendered or decided: the application never deletes them
    with app_database.tenant_transaction(theirs) as conn:
        counted = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        assert counted is not None and counted >= (1,)


def test_a_tenant_records_only_its_own_turn_and_nothing_else_of_the_registry(app_database: Database) -> None:
    suffix = uuid.uuid4().hex[:8]
    mine, theirs = f"a-{suffix}", f"b-{suffix}"
    seed_tenant(app_database, mine)
    seed_tenant(app_database, theirs)
    with app_database.tenant_transaction(mine) as conn:
        assert conn.execute("UPDATE tenants SET last_turn_at = now() WHERE tenant_id = %s", (theirs,)).rowcount == 0
        assert conn.execute("UPDATE tenants SET last_turn_at = now() WHERE tenant_id = %s", (mine,)).rowcount == 1
    with pytest.raises(psycopg.errors.InsufficientPrivilege), app_database.tenant_transaction(mine) as conn:
        conn.execute("UPDATE tenants SET tenant_id = 'elsewhere' WHERE tenant_id = %s", (mine,))
