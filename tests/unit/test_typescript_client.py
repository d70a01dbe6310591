"""The TypeScript client (clients/typescript): its code and its example type-check against the types generated from
the API's document (tsc --noEmit, TypeScript pinned in package.json); the types' currency is
tests/unit/test_clients_current.py's."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TSC = ROOT / "node_modules" / ".bin" / "tsc"


@pytest.mark.slow
def test_the_typescript_client_and_its_example_type_check() -> None:
    if not TSC.exists():
        pytest.skip("node_modules has no tsc (npm ci installs it from package-lock.json)")
    project = ROOT / "clients" / "typescript"
    checked = subprocess.run(
        [str(TSC), "--noEmit", "-p", str(project)], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (project / "examples" / "upload-and-wait.ts").exists()
