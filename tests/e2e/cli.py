"""The quire CLI run in a child process, as a user would run it."""

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT


def quire(
    workdir: Path, *args: str, check: bool = True, database_url: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("DATABASE_URL", None)
    if database_url:
        env["DATABASE_URL"] = database_url
    completed = subprocess.run(
        [sys.executable, "-m", "shared.cli", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    if check and completed.returncode != 0:
        raise AssertionError(f"quire {' '.join(args)} exited {completed.returncode}:\n{completed.stderr}")
    return completed
