"""Suite-wide wiring: each test gets the marker of the suite folder it lives in."""

import json
import os
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
EVENTS_DIR = REPO_ROOT / "events"
_SUITES = ("unit", "integration", "infra", "e2e")

# Helpers that assert and were moved out of test modules keep pytest's detailed assertion messages.
pytest.register_assert_rewrite(
    "tests.builders", "tests.contracts", "tests.integration.api_steps", "tests.infra.template"
)

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")


def pytest_collection_finish(session: pytest.Session) -> None:
    """The Lambda layer (pip, mostly waiting on the package index) builds in the background from the start
    when a test that needs it is selected, so the other suites run meanwhile (tests/infra/test_lambda_packages.py)."""
    if any(item.nodeid.startswith("tests/infra/test_lambda_packages.py") for item in session.items):
        from infra.packaging import layer_directory_in_background

        layer_directory_in_background()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.fspath)).relative_to(REPO_ROOT / "tests").parts
        if parts and parts[0] in _SUITES:
            item.add_marker(getattr(pytest.mark, parts[0]))


def load_event(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS_DIR / name).read_text(encoding="utf-8"))
    return loaded
