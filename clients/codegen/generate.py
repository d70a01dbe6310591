"""`make clients`: the API's clients written from the OpenAPI document the server builds in process (no server runs):
clients/openapi.json, the Python client's models and operations (clients/python_codegen.py), and the TypeScript
client's types (openapi-typescript, from package.json). `--check` writes nothing and exits 1 naming every file that
differs from what it would write (tests/unit/test_clients_current.py runs it in `make test`)."""

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clients.codegen.python import models_module, operations_module

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "clients" / "openapi.json"
PYTHON_PACKAGE = ROOT / "clients" / "python" / "src" / "quire_client"
TYPESCRIPT_SCHEMA = ROOT / "clients" / "typescript" / "src" / "schema.d.ts"
OPENAPI_TYPESCRIPT = ROOT / "node_modules" / ".bin" / "openapi-typescript"
STALE = "run make clients"


def openapi_document() -> dict[str, Any]:
    """The document `GET /v1/openapi.json` answers, built from the same resolver."""
    from functions.api.handler import openapi

    document: dict[str, Any] = json.loads(str(openapi().body))
    return document


def document_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def python_files(document: dict[str, Any]) -> dict[Path, str]:
    return {
        PYTHON_PACKAGE / "models.py": models_module(document),
        PYTHON_PACKAGE / "operations.py": operations_module(document),
    }


def typescript_schema(document_path: Path) -> str:
    """openapi-typescript's types for the document at `document_path` (it reads a file, writes stdout). A field with
    a default stays optional (--default-non-nullable=false): a request may leave it out, an answer may too."""
    if not OPENAPI_TYPESCRIPT.exists():
        raise SystemExit(f"{OPENAPI_TYPESCRIPT} is missing: npm ci installs it (package.json)")
    answer = subprocess.run(
        [str(OPENAPI_TYPESCRIPT), str(document_path), "--default-non-nullable=false"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return answer.stdout


def stale_files(with_typescript: bool = True) -> list[Path]:
    """The generated files that differ from what the server's document gives now (none when current)."""
    document = openapi_document()
    expected = {DOCUMENT: document_text(document), **python_files(document)}
    stale = [path for path, text in expected.items() if not path.exists() or path.read_text() != text]
    # openapi-typescript reads the committed document, so only once that is current.
    if (
        with_typescript
        and DOCUMENT not in stale
        and not _current(TYPESCRIPT_SCHEMA, lambda: typescript_schema(DOCUMENT))
    ):
        stale.append(TYPESCRIPT_SCHEMA)
    return stale


def _current(path: Path, expected: Callable[[], str]) -> bool:
    return path.exists() and path.read_text() == expected()


def write_all() -> list[Path]:
    document = openapi_document()
    written = {DOCUMENT: document_text(document), **python_files(document)}
    for path, text in written.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    TYPESCRIPT_SCHEMA.parent.mkdir(parents=True, exist_ok=True)
    TYPESCRIPT_SCHEMA.write_text(typescript_schema(DOCUMENT))
    return [*written, TYPESCRIPT_SCHEMA]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is not current")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        for path in stale:
            print(f"{path.relative_to(ROOT)} differs from the API's OpenAPI document: {STALE}", file=sys.stderr)
        return 1 if stale else 0
    for path in write_all():
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
