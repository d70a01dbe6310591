"""What a Lambda cold start pays for: nothing it does not use."""

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_importing_the_api_handler_does_not_import_the_database_driver() -> None:
    # Nor building the process's container and asking it what every request's middleware asks (the request rate,
    # the authorization policy): a route that never reads the database never loads the driver.
    probe = (
        "import sys, functions.api.handler; from shared.bootstrap import container; c = container();"
        " c.request_rate, c.authorization, c.settings; print('psycopg' in sys.modules)"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "False"
