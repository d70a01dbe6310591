"""What every Lambda function runs from: one code asset and one dependency layer.

The code asset holds the packages Lambda imports (`functions/`, `shared/` without the local runtime,
`migrations/`). The layer holds the runtime dependencies named in pyproject.toml, installed for the
Lambda architecture (arm64, CPython 3.12) from wheels only: nothing is compiled, nothing needs Docker.
This module copies files and runs pip; it never imports runtime code (docs/architecture.md, its import rules).
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = REPO_ROOT / "build"
CODE_DIR = BUILD_DIR / "lambda-code"
LAYER_DIR = BUILD_DIR / "lambda-layer"

LAMBDA_PYTHON = "3.12"
# Graviton: the cheaper architecture, and every dependency publishes aarch64 wheels.
LAMBDA_PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
CODE_PACKAGES = ("functions", "shared", "migrations")
# The local runtime (the `quire` CLI, the embedded stack) is never packaged for Lambda.
NOT_PACKAGED = ("shared/local", "shared/cli")
# The repository's own packages the layer carries: data that changes with the dependencies, not with the code
# (the fonts PDF exports are written in).
LAYER_PACKAGES = ("quire_fonts",)
_STAMP = ".requirements-sha256"


def lambda_python(home: Path | None = None) -> str | None:
    """A CPython of Lambda's version on this machine (QUIRE_LAMBDA_PYTHON, `python3.12`, or pyenv's), to
    compile the package's bytecode with; None when there is none."""
    home = home or Path.home()
    candidates = [os.environ.get("QUIRE_LAMBDA_PYTHON"), shutil.which(f"python{LAMBDA_PYTHON}")]
    candidates += [
        str(path) for path in sorted(home.glob(f".pyenv/versions/{LAMBDA_PYTHON}.*/bin/python{LAMBDA_PYTHON}"))
    ]
    for candidate in filter(None, candidates):
        try:
            answer = subprocess.run(
                [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except OSError:
            continue
        if answer.returncode == 0 and answer.stdout.strip() == LAMBDA_PYTHON:
            return candidate
    return None


def compile_bytecode(directory: Path, python: str | None, *, deployed_at: str, strict: bool = False) -> bool:
    """Compile every module under `directory` for Lambda's Python, checked by hash, not by timestamp (asset
    zips reset file times): Lambda's file system is read-only, so bytecode not shipped is compiled again on
    every cold start (about 0.5 s per function here). False when no such Python is at hand."""
    if python is None:
        return False
    # Paths recorded as Lambda will see them (`deployed_at`), not where this machine built them: the same
    # sources give the same bytes, so an asset's hash changes only when its code does.
    compiled = subprocess.run(
        [
            python,
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            "--invalidation-mode",
            "unchecked-hash",
            "-s",
            str(directory),
            "-p",
            deployed_at,
            str(directory),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if compiled.returncode != 0 and strict:
        raise SyntaxError(f"Python {LAMBDA_PYTHON} cannot compile the Lambda code:\n{compiled.stdout[-4000:]}")
    # A dependency's module that does not compile under 3.12 (test data, a template) is left as source.
    return compiled.returncode in (0, 1)


def ships_bytecode(directory: Path) -> bool:
    return any(directory.rglob(f"*.cpython-{LAMBDA_PYTHON.replace('.', '')}.pyc"))


class LayerNotBuilt(Exception):
    """The dependency layer is missing or was built from other requirements; the message says how to build it."""


def runtime_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """The project's runtime dependencies: exactly what the layer holds."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return list(project["dependencies"])


def _requirements_digest(requirements: list[str]) -> str:
    # Whether bytecode can be compiled here is part of it: a layer built without it is rebuilt where it can be.
    bytecode = "bytecode" if lambda_python() else "source"
    material = "\n".join([LAMBDA_PYTHON, bytecode, *LAMBDA_PLATFORMS, *requirements, *_layer_package_digests()])
    return hashlib.sha256(material.encode()).hexdigest()


def _layer_package_digests(root: Path = REPO_ROOT) -> list[str]:
    return [
        f"{path.relative_to(root)}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
        for package in LAYER_PACKAGES
        for path in sorted((root / package).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    ]


def copy_layer_packages(target: Path, root: Path = REPO_ROOT) -> None:
    """The repository's own layer packages into the layer's `python/` directory."""
    for package in LAYER_PACKAGES:
        shutil.copytree(root / package, target / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def stage_code(out: Path = CODE_DIR, root: Path = REPO_ROOT) -> Path:
    """Copy the packaged sources into `out` (replacing what was there) and return it."""
    if out.exists():
        shutil.rmtree(out)
    skipped = {root / path for path in NOT_PACKAGED}
    for package in CODE_PACKAGES:
        for source in sorted((root / package).rglob("*")):
            if any(source == skip or skip in source.parents for skip in skipped):
                continue
            if "__pycache__" in source.parts or source.suffix == ".pyc" or source.is_dir():
                continue
            target = out / source.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    compile_bytecode(out, lambda_python(), deployed_at="/var/task", strict=True)
    return out


def layer_is_current(out: Path = LAYER_DIR) -> bool:
    stamp = out / _STAMP
    return stamp.is_file() and stamp.read_text().strip() == _requirements_digest(runtime_requirements())


def build_layer(out: Path = LAYER_DIR) -> Path:
    """Install the runtime requirements for Lambda's platform into `out/python` (pip, wheels only)."""
    requirements = runtime_requirements()
    if out.exists():
        shutil.rmtree(out)
    platforms = [argument for platform in LAMBDA_PLATFORMS for argument in ("--platform", platform)]
    # Captured: pip's chatter (mirror warnings) is noise unless it fails.
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--quiet",
            "--no-compile",
            "--only-binary=:all:",
            "--implementation",
            "cp",
            "--python-version",
            LAMBDA_PYTHON,
            *platforms,
            "--target",
            str(out / "python"),
            *requirements,
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    if installed.returncode != 0:
        raise LayerNotBuilt(f"pip could not build the Lambda dependency layer:\n{installed.stderr[-4000:]}")
    copy_layer_packages(out / "python")
    # Console scripts and caches are of no use in a layer.
    shutil.rmtree(out / "python" / "bin", ignore_errors=True)
    for cache in (out / "python").rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)
    compile_bytecode(out / "python", lambda_python(), deployed_at="/opt/python")
    (out / _STAMP).write_text(_requirements_digest(requirements) + "\n")
    return out


def layer_directory(out: Path = LAYER_DIR, *, build: bool = True) -> Path:
    """The built layer; built now when it is missing or stale and `build` is true."""
    if layer_is_current(out):
        return out
    if not build:
        raise LayerNotBuilt(f"the Lambda dependency layer in {out} is missing or stale: run `make layer`")
    return build_layer(out)


if __name__ == "__main__":
    print(layer_directory())
    print(stage_code())
