"""Migration 0026 (issue 33): exports claimed before it name their sources too, from what each kind recorded (the
artifact version's provenance, the converted file version, the PDF operation's inputs), without metadata."""

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from migrations.runner import MIGRATIONS_DIR, apply_migrations

FILE, VERSION, OTHER_VERSION = (f"00000000-0000-4000-8000-00000000000{n}" for n in (1, 2, 3))
ARTIFACT = "00000000-0000-4000-8000-0000000000a1"


def test_exports_made_before_the_migration_name_their_sources(new_database: Callable[[], str], tmp_path: Path) -> None:
    url = new_database()
    before = tmp_path / "before_provenance_metadata"
    before.mkdir()
    for migration in MIGRATIONS_DIR.glob("*.sql"):
        if migration.name < "0026":
            shutil.copy(migration, before / migration.name)
    apply_migrations(url, embedding_dimension=384, directory=before)
    recorded = [{"file_id": FILE, "version_id": VERSION, "chunk_ids": [f"{VERSION}:0"]}]
    inputs = [
        {"fileId": FILE, "versionId": v, "pages": p} for v, p in ((VERSION, "1"), (OTHER_VERSION, None), (VERSION, "2"))
    ]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT set_config('quire.tenant_id', 'acme', false)")
        conn.execute("INSERT INTO tenants (tenant_id) VALUES ('acme')")
        conn.execute(
            "INSERT INTO artifacts (tenant_id, artifact_id, collection_id, name, latest_version, created_by)"
            " VALUES ('acme', %s, 'docs', 'Q3', 1, 'ann')",
            (ARTIFACT,),
        )
        conn.execute(
            "INSERT INTO artifact_versions (tenant_id, artifact_id, version, content_key, content_hash, content_bytes,"
            " block_count, provenance, created_by)"
            " VALUES ('acme', %s, 1, 'derived/tenants/acme/x', %s, 1, 1, %s, 'ann')",
            (ARTIFACT, "0" * 64, Jsonb({"producer": "t", "inputs": {}, "sources": recorded})),
        )
        exports = {
            "artifact": ("artifact_id, version", (ARTIFACT, 1)),
            "conversion": ("source_file_id, source_version_id", (FILE, VERSION)),
            "pdf": ("operation, operation_hash", (Jsonb({"op": "compose", "inputs": inputs}), "1" * 64)),
        }
        for number, (kind, (columns, values)) in enumerate(exports.items()):
            conn.execute(
                f"INSERT INTO exports (tenant_id, export_id, collection_id, kind, format, {columns}, created_by)"
                " VALUES ('acme', %s, 'docs', %s, 'pdf', %s, %s, 'ann')",
                (f"00000000-0000-4000-8000-0000000000e{number}", kind, *values),
            )

    assert "0026_provenance_metadata" in apply_migrations(url, embedding_dimension=384).applied

    with psycopg.connect(url) as conn:
        conn.execute("SELECT set_config('quire.tenant_id', 'acme', false)")
        sources: dict[str, Any] = dict(conn.execute("SELECT kind, sources FROM exports").fetchall())
    assert sources["artifact"] == recorded
    assert sources["conversion"] == [{"file_id": FILE, "version_id": VERSION}]
    assert sorted(sources["pdf"], key=lambda s: s["version_id"]) == [
        {"file_id": FILE, "version_id": VERSION},
        {"file_id": FILE, "version_id": OTHER_VERSION},
    ]
