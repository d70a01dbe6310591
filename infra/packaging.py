"""What every Lambda function runs from: one code asset and one dependency layer.

The code asset holds the packages Lambda imports (`functions/`, `shared/` without the local runtime,
`migrations/`). The layer holds the runtime dependencies named in pyproject.toml, installed for the
Lambda architecture (arm64, CPython 3.12) from wheels only: nothing is compiled, nothing needs Docker.
Beside it, the versions the same requirements resolve to on this machine, which infra/package_checks.py
holds the layer to.
This module copies files and runs pip; it never imports runtime code (docs/architecture.md, its import rules).
"""

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import tomllib
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = REPO_ROOT / "build"
CODE_DIR = BUILD_DIR / "lambda-code"
LAYER_DIR = BUILD_DIR / "lambda-layer"

LAMBDA_PYTHON = "3.12"
# Lambda's python3.12 runs on Amazon Linux 2023, whose glibc is 2.34: a wheel for any manylinux glibc up to that
# loads. pip takes exactly the tags it is given (manylinux_2_28 does not imply the older ones), so each is named,
# newest first as pip ranks them natively. manylinux2014 alone silently picks older releases of the packages
# whose new wheels are manylinux_2_28 only (psycopg 3.2.13 for 3.3.9, pillow 12.2.0 for 13.0.0, measured).
# Graviton: the cheaper architecture, and every dependency publishes aarch64 wheels.
LAMBDA_GLIBC = (2, 34)
LAMBDA_PLATFORMS = (
    *(f"manylinux_2_{minor}_aarch64" for minor in range(LAMBDA_GLIBC[1], 16, -1)),
    "manylinux2014_aarch64",
)
CODE_PACKAGES = ("functions", "shared", "migrations")
# The local runtime (the `quire` CLI, the embedded stack) is never packaged for Lambda.
NOT_PACKAGED = ("shared/local", "shared/cli")
# The repository's own packages the layer carries: data that changes with the dependencies, not with the code
# (the fonts PDF exports are written in, the language detector's model).
LAYER_PACKAGES = ("quire_fonts", "quire_langid")
LAYER_STAMP = ".requirements-sha256"
# Beside the layer, not in it (its directory is the asset): what the same requirements resolve to on this machine.
_REFERENCE_SUFFIX = ".reference-versions.json"


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
    stamp = out / LAYER_STAMP
    return stamp.is_file() and stamp.read_text().strip() == _requirements_digest(runtime_requirements())


def _pip_install(
    requirements: list[str], target: Path, *, platforms: tuple[str, ...], report: Path | None
) -> list[str]:
    """pip installing `requirements` for CPython 3.12 from wheels only into `target`; with `report`, a dry run that
    writes pip's installation report there instead (pip takes a target Python only with --target, even then)."""
    platform_options = [argument for platform in platforms for argument in ("--platform", platform)]
    dry_run = ["--dry-run", "--ignore-installed", "--report", str(report)] if report else []
    return [
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
        *platform_options,
        *dry_run,
        "--target",
        str(target),
        *requirements,
    ]


def reference_path(out: Path = LAYER_DIR) -> Path:
    return out.with_name(out.name + _REFERENCE_SUFFIX)


def _reference_versions_from(report: Path) -> dict[str, str]:
    installs = json.loads(report.read_text(encoding="utf-8"))["install"]
    return {canonical_name(item["metadata"]["name"]): item["metadata"]["version"] for item in installs}


def canonical_name(name: str) -> str:
    """A distribution's name as the package index compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


class _ReferenceResolution:
    """pip resolving the same requirements for CPython 3.12 on this machine's own platform (its tags, its glibc)
    instead of the layer's: the versions the layer must hold. It runs beside the layer's install (a dry run, it
    reads metadata only), so a build takes the longer of the two, not their sum."""

    def __init__(self, requirements: list[str]) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix="quire-layer-reference-")
        scratch = Path(self._scratch.name)
        self._report, self._errors = scratch / "report.json", scratch / "errors.txt"
        # Errors to a file, not a pipe nobody reads while the layer installs (a full pipe would stall pip).
        with self._errors.open("w") as errors:
            self._process = subprocess.Popen(
                _pip_install(requirements, scratch / "target", platforms=(), report=self._report),
                stdout=subprocess.DEVNULL,
                stderr=errors,
            )

    def versions(self) -> dict[str, str]:
        try:
            if self._process.wait() != 0:
                errors = self._errors.read_text(errors="replace")
                raise LayerNotBuilt(f"pip could not resolve the requirements for this machine:\n{errors[-4000:]}")
            return _reference_versions_from(self._report)
        finally:
            self._scratch.cleanup()

    def cancel(self) -> None:
        self._process.kill()
        self._process.wait()
        self._scratch.cleanup()


def reference_versions(out: Path = LAYER_DIR) -> dict[str, str]:
    """What the layer's requirements resolve to for CPython 3.12 on this machine's platform, as resolved when the
    layer was built (resolved now, and recorded, for a layer built without it)."""
    digest = (out / LAYER_STAMP).read_text().strip() if (out / LAYER_STAMP).is_file() else None
    recorded = reference_path(out)
    if digest and recorded.is_file():
        reference = json.loads(recorded.read_text(encoding="utf-8"))
        if reference.get("layer") == digest:
            return dict(reference["versions"])
    versions = _ReferenceResolution(runtime_requirements()).versions()
    if digest:
        _record_reference(out, digest, versions)
    return versions


def _record_reference(out: Path, digest: str, versions: dict[str, str]) -> None:
    reference_path(out).write_text(
        json.dumps({"layer": digest, "python": LAMBDA_PYTHON, "versions": versions}, indent=1, sort_keys=True) + "\n",
        encoding="utf-8",
    )


def build_layer(out: Path = LAYER_DIR) -> Path:
    """Install the runtime requirements for Lambda's platform into `out/python` (pip, wheels only), and record
    beside it what they resolve to on this machine's own platform (package_checks compares the two)."""
    requirements = runtime_requirements()
    if out.exists():
        shutil.rmtree(out)
    reference = _ReferenceResolution(requirements)
    # Captured: pip's chatter (mirror warnings) is noise unless it fails.
    installed = subprocess.run(
        _pip_install(requirements, out / "python", platforms=LAMBDA_PLATFORMS, report=None),
        check=False,
        capture_output=True,
        text=True,
    )
    if installed.returncode != 0:
        reference.cancel()
        raise LayerNotBuilt(f"pip could not build the Lambda dependency layer:\n{installed.stderr[-4000:]}")
    copy_layer_packages(out / "python")
    # Console scripts and caches are of no use in a layer.
    shutil.rmtree(out / "python" / "bin", ignore_errors=True)
    for cache in (out / "python").rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)
    compile_bytecode(out / "python", lambda_python(), deployed_at="/opt/python")
    digest = _requirements_digest(requirements)
    _record_reference(out, digest, reference.versions())
    (out / LAYER_STAMP).write_text(digest + "\n")
    return out


def layer_directory(out: Path = LAYER_DIR, *, build: bool = True) -> Path:
    """The built layer; built now when it is missing or stale and `build` is true."""
    if layer_is_current(out):
        return out
    if not build:
        raise LayerNotBuilt(f"the Lambda dependency layer in {out} is missing or stale: run `make layer`")
    # One build at a time per directory, across processes (two test workers may both ask for it): the second
    # waits, then finds it current.
    out.parent.mkdir(parents=True, exist_ok=True)
    with (out.parent / f".{out.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return out if layer_is_current(out) else build_layer(out)


_background_builds: dict[Path, Future[Path]] = {}
_background_lock = threading.Lock()


def layer_directory_in_background(out: Path = LAYER_DIR) -> Future[Path]:
    """`layer_directory(out)` in a thread, started once per process. A build mostly waits on the package index
    (about 20 s of CPU in 60-90 s), so a test session can start it early and run other tests meanwhile; the
    future's result is the layer, or raises what the build raised."""
    with _background_lock:
        if out not in _background_builds:
            executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lambda-layer")
            _background_builds[out] = executor.submit(layer_directory, out)
            executor.shutdown(wait=False)
        return _background_builds[out]


if __name__ == "__main__":
    print(layer_directory())
    print(stage_code())
