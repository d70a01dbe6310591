from pathlib import Path

import pytest

from migrations.runner import Migration, MigrationError, apply_migrations, discover


def test_migrations_are_discovered_in_order_and_every_placeholder_is_known() -> None:
    migrations = discover()
    assert [m.version for m in migrations] == sorted(m.version for m in migrations)
    assert migrations[0].version == "0001"
    for migration in migrations:
        migration.render({"embedding_dimension": "384", "app_role": "quire_app"})


def test_the_dimension_is_rendered_into_the_vector_column() -> None:
    chunks = next(m for m in discover() if "vector({{embedding_dimension}})" in m.template)
    assert "vector(1024)" in chunks.render({"embedding_dimension": "1024", "app_role": "quire_app"})


def test_an_unknown_placeholder_is_an_error_not_a_blank() -> None:
    with pytest.raises(MigrationError, match="unknown parameter"):
        Migration("0009", "x", "SELECT {{nope}}").render({})


def test_a_badly_named_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "1_first.sql").write_text("SELECT 1", encoding="utf-8")
    with pytest.raises(MigrationError, match="NNNN_snake_case"):
        discover(tmp_path)


@pytest.mark.parametrize(("dimension", "role"), [(0, "quire_app"), (2001, "quire_app"), (384, "Robert'); --")])
def test_parameters_are_checked_before_any_connection(dimension: int, role: str) -> None:
    with pytest.raises(MigrationError):
        apply_migrations("postgresql://nobody@127.0.0.1:1/none", embedding_dimension=dimension, app_role=role)


def test_every_tenant_table_forces_row_level_security_in_the_same_file() -> None:
    import re

    table = re.compile(
        r"CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:\w+\.)?(\w+)\s*\((.*?)\n\);",
        re.IGNORECASE | re.DOTALL,
    )
    tenant_tables = 0
    for migration in discover():
        for name, body in table.findall(migration.template):
            if not re.search(r"^\s*tenant_id\s", body, re.MULTILINE):
                continue
            tenant_tables += 1
            assert f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY" in migration.template, name
            assert f"ALTER TABLE {name} FORCE ROW LEVEL SECURITY" in migration.template, name
            assert re.search(rf"CREATE POLICY \w+ ON {name}\b", migration.template), name
    assert tenant_tables >= 3


def test_a_python_step_beside_a_migration_is_part_of_it(tmp_path: Path) -> None:
    (tmp_path / "0001_first.sql").write_text("SELECT 1", encoding="utf-8")
    (tmp_path / "0002_second.sql").write_text("SELECT 2", encoding="utf-8")
    step = tmp_path / "0002_second.py"
    step.write_text("def migrate(conn):\n    conn.append('ran')\n", encoding="utf-8")
    first, second = discover(tmp_path)
    assert first.step is None and first.python_step() is None
    ran: list[str] = []
    migrate = second.python_step()
    assert migrate is not None
    migrate(ran)  # type: ignore[arg-type]
    assert ran == ["ran"]
    # Editing the step after it ran is editing the migration: its checksum moves.
    checksum = second.checksum
    step.write_text("def migrate(conn):\n    conn.append('other')\n", encoding="utf-8")
    assert discover(tmp_path)[1].checksum != checksum
    # A step-less migration keeps the checksum it always had (its SQL's alone).
    assert first.checksum == Migration("0001", "first", "SELECT 1").checksum


def test_a_python_step_without_migrate_is_refused(tmp_path: Path) -> None:
    (tmp_path / "0001_first.sql").write_text("SELECT 1", encoding="utf-8")
    (tmp_path / "0001_first.py").write_text("def run(conn):\n    pass\n", encoding="utf-8")
    with pytest.raises(MigrationError, match=r"defines migrate\(conn\)"):
        discover(tmp_path)[0].python_step()


def test_the_language_migration_has_its_python_step() -> None:
    languages = next(m for m in discover() if m.name == "languages")
    assert languages.step is not None and languages.python_step() is not None
