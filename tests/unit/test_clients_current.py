"""The clients cannot drift from the API: the committed OpenAPI document, the Python client's models and operations
and the TypeScript client's types are what `make clients` writes from the server's document now, and the Python
client imports nothing of the server's code."""

import ast
import copy
import sys

import pytest

from clients.codegen.generate import OPENAPI_TYPESCRIPT, PYTHON_PACKAGE, STALE, openapi_document, stale_files
from clients.codegen.python import models_module, operations, operations_module

# What the client may import besides itself: the standard library and its one dependency.
ALLOWED_THIRD_PARTY = {"httpx2"}


def test_the_generated_clients_are_current_with_the_servers_openapi_document() -> None:
    with_typescript = OPENAPI_TYPESCRIPT.exists()
    stale = stale_files(with_typescript=with_typescript)
    assert not stale, f"{', '.join(str(path) for path in stale)}: {STALE}"
    if not with_typescript:
        pytest.skip("node_modules has no openapi-typescript (npm ci): the TypeScript types were not compared")


def test_a_changed_field_or_route_changes_what_is_generated() -> None:
    document = openapi_document()
    changed = copy.deepcopy(document)
    changed["components"]["schemas"]["FileView"]["properties"]["filename"]["type"] = "integer"
    assert models_module(changed) != models_module(document)
    del changed["paths"]["/v1/me"]
    assert operations_module(changed) != operations_module(document)


def test_every_route_of_the_document_is_a_method_of_the_client() -> None:
    from quire_client import Quire

    document = openapi_document()
    routes = {(verb, path) for path, methods in document["paths"].items() for verb in methods}
    named = {(verb.lower(), path): name for name, verb, path, _ in operations(document)}
    assert set(named) == routes
    assert all(callable(getattr(Quire, name, None)) for name in named.values())
    assert len(set(named.values())) == len(named)


def test_the_python_client_imports_only_itself_httpx2_and_the_standard_library() -> None:
    imported: set[str] = set()
    for module in sorted(PYTHON_PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(), filename=str(module))):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    foreign = {name for name in imported if name not in sys.stdlib_module_names} - {"quire_client"}
    assert foreign == ALLOWED_THIRD_PARTY
    assert not imported & {"shared", "functions", "migrations", "infra", "clients"}
