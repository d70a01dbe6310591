"""The Lambda packages as they deploy (infra/package_checks.py): the real dependency layer, built here when it is
missing or stale (pip, arm64 CPython 3.12 wheels from the package index; cached in build/ by its requirements
stamp), holds only aarch64 native libraries and the versions pyproject.toml resolves to, and every function of
each environment's template, code plus layers, stays under Lambda's unzipped limit.

Each check also meets a package that must fail it, so a check that reads nothing cannot pass by accident."""

import shutil
from pathlib import Path

import pydantic_core._pydantic_core
import pytest

from infra.package_checks import (
    DEPENDENCY_LAYER_ASSET,
    EM_AARCH64,
    LAMBDA_UNZIPPED_LIMIT_BYTES,
    FunctionPackage,
    PackagePart,
    elf_machine,
    function_packages,
    installed_versions,
    native_library_findings,
    size_findings,
    size_table,
    version_findings,
)
from infra.packaging import LAMBDA_PLATFORMS, layer_directory_in_background, reference_versions
from tests.infra.synthesis import Synthesis
from tests.infra.template import is_quire_handler

# A fresh build downloads the wheels (about 90 s without a pip cache); the default per-test timeout is 300 s.
BUILD_TIMEOUT = 900


@pytest.fixture(scope="module")
def layer() -> Path:
    # The same build when something started it earlier in the session, so it ran while other tests did.
    return layer_directory_in_background().result()


@pytest.mark.timeout(BUILD_TIMEOUT)
def test_every_native_library_in_the_layer_is_aarch64_for_cpython_312(layer: Path) -> None:
    python_dir = layer / "python"
    assert native_library_findings(python_dir) == []
    # The layer has native code to check: pydantic-core, psycopg-binary's libpq, cryptography...
    libraries = [path for path in python_dir.rglob("*.so*") if path.is_file()]
    assert len(libraries) > 20
    assert {elf_machine(path) for path in libraries} == {EM_AARCH64}


@pytest.mark.timeout(BUILD_TIMEOUT)
def test_each_distribution_in_the_layer_is_the_version_its_requirements_resolve_to(layer: Path) -> None:
    in_layer, reference = installed_versions(layer / "python"), reference_versions(layer)
    assert version_findings(in_layer, reference) == []
    # The packages whose newest releases ship manylinux_2_28 aarch64 wheels only are there in their newest.
    assert {"psycopg", "psycopg-binary", "pydantic-core", "pillow"} <= set(in_layer)


@pytest.mark.timeout(BUILD_TIMEOUT)
def test_each_function_with_its_layers_stays_under_the_unzipped_limit(synthesis: Synthesis, layer: Path) -> None:
    packages = function_packages(synthesis.outdir, dependency_layer=layer)
    assert size_findings(packages) == [], size_table(packages)
    # Every Quire function was measured with the real dependency layer, not the synthesis's stand-in.
    ours = [package for package in packages if is_quire_handler(package.handler)]
    assert len(ours) >= 10
    for package in ours:
        assert DEPENDENCY_LAYER_ASSET in [part.name for part in package.layers], package
        assert package.unzipped_bytes > 100 * 1024 * 1024, size_table([package])


def test_a_library_for_another_machine_or_cpython_fails_the_native_check(tmp_path: Path) -> None:
    """pydantic-core as installed here: an x86_64 extension module (renamed, as if tagged for aarch64)."""
    python_dir = tmp_path / "python"
    extension = Path(str(pydantic_core._pydantic_core.__file__))
    (python_dir / "package").mkdir(parents=True)
    shutil.copy(extension, python_dir / "package" / "_speedups.cpython-311-aarch64-linux-gnu.so")
    (python_dir / "package" / "libfake.so.1").write_text("a linker script, not a library")
    findings = native_library_findings(python_dir)
    assert findings == [
        "package/_speedups.cpython-311-aarch64-linux-gnu.so: ELF for x86_64, not aarch64",
        "package/_speedups.cpython-311-aarch64-linux-gnu.so: an extension module for CPython 311, not 3.12",
        "package/libfake.so.1: named a shared library, but not an ELF file",
    ]


def test_a_downgraded_or_missing_distribution_fails_the_version_check() -> None:
    """What manylinux2014_aarch64 alone gave (measured): psycopg 3.2.13 where the requirements resolve to 3.3.9."""
    findings = version_findings(
        {"psycopg": "3.2.13", "pydantic": "2.14.4", "stray": "1.0"},
        {"psycopg": "3.3.9", "pydantic": "2.14.4", "pillow": "13.0.0"},
    )
    assert [finding.split(":")[0] for finding in findings] == ["pillow", "psycopg", "stray 1.0"]
    assert "the layer has 3.2.13" in findings[1] and "3.3.9" in findings[1]


def test_the_layer_takes_every_manylinux_glibc_lambda_loads() -> None:
    """Amazon Linux 2023 (python3.12's) has glibc 2.34; pip takes only the tags it is given."""
    assert {f"manylinux_2_{minor}_aarch64" for minor in range(17, 35)} | {"manylinux2014_aarch64"} == set(
        LAMBDA_PLATFORMS
    )
    assert not [platform for platform in LAMBDA_PLATFORMS if "x86_64" in platform or "_2_35" in platform]


def test_a_function_over_the_limit_fails_the_size_check() -> None:
    code = PackagePart("code", 3 * 1024 * 1024)
    under = FunctionPackage("Quire-dev", "Fits", "functions.x.handler", code, (PackagePart("layer", 200_000_000),))
    over = FunctionPackage(
        "Quire-dev",
        "TooBig",
        "functions.y.handler",
        code,
        (PackagePart("layer", 200_000_000), PackagePart("adapter", LAMBDA_UNZIPPED_LIMIT_BYTES - 200_000_000)),
    )
    assert size_findings([under]) == []
    (finding,) = size_findings([under, over])
    assert finding.startswith("Quire-dev TooBig (functions.y.handler): 265,289,728 bytes unzipped")
