"""The import rules of DESIGN.md section 3, enforced by reading every module's imports."""

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

SDKS = {"boto3", "botocore", "psycopg", "psycopg_pool", "pgvector", "moto", "pgserver", "jwt", "aws_cdk"}
STDLIB_AND_PYDANTIC = {"pydantic", "pydantic_core", "typing_extensions"}


def imports_of(path: Path) -> set[str]:
    """Top-level names of every module `path` imports, at any depth (lazy imports included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def python_files(folder: str) -> list[Path]:
    return sorted((REPO_ROOT / folder).rglob("*.py"))


def roots(names: set[str]) -> set[str]:
    return {name.split(".")[0] for name in names}


def test_layering_detects_a_forbidden_import(tmp_path: Path) -> None:
    # Given a module that imports an SDK lazily, inside a function
    module = tmp_path / "sneaky.py"
    module.write_text("def f():\n    import boto3\n    from psycopg import sql\n", encoding="utf-8")
    # When its imports are read / Then both are seen
    assert roots(imports_of(module)) >= {"boto3", "psycopg"}


@pytest.mark.parametrize("path", python_files("shared/domain"), ids=lambda p: p.name)
def test_domain_imports_only_stdlib_pydantic_and_domain(path: Path) -> None:
    import sys

    for name in imports_of(path):
        root = name.split(".")[0]
        allowed = root in sys.stdlib_module_names or root in STDLIB_AND_PYDANTIC or name.startswith("shared.domain")
        assert allowed, f"{path.relative_to(REPO_ROOT)} imports {name}: the domain is stdlib + pydantic only"


@pytest.mark.parametrize("path", [*python_files("shared/services"), REPO_ROOT / "shared/ports.py"], ids=str)
def test_services_and_ports_never_import_sdks_or_adapters(path: Path) -> None:
    names = imports_of(path)
    assert not roots(names) & SDKS, f"{path.name} imports an SDK: {roots(names) & SDKS}"
    assert not {n for n in names if n.startswith(("shared.adapters", "shared.local", "shared.bootstrap"))}


@pytest.mark.parametrize("path", python_files("functions"), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_handlers_reach_sdks_and_adapters_only_through_the_composition_root(path: Path) -> None:
    names = imports_of(path)
    assert not roots(names) & SDKS, f"{path.name} imports {roots(names) & SDKS}; use shared.bootstrap"
    assert not {n for n in names if n.startswith(("shared.adapters", "shared.local"))}


@pytest.mark.parametrize("path", python_files("infra"), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_infra_never_imports_runtime_code(path: Path) -> None:
    names = roots(imports_of(path))
    assert not names & {"shared", "functions", "migrations"}, f"{path.name} imports runtime code: {names}"


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in python_files("shared") + python_files("functions")
        # shared/local/ and shared/cli.py are the local runtime itself; they are never packaged.
        if p.relative_to(REPO_ROOT).parts[:2] != ("shared", "local") and p.name != "cli.py"
    ],
    ids=lambda p: str(p.relative_to(REPO_ROOT)),
)
def test_lambda_code_never_imports_the_local_runtime(path: Path) -> None:
    names = imports_of(path)
    assert not {n for n in names if n.startswith("shared.local") or n.split(".")[0] in {"moto", "pgserver"}}
