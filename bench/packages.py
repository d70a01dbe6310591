"""What each Lambda function deploys and what its cold start imports.

Sizes: every function ships the same code asset (infra/packaging.py `stage_code`) and the same dependency
layer (`layer_directory`: arm64 CPython 3.12 wheels), so each function's package is that pair. Unzipped, code
plus layers must stay under Lambda's 250 MB (262,144,000 bytes) limit: `baseline` is the limit and `ratio` the
fraction of it used. Zipped sizes are what the CDK uploads: its asset zips use archiver's default deflate
(zlib level 6, the same default as Python's zlib), every file deflated.

Cold import: each handler module imported in a fresh interpreter, with the environment infra gives a function
(QUIRE_RUNTIME=aws, POWERTOOLS_*, a database URL that nothing connects to at import) and LAMBDA_TASK_ROOT set,
so the powertools tracer patches the SDKs as it does on Lambda. Measured twice: without bytecode for our code
and the layer (every cold start compiles what it imports; the standard library keeps its bytecode, as in
Lambda's runtime) and with it. The package ships bytecode when the machine that built it has a CPython 3.12 to
compile with (infra/packaging.py); the headline figure is the mode actually packaged. The layer holds
aarch64 wheels that cannot be imported on this x86_64 machine, so the imports run against .venv, which holds
the same packages (for CPython 3.11).
"""

import io
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infra.package_checks import tree_bytes
from infra.packaging import LAYER_STAMP, layer_directory, ships_bytecode, stage_code

REPO_ROOT = Path(__file__).resolve().parent.parent
LAMBDA_UNZIPPED_LIMIT_BYTES = 250 * 1024 * 1024
MIB = 1024 * 1024
IMPORT_RUNS = 5
TOP_OFFENDERS = 5
# Node's zlib default, which the CDK's asset zips use (cdk-assets: archiver('zip') with no level).
DEFLATE_LEVEL = 6

# What infra/constructs/functions.py sets on every function, plus what Lambda itself sets.
LAMBDA_ENVIRONMENT = {
    "QUIRE_RUNTIME": "aws",
    "QUIRE_ENVIRONMENT": "bench",
    "QUIRE_BUCKET": "quire-bench-originals",
    "QUIRE_EMBEDDING_DIMENSION": "1024",
    # As infra/constructs/database.py connects functions (IAM authentication through the RDS Proxy); never
    # connected to here: a handler connects on its first query, not at import.
    "QUIRE_DATABASE_IAM_AUTH": "true",
    "QUIRE_DATABASE_HOST": "quire-bench.proxy.invalid",
    "QUIRE_DATABASE_PORT": "5432",
    "QUIRE_DATABASE_NAME": "quire",
    "QUIRE_DATABASE_USER": "quire_app",
    "QUIRE_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:000000000000:stateMachine:quire-bench",
    "POWERTOOLS_SERVICE_NAME": "quire",
    "POWERTOOLS_LOG_LEVEL": "INFO",
    "POWERTOOLS_METRICS_NAMESPACE": "Quire",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
    "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
}
# What the stack hands the MCP function (infra/constructs/mcp.py), with a copy of a made-up pool's keys
# (_bench_jwks): its app is built at import, as uvicorn imports it behind the Lambda Web Adapter.
_POOL = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_bench"
MCP_ENVIRONMENT = {
    "QUIRE_COGNITO_ISSUER_URL": _POOL,
    "QUIRE_COGNITO_CLIENT_IDS": "bench-client",
    "QUIRE_MCP_ISSUER_URL": _POOL,
    "QUIRE_MCP_RESOURCE_URL": "https://bench.execute-api.us-east-1.amazonaws.com/mcp",
    "QUIRE_MCP_ALLOWED_HOSTS": "bench.execute-api.us-east-1.amazonaws.com",
}
_PROBE = "import time\nbegun = time.perf_counter()\nimport {module}\nprint(time.perf_counter() - begun)\n"
_IMPORTTIME = re.compile(r"import time:\s+(\d+)\s+\|\s+(\d+)\s+\|( *)(\S+)")
_MARK = "-- the handler's import starts here --"
# Our own packages are what the import chain starts from, not an offender.
_OWN = ("functions", "shared", "migrations")


def handler_modules(root: Path = REPO_ROOT) -> dict[str, str]:
    """Each function (a folder of functions/ with a handler.py) and its handler module; the MCP function's is its
    ASGI app, which uvicorn imports behind the Lambda Web Adapter."""
    modules = {
        path.parent.name: f"functions.{path.parent.name}.handler"
        for path in sorted(root.glob("functions/*/handler.py"))
    }
    if (root / "functions" / "mcp" / "app.py").exists():
        modules["mcp"] = "functions.mcp.app"
    return dict(sorted(modules.items()))


def zipped_bytes(directory: Path, *, exclude: tuple[str, ...] = ()) -> int:
    """The size of the asset zip of `directory`, made as the CDK makes it (in memory)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=DEFLATE_LEVEL) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file() and path.name not in exclude:
                archive.write(path, path.relative_to(directory).as_posix())
    return buffer.getbuffer().nbytes


def lambda_environment(function: str, task_root: Path, pycache: Path) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("QUIRE_", "POWERTOOLS_"))}
    for unwanted in ("DATABASE_URL", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "POWERTOOLS_TRACE_DISABLED"):
        environment.pop(unwanted, None)
    return {
        **environment,
        **LAMBDA_ENVIRONMENT,
        **({**MCP_ENVIRONMENT, "QUIRE_COGNITO_JWKS": _bench_jwks()} if function == "mcp" else {}),
        "AWS_LAMBDA_FUNCTION_NAME": f"quire-bench-{function}",
        "LAMBDA_TASK_ROOT": str(task_root),
        "PYTHONPATH": str(REPO_ROOT),
        # Bytecode is read from (and written to) this tree only: the repository's and .venv's caches are not used.
        "PYTHONPYCACHEPREFIX": str(pycache),
    }


def _bench_jwks() -> str:
    """A JWKS document of one freshly made RS256 public key, as the deploy-time copy of a pool's keys."""
    import json

    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    key = json.loads(RSAAlgorithm.to_jwk(rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()))
    return json.dumps({"keys": [{**key, "kid": "bench", "alg": "RS256", "use": "sig"}]})


def prime_bytecode(module: str, environment: dict[str, str]) -> None:
    """Compile everything `module` imports into the environment's bytecode tree (the warm-up run)."""
    subprocess.run([sys.executable, "-c", f"import {module}"], cwd=REPO_ROOT, env=environment, check=True)


def without_our_bytecode(environment: dict[str, str]) -> dict[str, str]:
    """The same environment with the bytecode of the repository and .venv removed and none written: what the
    packages pay as built today (the layer is installed --no-compile, the code asset skips .pyc files, and
    Lambda's file system is read-only), while the standard library keeps its bytecode as Lambda's runtime does."""
    # The bytecode tree mirrors absolute source paths; .venv is inside the repository.
    shutil.rmtree(
        Path(environment["PYTHONPYCACHEPREFIX"]) / REPO_ROOT.relative_to(REPO_ROOT.anchor), ignore_errors=True
    )
    return {**environment, "PYTHONDONTWRITEBYTECODE": "1"}


def import_seconds(module: str, environment: dict[str, str]) -> float:
    completed = subprocess.run(
        [sys.executable, "-c", _PROBE.format(module=module)],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(completed.stdout.strip().splitlines()[-1])


def import_offenders(module: str, environment: dict[str, str]) -> dict[str, float]:
    """The packages whose import costs the most (cumulative ms, `python -X importtime`), ours excluded; a
    package imported from several places counts each time it was entered from outside itself."""
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import sys\nprint({_MARK!r}, file=sys.stderr)\nimport {module}"],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    entries = [
        (len(match.group(3)), match.group(4), int(match.group(2)) / 1000)
        # Only what the handler's import imported: not the interpreter's own start-up (site, encodings, ...).
        for match in map(_IMPORTTIME.match, completed.stderr.split(_MARK, 1)[-1].splitlines())
        if match is not None
    ]
    # importtime prints a module after everything it imported, one indent deeper: read backwards, each entry's
    # importer is the nearest shallower entry before it. A package's cost is what entering it from outside cost.
    costs: dict[str, float] = {}
    importers: list[tuple[int, str]] = []
    for depth, name, cumulative_ms in reversed(entries):
        while importers and importers[-1][0] >= depth:
            importers.pop()
        package = name.split(".")[0]
        entered_from = importers[-1][1].split(".")[0] if importers else None
        if entered_from != package and package not in _OWN:
            costs[package] = costs.get(package, 0.0) + cumulative_ms
        importers.append((depth, name))
    ranked = sorted(costs.items(), key=lambda item: item[1], reverse=True)[:TOP_OFFENDERS]
    return {name: round(ms, 1) for name, ms in ranked}


def size_figures(result: Callable[..., dict[str, Any]], functions: list[str]) -> list[dict[str, Any]]:
    layer_dir = layer_directory()
    with tempfile.TemporaryDirectory(prefix="quire-bench-code-") as scratch:
        code_dir = stage_code(Path(scratch) / "code")
        code_unzipped, code_zipped = tree_bytes(code_dir), zipped_bytes(code_dir)
    # The layer's stamp file is excluded from its asset (infra/constructs/functions.py).
    layer_unzipped = tree_bytes(layer_dir, exclude=[LAYER_STAMP])
    layer_zipped = zipped_bytes(layer_dir, exclude=(".requirements-sha256",))
    limit_mib = LAMBDA_UNZIPPED_LIMIT_BYTES / MIB
    shared = {
        "code_unzipped_mib": round(code_unzipped / MIB, 2),
        "code_zipped_mib": round(code_zipped / MIB, 2),
        "layer_unzipped_mib": round(layer_unzipped / MIB, 2),
        "layer_zipped_mib": round(layer_zipped / MIB, 2),
        "note": "every function ships the same code asset and the same dependency layer",
        "deflate_level": DEFLATE_LEVEL,
    }

    def against_limit(figure: dict[str, Any], unzipped: int) -> dict[str, Any]:
        figure["baseline"] = round(limit_mib, 3)
        figure["ratio"] = round(unzipped / LAMBDA_UNZIPPED_LIMIT_BYTES, 3)
        return figure

    figures = [
        against_limit(
            result(
                "dependency layer alone, unzipped (of Lambda's 250 MB limit)",
                [layer_unzipped / MIB],
                "MiB",
                zipped_mib=shared["layer_zipped_mib"],
                layer=str(layer_dir.relative_to(REPO_ROOT)),
            ),
            layer_unzipped,
        )
    ]
    for function in functions:
        unzipped, zipped = code_unzipped + layer_unzipped, code_zipped + layer_zipped
        figures.append(
            against_limit(
                result(
                    f"package {function}: code + layer, unzipped (of the 250 MB limit)",
                    [unzipped / MIB],
                    "MiB",
                    **shared,
                ),
                unzipped,
            )
        )
        figures.append(result(f"package {function}: code + layer, zipped", [zipped / MIB], "MiB", **shared))
    return figures


def import_figures(
    result: Callable[..., dict[str, Any]], modules: dict[str, str], *, bytecode_shipped: bool
) -> list[dict[str, Any]]:
    figures = []
    for function, module in modules.items():
        with tempfile.TemporaryDirectory(prefix="quire-bench-import-") as scratch:
            task_root, pycache = Path(scratch) / "task", Path(scratch) / "pycache"
            task_root.mkdir()
            compiled = lambda_environment(function, task_root, pycache)
            prime_bytecode(module, compiled)
            with_bytecode = [import_seconds(module, compiled) * 1000 for _ in range(IMPORT_RUNS)]
            offenders_with_bytecode = import_offenders(module, compiled)
            as_packaged = without_our_bytecode(compiled)
            runs = [import_seconds(module, as_packaged) * 1000 for _ in range(IMPORT_RUNS)]
            offenders = import_offenders(module, as_packaged)
        # The package ships bytecode when the build machine has a CPython of Lambda's version to compile it
        # (infra/packaging.py): then a cold start imports what was compiled, else it compiles as it imports.
        shipped, other = (with_bytecode, runs) if bytecode_shipped else (runs, with_bytecode)
        figures.append(
            result(
                f"cold import {module} (as packaged: {'with' if bytecode_shipped else 'no'} bytecode)",
                shipped,
                "ms",
                with_bytecode_ms=round(statistics.median(with_bytecode), 1),
                without_bytecode_ms=round(statistics.median(runs), 1),
                other_mode_runs=[round(run, 1) for run in other],
                top_offenders_cumulative_ms=offenders,
                top_offenders_with_bytecode_ms=offenders_with_bytecode,
                fresh_interpreters=IMPORT_RUNS,
                imported_from=f".venv (CPython {sys.version_info.major}.{sys.version_info.minor}, x86_64): the "
                "layer's aarch64 wheels cannot import on this machine; .venv holds the same packages",
                measured="perf_counter around the import in a fresh interpreter: interpreter start-up excluded",
            )
        )
    return figures


def figures(result: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    modules = handler_modules()
    with tempfile.TemporaryDirectory(prefix="quire-bench-code-") as scratch:
        shipped = ships_bytecode(stage_code(Path(scratch) / "code")) and ships_bytecode(layer_directory())
    imports = import_figures(result, modules, bytecode_shipped=shipped)
    _against_the_api(imports)
    return [*size_figures(result, list(modules)), *imports]


def _against_the_api(imports: list[dict[str, Any]]) -> None:
    """The MCP function's cold import with the API function's as its baseline (issue 17 asks for the two side by
    side: both answer a caller's request, one as an ASGI app behind the Web Adapter)."""
    by_module = {figure["name"].split()[2]: figure for figure in imports}
    api, mcp = by_module.get("functions.api.handler"), by_module.get("functions.mcp.app")
    if api and mcp and api["value"]:
        mcp["baseline"] = api["value"]
        mcp["ratio"] = round(mcp["value"] / api["value"], 2)


def _timed_main() -> None:  # pragma: no cover - `python -m bench.packages`: these figures alone
    from bench.run import result

    begun = time.perf_counter()
    for figure in figures(result):
        print(
            f"{figure['name']:<75} {figure['value']:>10} {figure['unit']:<4} ratio={figure['ratio']} {figure['data']}"
        )
    print(f"measured in {time.perf_counter() - begun:.0f} s")


if __name__ == "__main__":
    _timed_main()
