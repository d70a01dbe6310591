"""docs/architecture.md's import rules ("Layers and their import rules"), enforced by reading every module's imports."""

import ast
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

SDKS = frozenset({"boto3", "botocore", "psycopg", "psycopg_pool", "pgvector", "moto", "pgserver", "jwt", "aws_cdk"})
DOMAIN_MAY_IMPORT = frozenset({"pydantic", "pydantic_core", "typing_extensions"})


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path = REPO_ROOT) -> set[str]:
    """Absolute names of every module `path` imports, at any depth: lazy and relative imports included."""
    package = module_name(path, root).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path, root)
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.add(module)
            # `from shared import bootstrap` imports shared.bootstrap: count each imported name as a module.
            names.update(f"{module}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def _root(name: str) -> str:
    return name.split(".", maxsplit=1)[0]


def _under(name: str, *prefixes: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


# Each rule: the imports of one module that break it (an empty set means the module keeps it).
def domain_violations(names: set[str]) -> set[str]:
    return {
        n
        for n in names
        if not (_root(n) in sys.stdlib_module_names or _root(n) in DOMAIN_MAY_IMPORT or _under(n, "shared.domain"))
    }


def service_violations(names: set[str]) -> set[str]:
    inward_only = {n for n in names if _under(n, "shared.adapters", "shared.local", "shared.bootstrap", "functions")}
    return {n for n in names if _root(n) in SDKS} | inward_only


def handler_violations(names: set[str]) -> set[str]:
    return {n for n in names if _root(n) in SDKS or _under(n, "shared.adapters", "shared.local")}


def adapter_violations(names: set[str]) -> set[str]:
    return {n for n in names if _under(n, "shared.services", "shared.bootstrap", "shared.local", "functions")}


def infra_violations(names: set[str]) -> set[str]:
    return {n for n in names if _root(n) in {"shared", "functions", "migrations"} and not _under(n, "shared.domain")}


def lambda_code_violations(names: set[str]) -> set[str]:
    return {n for n in names if _under(n, "shared.local", "shared.cli") or _root(n) in {"moto", "pgserver"}}


def imported_test_modules(names: set[str]) -> set[str]:
    # What several test modules share lives in tests/builders/ or a suite's helper module, never in a test module.
    return {n for n in names if _root(n) == "tests" and any(part.startswith("test_") for part in n.split("."))}


def files(folder: str, root: Path = REPO_ROOT) -> list[Path]:
    return sorted((root / folder).rglob("*.py"))


def rel(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


# shared/local/ and shared/cli/ are the local runtime itself; they are never packaged (infra/packaging.py).
LOCAL_RUNTIME = (("shared", "local"), ("shared", "cli"))


def lambda_code(root: Path = REPO_ROOT) -> list[Path]:
    modules = [*files("shared", root), *files("functions", root)]
    return [path for path in modules if path.relative_to(root).parts[:2] not in LOCAL_RUNTIME]


LAMBDA_CODE = lambda_code()


@pytest.mark.parametrize(
    ("rule", "source", "offender"),
    [
        (domain_violations, "def f():\n    import boto3\n", "boto3"),
        (domain_violations, "from ..adapters.aws import s3_content_store\n", "shared.adapters.aws"),
        (
            service_violations,
            "from shared.adapters.postgres.database import Database\n",
            "shared.adapters.postgres.database",
        ),
        (service_violations, "import psycopg\n", "psycopg"),
        (service_violations, "from shared import bootstrap\n", "shared.bootstrap"),
        (domain_violations, "from .. import adapters\n", "shared.adapters"),
        (handler_violations, "import boto3\n", "boto3"),
        (handler_violations, "from psycopg import sql\n", "psycopg"),
        (adapter_violations, "from shared.services.health import check_health\n", "shared.services.health"),
        (infra_violations, "from shared.config import Settings\n", "shared.config"),
        (lambda_code_violations, "from shared.local.stack import up\n", "shared.local.stack"),
        (imported_test_modules, "from tests.unit import test_pdf_parser\n", "tests.unit.test_pdf_parser"),
    ],
)
def test_each_rule_catches_the_import_it_forbids(rule, source: str, offender: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Given a module at shared/domain/sneaky.py with a wrong-way import (lazy or relative)
    module = tmp_path / "shared" / "domain" / "sneaky.py"
    module.parent.mkdir(parents=True)
    module.write_text(source, encoding="utf-8")
    # When its imports are read, then the rule reports that import
    assert offender in rule(imports_of(module, root=tmp_path))


@pytest.mark.parametrize("path", files("shared/domain"), ids=rel)
def test_domain_imports_only_stdlib_pydantic_and_domain(path: Path) -> None:
    assert domain_violations(imports_of(path)) == set()


@pytest.mark.parametrize("path", [*files("shared/services"), *files("shared/ports")], ids=rel)
def test_services_and_ports_never_import_sdks_adapters_or_the_composition_root(path: Path) -> None:
    assert service_violations(imports_of(path)) == set()


@pytest.mark.parametrize("path", files("functions"), ids=rel)
def test_handlers_reach_sdks_and_adapters_only_through_the_composition_root(path: Path) -> None:
    assert handler_violations(imports_of(path)) == set()


@pytest.mark.parametrize("path", files("shared/adapters"), ids=rel)
def test_adapters_never_import_services_handlers_or_the_local_runtime(path: Path) -> None:
    assert adapter_violations(imports_of(path)) == set()


@pytest.mark.parametrize("path", files("infra"), ids=rel)
def test_infra_never_imports_runtime_code(path: Path) -> None:
    assert infra_violations(imports_of(path)) == set()


@pytest.mark.parametrize("path", LAMBDA_CODE, ids=rel)
def test_lambda_code_never_imports_the_local_runtime(path: Path) -> None:
    assert lambda_code_violations(imports_of(path)) == set()


def test_only_the_local_runtime_by_its_path_is_spared_the_lambda_code_rule(tmp_path: Path) -> None:
    # Given modules that import the local runtime: two named cli.py outside shared/cli/, two inside the runtime
    for module in ("shared/domain/cli.py", "functions/api/cli.py", "shared/cli/app.py", "shared/local/stack.py"):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("from shared.local.paths import StackPaths\n", encoding="utf-8")
    # When the Lambda code is listed, then only the runtime's own folders are left out
    checked = lambda_code(tmp_path)
    assert sorted(path.relative_to(tmp_path).as_posix() for path in checked) == [
        "functions/api/cli.py",
        "shared/domain/cli.py",
    ]
    # And the rule reports each of those two
    assert all("shared.local.paths" in lambda_code_violations(imports_of(path, root=tmp_path)) for path in checked)


@pytest.mark.parametrize("path", files("tests"), ids=rel)
def test_no_module_imports_a_test_module(path: Path) -> None:
    assert imported_test_modules(imports_of(path)) == set()


# The HTTP API and the agent tools are two surfaces over one application layer: neither imports the other, but for
# the route that dispatches tools (POST /v1/tools/{name}); what both send is in functions/views/.
TOOLS_ROUTE = "functions/api/routes/tools.py"


def tools_surface_violations(names: set[str]) -> set[str]:
    return {n for n in names if _under(n, "functions.api")}


def api_surface_violations(names: set[str], *, dispatches_tools: bool = False) -> set[str]:
    allowed = ("functions.tools.dispatcher", "functions.tools.models") if dispatches_tools else ()
    return {n for n in names if _under(n, "functions.tools") and not _under(n, *allowed)}


def views_violations(names: set[str]) -> set[str]:
    return {n for n in names if _under(n, "functions") and not _under(n, "functions.views")}


@pytest.mark.parametrize(
    ("rule", "source", "offender"),
    [
        (tools_surface_violations, "from functions.api.schemas import FileSummary\n", "functions.api.schemas"),
        (api_surface_violations, "from functions.tools.catalog import TOOLS\n", "functions.tools.catalog"),
        (views_violations, "from functions.tools import models\n", "functions.tools.models"),
    ],
)
def test_each_surface_rule_catches_the_import_it_forbids(rule, source: str, offender: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    module = tmp_path / "functions" / "tools" / "sneaky.py"
    module.parent.mkdir(parents=True)
    module.write_text(source, encoding="utf-8")
    assert offender in rule(imports_of(module, root=tmp_path))


@pytest.mark.parametrize("path", files("functions/tools"), ids=rel)
def test_the_tools_never_import_the_http_api(path: Path) -> None:
    assert tools_surface_violations(imports_of(path)) == set()


@pytest.mark.parametrize("path", files("functions/api"), ids=rel)
def test_the_http_api_imports_the_tools_only_to_dispatch_them(path: Path) -> None:
    assert api_surface_violations(imports_of(path), dispatches_tools=rel(path) == TOOLS_ROUTE) == set()


@pytest.mark.parametrize("path", files("functions/views"), ids=rel)
def test_the_wire_models_import_no_handler_package(path: Path) -> None:
    assert views_violations(imports_of(path)) == set()


def import_cycles(folder: str, root: Path = REPO_ROOT) -> list[list[str]]:
    """The groups of modules under `folder` that import one another round in a circle (Tarjan's components)."""
    modules = {module_name(path, root): path for path in sorted((root / folder).rglob("*.py"))}
    graph = {
        name: sorted(n for n in imports_of(path, root) if n in modules and n != name) for name, path in modules.items()
    }
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(name: str) -> None:
        order[name] = low[name] = len(order)
        stack.append(name)
        for imported in graph[name]:
            if imported not in order:
                visit(imported)
                low[name] = min(low[name], low[imported])
            elif imported in stack:
                low[name] = min(low[name], order[imported])
        if low[name] == order[name]:
            group = []
            while (member := stack.pop()) != name:
                group.append(member)
            if group:
                cycles.append(sorted([name, *group]))

    for name in graph:
        if name not in order:
            visit(name)
    return cycles


def test_the_cycle_rule_finds_a_circle_through_a_lazy_import(tmp_path: Path) -> None:
    package = tmp_path / "functions" / "api"
    package.mkdir(parents=True)
    (package / "handler.py").write_text("from functions.api import routes\n", encoding="utf-8")
    (package / "routes.py").write_text("def container():\n    from functions.api import handler\n", encoding="utf-8")
    (package / "errors.py").write_text("from functions.api import routes\n", encoding="utf-8")
    assert import_cycles("functions", root=tmp_path) == [["functions.api.handler", "functions.api.routes"]]


def test_no_handler_module_imports_itself_round_a_circle() -> None:
    # The routes find the container in the composition root, not in the handler that includes them.
    assert import_cycles("functions") == []
