import hashlib
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from migrations.runner import MIGRATIONS_DIR, REVISED, MigrationError, apply_migrations, discover
from shared.adapters.postgres.database import Database
from shared.adapters.postgres.file_metadata import PostgresFileMetadataStore
from shared.local.supervisor import app_url_from_owner, set_app_role_password
from tests.integration.conftest import drop_role

ALL = [f"{m.version}_{m.name}" for m in discover()]


def vector_column_type(owner_url: str) -> str:
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'knowledge_chunks'::regclass AND attname = 'embedding'"
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_migrations_apply_once_and_rerunning_is_a_no_op(new_database: Callable[[], str]) -> None:
    url = new_database()
    first = apply_migrations(url, embedding_dimension=384)
    second = apply_migrations(url, embedding_dimension=384)
    assert (first.applied, first.already_applied, first.backfilled) == (ALL, [], ["0033_duplicates"])
    assert (second.applied, second.already_applied, second.backfilled) == ([], ALL, [])
    with psycopg.connect(url) as conn:
        recorded = [row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert recorded == [name[:4] for name in ALL]


def test_the_embedding_dimension_setting_shapes_the_vector_column(new_database: Callable[[], str]) -> None:
    url = new_database()
    apply_migrations(url, embedding_dimension=16)
    assert vector_column_type(url) == "vector(16)"


def test_a_different_dimension_on_an_existing_schema_is_refused(new_database: Callable[[], str]) -> None:
    url = new_database()
    apply_migrations(url, embedding_dimension=384)
    with pytest.raises(MigrationError, match="embedding_dimension=384 but settings ask for 1024"):
        apply_migrations(url, embedding_dimension=1024)
    assert vector_column_type(url) == "vector(384)"


def test_a_migration_edited_after_it_was_applied_is_refused(new_database: Callable[[], str], tmp_path: Path) -> None:
    url = new_database()
    apply_migrations(url, embedding_dimension=384)
    edited = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, edited, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    with (edited / "0002_files.sql").open("a", encoding="utf-8") as sql:
        sql.write("\n-- a harmless-looking edit\n")
    with pytest.raises(MigrationError, match="0002_files was edited"):
        apply_migrations(url, embedding_dimension=384, directory=edited)


def test_a_failing_migration_leaves_nothing_half_applied(new_database: Callable[[], str], tmp_path: Path) -> None:
    url = new_database()
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "0001_ok.sql").write_text("CREATE TABLE ok_table (id int);", encoding="utf-8")
    (folder / "0002_broken.sql").write_text("CREATE TABLE half (id int); SELECT * FROM missing;", encoding="utf-8")
    with pytest.raises(psycopg.errors.UndefinedTable):
        apply_migrations(url, embedding_dimension=384, directory=folder)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT to_regclass('half')").fetchone() == (None,)
        assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations")] == ["0001"]


_RESUMABLE_BACKFILL = """
import time


def backfill(conn, deadline):
    runs = conn.execute("INSERT INTO backfill_runs DEFAULT VALUES RETURNING n").fetchone()[0]
    while True:
        if deadline is not None and time.monotonic() >= deadline:
            return False
        with conn.transaction():
            row = conn.execute("SELECT id FROM items WHERE NOT done ORDER BY id LIMIT 1").fetchone()
            if row is None:
                return True
            if row[0] == 2 and runs == 1:
                raise RuntimeError("the runner was interrupted")
            conn.execute("UPDATE items SET done = true WHERE id = %s", row)
"""


def _backfilling(folder: Path, later: str) -> Path:
    """The migrations, then 9001 (three items and the resumable backfill that marks them done) and 9002 (`later`)."""
    shutil.copytree(MIGRATIONS_DIR, folder, ignore=shutil.ignore_patterns("__pycache__", "runner.py", "__init__.py"))
    (folder / "9001_items.sql").write_text(
        "CREATE TABLE items (id int PRIMARY KEY, done boolean NOT NULL DEFAULT false);"
        " INSERT INTO items (id) VALUES (1), (2), (3); CREATE TABLE backfill_runs (n serial);",
        encoding="utf-8",
    )
    (folder / "9001_items.py").write_text(_RESUMABLE_BACKFILL, encoding="utf-8")
    (folder / "9002_after.sql").write_text(later, encoding="utf-8")
    return folder


def test_a_backfill_commits_batch_by_batch_resumes_after_an_interruption_and_runs_to_its_end_once(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    # Given a migration whose step backfills three rows, one transaction each, interrupted at the second the first time
    url = new_database()
    # a later migration sees the backfill's end
    folder = _backfilling(
        tmp_path / "backfilling", "CREATE TABLE seen AS SELECT count(*) FILTER (WHERE NOT done) AS pending FROM items;"
    )
    with pytest.raises(RuntimeError, match="interrupted"):
        apply_migrations(url, embedding_dimension=384, directory=folder)
    with psycopg.connect(url) as conn:
        # The migration committed, and so did the batch before the interruption
        assert conn.execute("SELECT version FROM schema_migrations WHERE version > '9000'").fetchall() == [("9001",)]
        assert conn.execute("SELECT id FROM items WHERE done").fetchall() == [(1,)]
        assert conn.execute("SELECT count(*) FROM schema_backfills WHERE version = '9001'").fetchone() == (0,)
    # When the runner runs again, the backfill resumes and ends before the next migration
    again = apply_migrations(url, embedding_dimension=384, directory=folder)
    assert (again.applied, again.backfilled) == (["9002_after"], ["9001_items"])
    # Then it is recorded done, and never run again
    third = apply_migrations(url, embedding_dimension=384, directory=folder)
    assert (third.applied, third.backfilled) == ([], [])
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM items WHERE NOT done").fetchone() == (0,)
        assert conn.execute("SELECT pending FROM seen").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM backfill_runs").fetchone() == (2,)


def test_a_backfill_the_deadline_stops_is_unfinished_holds_no_later_migration_back_and_is_resumed(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    # Given a migration with a backfill and a later migration, run with a deadline already passed
    url = new_database()
    folder = _backfilling(tmp_path / "deadline", "CREATE TABLE after_items (id int);")
    stopped = apply_migrations(url, embedding_dimension=384, directory=folder, backfill_deadline=time.monotonic() - 1)
    # Then the later migration is applied, and the backfill is reported unfinished, not recorded
    assert "9002_after" in stopped.applied and "0033_duplicates" in stopped.backfilled
    assert (stopped.unfinished, "9001_items" in stopped.backfilled) == (["9001_items"], False)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM items WHERE done").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM schema_backfills WHERE version = '9001'").fetchone() == (0,)
    # When the runner runs again without a deadline, it resumes the backfill to its end
    again = apply_migrations(url, embedding_dimension=384, directory=folder)
    assert (again.applied, again.backfilled, again.unfinished) == ([], ["9001_items"], [])
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM items WHERE NOT done").fetchone() == (0,)


def test_a_migration_revised_after_it_landed_accepts_its_earlier_text_and_nothing_else(
    new_database: Callable[[], str],
) -> None:
    # Given a database that ran 0033 as it was first written (its whole backfill in the migration's transaction:
    # the text as it landed, kept beside this test)
    url = new_database()
    apply_migrations(url, embedding_dimension=384)
    first = (Path(__file__).parent / "migration_history" / "0033_duplicates.first.sql").read_bytes()
    earlier = hashlib.sha256(first).hexdigest()
    assert earlier in REVISED["0033"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = %s WHERE version = '0033'", (earlier,))
    # When the runner runs with the revision, it is that migration, applied
    report = apply_migrations(url, embedding_dimension=384)
    assert report.applied == [] and "0033_duplicates" in report.already_applied
    # Then any other text is an edit, refused
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE version = '0033'")
    with pytest.raises(MigrationError, match="0033_duplicates was edited"):
        apply_migrations(url, embedding_dimension=384)


def test_concurrent_runners_apply_each_migration_exactly_once(new_database: Callable[[], str]) -> None:
    url = new_database()
    reports = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            reports.append(apply_migrations(url, embedding_dimension=384))
        except BaseException as error:  # surfaced below
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(name for report in reports for name in report.applied) == sorted(ALL)


def test_an_existing_application_role_that_could_bypass_rls_is_refused_not_adopted(
    new_database: Callable[[], str],
) -> None:
    url = new_database()
    role = f"quire_app_bypass_{secrets.token_hex(3)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN BYPASSRLS")
    try:
        with pytest.raises(psycopg.errors.RaiseException, match="BYPASSRLS"):
            apply_migrations(url, embedding_dimension=384, app_role=role)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone() == (0,)
    finally:
        drop_role(url, role)


def test_an_existing_application_role_that_can_become_another_role_is_refused(
    new_database: Callable[[], str],
) -> None:
    url = new_database()
    role = f"quire_app_member_{secrets.token_hex(3)}"
    with psycopg.connect(url, autocommit=True) as conn:
        owner = conn.execute("SELECT current_user").fetchone()
        assert owner is not None
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT {owner[0]} TO {role}")
    try:
        with pytest.raises(psycopg.errors.RaiseException, match="member of other roles"):
            apply_migrations(url, embedding_dimension=384, app_role=role)
    finally:
        drop_role(url, role)


def test_a_membership_granted_after_migrating_is_caught_on_the_next_run(new_database: Callable[[], str]) -> None:
    url = new_database()
    role = f"quire_app_later_{secrets.token_hex(3)}"
    apply_migrations(url, embedding_dimension=384, app_role=role)
    with psycopg.connect(url, autocommit=True) as conn:
        owner = conn.execute("SELECT current_user").fetchone()
        assert owner is not None
        conn.execute(f"GRANT {owner[0]} TO {role}")
    try:
        with pytest.raises(MigrationError, match=f"member of {owner[0]}"):
            apply_migrations(url, embedding_dimension=384, app_role=role)
    finally:
        drop_role(url, role)


def test_create_on_public_is_revoked_even_where_the_server_grants_it(new_database: Callable[[], str]) -> None:
    url = new_database()
    role = f"quire_app_public_{secrets.token_hex(3)}"
    with psycopg.connect(url, autocommit=True) as conn:
        # PostgreSQL before 15 grants this by default.
        conn.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")
    apply_migrations(url, embedding_dimension=384, app_role=role)
    try:
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT has_schema_privilege(%s, 'public', 'CREATE')", (role,)).fetchone()
        assert row == (False,)
    finally:
        drop_role(url, role)


def test_an_owner_that_is_no_superuser_still_lists_every_tenant_for_the_sweeps(new_database: Callable[[], str]) -> None:
    # On Aurora the owner is no superuser and has no BYPASSRLS: FORCE ROW LEVEL SECURITY binds it too, so the
    # sweeps' listing function (which runs as the owner) must not come back empty there.
    superuser_url = new_database()
    owner, app_role = f"quire_owner_{secrets.token_hex(3)}", f"quire_app_owned_{secrets.token_hex(3)}"
    password = secrets.token_urlsafe(12)
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE PASSWORD {}").format(sql.Identifier(owner), password))
        conn.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(conn.info.dbname), sql.Identifier(owner))
        )
        conn.execute(sql.SQL("ALTER SCHEMA public OWNER TO {}").format(sql.Identifier(owner)))
        # pgvector is no trusted extension: on Aurora rds_superuser creates it; here the superuser does.
        conn.execute("CREATE EXTENSION vector")
    try:
        owner_url = app_url_from_owner(superuser_url, password, role=owner)
        apply_migrations(owner_url, embedding_dimension=384, app_role=app_role)
        set_app_role_password(owner_url, password, role=app_role)
        app = Database(app_url_from_owner(superuser_url, password, role=app_role), max_size=1)
        try:
            for tenant in ("owned-a", "owned-b"):
                with app.tenant_transaction(tenant) as conn:
                    conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s)", (tenant,))
            with app.unscoped_transaction() as conn:
                assert conn.execute("SELECT count(*) FROM tenants").fetchone() == (0,)
            assert PostgresFileMetadataStore(app).tenant_ids() == ["owned-a", "owned-b"]
        finally:
            app.close()
    finally:
        drop_role(superuser_url, app_role)
        with psycopg.connect(superuser_url, autocommit=True) as conn:
            conn.execute(sql.SQL("REASSIGN OWNED BY {} TO CURRENT_USER").format(sql.Identifier(owner)))
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(owner)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(owner)))


def test_the_title_index_is_backfilled_from_the_chunks_already_indexed(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    url = new_database()
    before = tmp_path / "before_titles"
    before.mkdir()
    for migration in MIGRATIONS_DIR.glob("*.sql"):
        if migration.name < "0019":  # every migration before the title index, none after
            shutil.copy(migration, before / migration.name)
    apply_migrations(url, embedding_dimension=384, directory=before)
    version_id = "00000000-0000-0000-0000-0000000000b1"
    file_id = "00000000-0000-0000-0000-0000000000f1"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO tenants (tenant_id) VALUES ('acme')")
        conn.execute(
            "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by)"
            " VALUES ('acme', %s, 'docs', 'Q3-Budget.xlsx', 's')",
            (file_id,),
        )
        conn.execute(
            "INSERT INTO file_versions (tenant_id, file_id, version_id, filename, media_type, declared_byte_size,"
            " storage_key, created_by) VALUES ('acme', %s, %s, 'Q3-Budget.xlsx', 'text/plain', 1, 'k/1', 's')",
            (file_id, version_id),
        )
        for ordinal, heading_path in ((0, []), (1, ["JLPT N2: Window, Weekly Plan", "Friday"])):
            conn.execute(
                "INSERT INTO knowledge_chunks (tenant_id, chunk_id, file_id, version_id, ordinal, subjects, content,"
                " content_hash, collection_id, filename, media_type, uploaded_at, block_kind, location,"
                " heading_path, block_start, block_end, body_offset, token_count) VALUES ('acme', %s, %s, %s, %s,"
                " ARRAY['docs'], 'words', 'h', 'docs', 'Q3-Budget.xlsx', 'text/plain', now(), 'paragraph', '{}',"
                " %s, 0, 0, 0, 1)",
                (f"{version_id}:{ordinal}", file_id, version_id, ordinal, heading_path),
            )

    assert "0019_document_titles" in apply_migrations(url, embedding_dimension=384).applied

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT title_key, source FROM document_titles ORDER BY title_key").fetchall()
    assert rows == [("jlpt n2 window weekly plan", "heading"), ("q3 budget", "filename")]


def test_the_keyword_lane_is_rebuilt_stemmed_from_the_chunks_already_indexed(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    url = new_database()
    before = tmp_path / "before_stemming"
    before.mkdir()
    for migration in MIGRATIONS_DIR.glob("*.sql"):
        if migration.name < "0023":  # every migration before the stemmed keyword lane, none after
            shutil.copy(migration, before / migration.name)
    apply_migrations(url, embedding_dimension=384, directory=before)
    contents = {"acme": ["Payments failed at checkout", "The refunds were approved"], "globex": ["Invoices paid"]}
    with psycopg.connect(url, autocommit=True) as conn:
        for number, (tenant, texts) in enumerate(contents.items()):
            file_id, version_id = (
                f"00000000-0000-0000-0000-0000000000f{number}",
                f"00000000-0000-0000-0000-0000000000b{number}",
            )
            conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s)", (tenant,))
            conn.execute(
                "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by)"
                " VALUES (%s, %s, 'docs', 'notes.txt', 's')",
                (tenant, file_id),
            )
            conn.execute(
                "INSERT INTO file_versions (tenant_id, file_id, version_id, filename, media_type, declared_byte_size,"
                " storage_key, created_by) VALUES (%s, %s, %s, 'notes.txt', 'text/plain', 1, %s, 's')",
                (tenant, file_id, version_id, f"k/{number}"),
            )
            for ordinal, text in enumerate(texts):
                conn.execute(
                    "INSERT INTO knowledge_chunks (tenant_id, chunk_id, file_id, version_id, ordinal, subjects,"
                    " content, content_hash, collection_id, filename, media_type, uploaded_at, block_kind, location,"
                    " heading_path, block_start, block_end, body_offset, token_count) VALUES (%s, %s, %s, %s, %s,"
                    " ARRAY['docs'], %s, 'h', 'docs', 'notes.txt', 'text/plain', now(), 'paragraph', '{}',"
                    " '{}', 0, 0, 0, 1)",
                    (tenant, f"{version_id}:{ordinal}", file_id, version_id, ordinal, text),
                )
        assert ("payments",) in conn.execute("SELECT term FROM keyword_postings").fetchall()  # unstemmed before

    # Through 0023 only: 0030 reads the statistics per analyser (its own test is below).
    shutil.copy(MIGRATIONS_DIR / "0023_stemmed_keyword_lane.sql", before)
    assert "0023_stemmed_keyword_lane" in apply_migrations(url, embedding_dimension=384, directory=before).applied

    with psycopg.connect(url) as conn:
        terms = conn.execute("SELECT tenant_id, term, chunk_count FROM keyword_terms ORDER BY 1, 2").fetchall()
        assert terms == [
            ("acme", "approv", 1),
            ("acme", "checkout", 1),
            ("acme", "fail", 1),
            ("acme", "payment", 1),
            ("acme", "refund", 1),
            ("globex", "invoic", 1),
            ("globex", "paid", 1),
        ]
        # Stopwords ("at", "the", "were") are out of the lengths too, and every statistic is the chunks' own.
        assert conn.execute(
            "SELECT tenant_id, chunk_count, total_length FROM keyword_collections ORDER BY 1"
        ).fetchall() == [("acme", 2, 5), ("globex", 1, 2)]
        postings = conn.execute(
            "SELECT tenant_id, term, chunk_id, frequency, chunk_length FROM keyword_postings ORDER BY 1, 2, 3"
        ).fetchall()
        derived = conn.execute(
            "SELECT c.tenant_id, t.lexeme, c.chunk_id, cardinality(t.positions), c.lexical_length"
            " FROM knowledge_chunks c, unnest(c.search_vector) t ORDER BY 1, 2, 3"
        ).fetchall()
        assert postings == derived and len(postings) == 7


LEASE = {
    "de": "Der Mieter verpflichtet sich, die Wohnung in einem ordnungsgemäßen Zustand zu halten und Schäden"
    " unverzüglich dem Vermieter zu melden.",
    "en": "The tenant agrees to keep the apartment in good condition and to report any damage to the landlord"
    " without delay.",
    "zh": "承租人同意保持公寓处于良好状态，并及时向房东报告任何损坏情况。",
}


def test_every_chunk_already_indexed_is_read_again_in_its_own_language(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    url = new_database()
    before = tmp_path / "before_languages"
    before.mkdir()
    for migration in MIGRATIONS_DIR.glob("*.sql"):
        if migration.name < "0030":  # every migration before languages, none after
            shutil.copy(migration, before / migration.name)
    apply_migrations(url, embedding_dimension=384, directory=before)
    # acme: one mixed lease (German, English, Chinese, and a short line that takes the document's language) and a
    # file whose metadata declares Spanish; globex: one English note.
    files = {
        ("acme", "f1", "lease.txt", "{}"): [*LEASE.values(), "Seite 4"],
        ("acme", "f2", "nota.txt", '{"language": "es"}'): ["Pago pendiente de las facturas de diciembre"],
        ("globex", "f3", "notes.txt", "{}"): ["Invoices were paid after the payments failed"],
    }
    ids = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO tenants (tenant_id) VALUES ('acme'), ('globex')")
        for number, ((tenant, name, filename, metadata), texts) in enumerate(files.items()):
            file_id, version_id = (
                f"00000000-0000-0000-0000-00000000000{number}",
                f"00000000-0000-0000-0001-00000000000{number}",
            )
            ids[name] = version_id
            conn.execute("SELECT set_config('quire.tenant_id', %s, false)", (tenant,))
            conn.execute(
                "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by, metadata)"
                " VALUES (%s, %s, 'docs', %s, 's', %s::jsonb)",
                (tenant, file_id, filename, metadata),
            )
            conn.execute(
                "INSERT INTO file_versions (tenant_id, file_id, version_id, filename, media_type, declared_byte_size,"
                " storage_key, created_by, chunk_count) VALUES (%s, %s, %s, %s, 'text/plain', 1, %s, 's', %s)",
                (tenant, file_id, version_id, filename, f"k/{number}", len(texts)),
            )
            for ordinal, text in enumerate(texts):
                conn.execute(
                    "INSERT INTO knowledge_chunks (tenant_id, chunk_id, file_id, version_id, ordinal, subjects,"
                    " content, content_hash, collection_id, filename, media_type, uploaded_at, block_kind, location,"
                    " heading_path, block_start, block_end, body_offset, token_count) VALUES (%s, %s, %s, %s, %s,"
                    " ARRAY['docs'], %s, 'h', 'docs', %s, 'text/plain', now(), 'paragraph', '{}',"
                    " '{}', 0, 0, 0, 1)",
                    (tenant, f"{version_id}:{ordinal}", file_id, version_id, ordinal, text, filename),
                )
        conn.execute("SELECT set_config('quire.tenant_id', 'acme', false)")
        for key in ("数据保护条例", "lease", "数据保护条例数据保护条例数据保护条例数据保护条例"):  # the last: 27 pairs
            conn.execute(
                "INSERT INTO document_titles (tenant_id, version_id, title_key, file_id, source)"
                " VALUES ('acme', %s, %s, '00000000-0000-0000-0000-000000000000', 'heading')",
                (ids["f1"], key),
            )
        generations: dict[str, int] = dict(
            conn.execute("SELECT tenant_id, generation FROM collection_index_generations").fetchall()
        )

    # Through 0030 only: later migrations have tests of their own.
    for step in ("0030_languages.sql", "0030_languages.py"):
        shutil.copy(MIGRATIONS_DIR / step, before)
    assert apply_migrations(url, embedding_dimension=384, directory=before).applied == ["0030_languages"]

    with psycopg.connect(url) as conn:
        chunks = conn.execute("SELECT chunk_id, language, analyser FROM knowledge_chunks ORDER BY chunk_id").fetchall()
        assert chunks == [
            (f"{ids['f1']}:0", "de", "german"),
            (f"{ids['f1']}:1", "en", "english"),
            (f"{ids['f1']}:2", "zh", "cjk"),
            (f"{ids['f1']}:3", "de", "german"),  # "Seite 4" is too short to tell: the document's language
            (f"{ids['f2']}:0", "es", "spanish"),  # declared by the file's metadata, not detected
            (f"{ids['f3']}:0", "en", "english"),
        ]
        assert dict(conn.execute("SELECT version_id::text, languages FROM file_versions").fetchall()) == {
            ids["f1"]: ["de", "en", "zh"],
            ids["f2"]: ["es"],
            ids["f3"]: ["en"],
        }
        terms = {row[0] for row in conn.execute("SELECT term FROM keyword_postings")}
        assert {"schad", "meld", "承租", "damag", "factur", "invoic", "paid"} <= terms
        # Every statistic is the new terms' own, per analyser.
        postings = conn.execute(
            "SELECT tenant_id, analyser, term, chunk_id, frequency, chunk_length FROM keyword_postings"
            " ORDER BY 1, 2, 3, 4"
        ).fetchall()
        derived = conn.execute(
            "SELECT c.tenant_id, c.analyser, t.lexeme, c.chunk_id, cardinality(t.positions), c.lexical_length"
            " FROM knowledge_chunks c, unnest(c.search_vector) t ORDER BY 1, 2, 3, 4"
        ).fetchall()
        assert postings == derived and len(postings) > 30
        assert conn.execute(
            "SELECT tenant_id, analyser, chunk_count FROM keyword_collections ORDER BY 1, 2"
        ).fetchall() == [
            ("acme", "cjk", 1),
            ("acme", "english", 1),
            ("acme", "german", 2),
            ("acme", "spanish", 1),
            ("globex", "english", 1),
        ]
        counted = conn.execute(
            "SELECT tenant_id, analyser, term, chunk_count FROM keyword_terms ORDER BY 1, 2, 3"
        ).fetchall()
        assert (
            counted
            == conn.execute(
                "SELECT c.tenant_id, c.analyser, t.lexeme, count(*) FROM knowledge_chunks c, unnest(c.search_vector) t"
                " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
            ).fetchall()
        )
        # No answer cached before is served after: every collection's index generation moved on.
        after: dict[str, int] = dict(
            conn.execute("SELECT tenant_id, generation FROM collection_index_generations").fetchall()
        )
        assert all(after[tenant] > generations[tenant] for tenant in generations)
        # A CJK title is keyed by its character pairs, as questions are now read; one too long for that is gone.
        assert {row[0] for row in conn.execute("SELECT title_key FROM document_titles")} == {
            "数据 据保 保护 护条 条例",
            "lease",
        }
        # And the trigger that keeps a chunk's terms immutable is back on.
        with pytest.raises(psycopg.errors.RaiseException, match="immutable"):
            conn.execute("UPDATE knowledge_chunks SET analyser = 'simple'")
