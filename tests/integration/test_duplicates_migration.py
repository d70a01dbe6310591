"""Migration 0033: every chunk already indexed gets the SHA-256 of its text (in every tenant, under row-level security),
the same key the application writes, by a backfill that commits batch by batch; and the text key is found through its
index as the application role."""

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg

from migrations.runner import MIGRATIONS_DIR, apply_migrations
from shared.adapters.postgres.database import Database
from shared.domain.duplicates import text_sha256
from tests.integration.knowledge_rows import index_texts


def test_the_chunks_already_indexed_get_their_texts_sha256_in_every_tenant(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    url = new_database()
    before = tmp_path / "before_duplicates"
    before.mkdir()
    for migration in MIGRATIONS_DIR.glob("*"):
        if migration.suffix in (".sql", ".py") and "0000" < migration.name < "0033":
            shutil.copy(migration, before / migration.name)
    apply_migrations(url, embedding_dimension=384, directory=before)
    bodies = {"acme": ["Die Straße am Fluss ist gesperrt.", "Plain words"], "globex": ["Plain words"]}
    with psycopg.connect(url, autocommit=True) as conn:
        for number, (tenant, texts) in enumerate(bodies.items()):
            file_id, version_id = uuid.uuid4(), uuid.uuid4()
            conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s)", (tenant,))
            conn.execute(
                "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by)"
                " VALUES (%s, %s, 'docs', 'notes.md', 's')",
                (tenant, file_id),
            )
            conn.execute(
                "INSERT INTO file_versions (tenant_id, file_id, version_id, filename, media_type, declared_byte_size,"
                " storage_key, created_by) VALUES (%s, %s, %s, 'notes.md', 'text/markdown', 1, %s, 's')",
                (tenant, file_id, version_id, f"k/{number}"),
            )
            for ordinal, body in enumerate(texts):
                heading = "Zürich > Verkehr\n\n"  # what was embedded: the heading path, then the body
                conn.execute(
                    "INSERT INTO knowledge_chunks (tenant_id, chunk_id, file_id, version_id, ordinal, subjects,"
                    " content, content_hash, collection_id, filename, media_type, uploaded_at, block_kind, location,"
                    " heading_path, block_start, block_end, body_offset, token_count, analyser, search_vector)"
                    " VALUES (%s, %s, %s, %s, %s, ARRAY['docs'], %s, 'h', 'docs', 'notes.md', 'text/markdown',"
                    " now(), 'paragraph', '{}', '{}', 0, 0, %s, 1, 'simple', ''::tsvector)",
                    (tenant, f"{version_id}:{ordinal}", file_id, version_id, ordinal, heading + body, len(heading)),
                )

    assert "0033_duplicates" in apply_migrations(url, embedding_dimension=384).applied

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT tenant_id, substr(content, body_offset + 1), text_sha256 FROM knowledge_chunks ORDER BY 1, 2"
        ).fetchall()
    assert [(tenant, body) for tenant, body, _ in rows] == [
        ("acme", "Die Straße am Fluss ist gesperrt."),
        ("acme", "Plain words"),
        ("globex", "Plain words"),
    ]
    assert all(digest == text_sha256(body) for _, body, digest in rows)


def test_the_backfill_keys_the_chunks_a_batch_per_transaction_and_a_second_run_does_nothing(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    # Given 2,500 chunks stored before migration 0033, in one tenant
    url = new_database()
    before = tmp_path / "before_duplicates"
    before.mkdir()
    for migration in MIGRATIONS_DIR.glob("*"):
        if migration.suffix in (".sql", ".py") and "0000" < migration.name < "0033":
            shutil.copy(migration, before / migration.name)
    apply_migrations(url, embedding_dimension=384, directory=before)
    file_id, version_id = uuid.uuid4(), uuid.uuid4()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO tenants (tenant_id) VALUES ('acme')")
        conn.execute("SELECT set_config('quire.tenant_id', 'acme', false)")
        conn.execute(
            "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by)"
            " VALUES ('acme', %s, 'docs', 'notes.md', 's')",
            (file_id,),
        )
        conn.execute(
            "INSERT INTO file_versions (tenant_id, file_id, version_id, filename, media_type, declared_byte_size,"
            " storage_key, created_by) VALUES ('acme', %s, %s, 'notes.md', 'text/markdown', 1, 'k/0', 's')",
            (file_id, version_id),
        )
        conn.execute(
            "INSERT INTO knowledge_chunks (tenant_id, chunk_id, file_id, version_id, ordinal, subjects, content,"
            " content_hash, collection_id, filename, media_type, uploaded_at, block_kind, location, heading_path,"
            " block_start, block_end, body_offset, token_count, analyser, search_vector)"
            " SELECT 'acme', %(version)s || ':' || n, %(file)s, %(version)s::uuid, n, ARRAY['docs'],"
            " 'Heading' || chr(10) || chr(10) || 'Paragraph ' || n, 'h', 'docs', 'notes.md', 'text/markdown', now(),"
            " 'paragraph', '{}', '{}', 0, 0, 9, 1, 'simple', ''::tsvector FROM generate_series(0, 2499) AS n",
            {"version": str(version_id), "file": file_id},
        )
    # When 0033 is applied, its backfill keys every chunk after the migration committed
    report = apply_migrations(url, embedding_dimension=384)
    assert "0033_duplicates" in report.applied and "0033_duplicates" in report.backfilled
    with psycopg.connect(url) as conn:
        conn.execute("SELECT set_config('quire.tenant_id', 'acme', false)")
        rows = conn.execute("SELECT substr(content, body_offset + 1), text_sha256 FROM knowledge_chunks").fetchall()
        # Then in three transactions of at most 1,000 chunks each (a row's xmin is the transaction that wrote it)
        writers = conn.execute(
            "SELECT xmin::text, count(*) FROM knowledge_chunks GROUP BY 1 ORDER BY 2 DESC"
        ).fetchall()
    assert len(rows) == 2_500 and all(digest == text_sha256(body) for body, digest in rows)
    assert [count for _, count in writers] == [1_000, 1_000, 500]
    # And a second run neither applies nor backfills anything
    again = apply_migrations(url, embedding_dimension=384)
    assert (again.applied, again.backfilled) == ([], [])


def test_a_text_is_looked_up_by_its_index_under_row_level_security(app_database: Database) -> None:
    tenant = f"t{uuid.uuid4().hex[:10]}"
    index_texts(app_database, tenant, "docs", ["one text", "another text"])
    with app_database.tenant_transaction(tenant) as conn:
        conn.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN SELECT chunk_id FROM knowledge_chunks WHERE tenant_id = %s AND text_sha256 = %s"
                " AND subjects && %s",
                (tenant, text_sha256("one text"), ["docs"]),
            ).fetchall()
        )
    # The equality is an index condition, not a filter applied after the policy to every row of the tenant.
    assert "knowledge_chunks_text" in plan and "Index Cond" in plan and "text_sha256" in plan, plan
