"""What a Lambda cold start pays for: nothing it does not use."""

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_importing_the_api_handler_does_not_import_the_database_driver() -> None:
    probe = "import sys, functions.api.handler; print('psycopg' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "False"
