"""Suite-wide wiring: each test gets the marker of the suite folder it lives in."""

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
EVENTS_DIR = REPO_ROOT / "events"
_SUITES = ("unit", "integration", "infra", "e2e")
_OWN_BASETEMP = pytest.StashKey[Path]()
_SESSION_PASSED = pytest.StashKey[bool]()

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


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """As root, each session's temporary files go under a directory of its own in /tmp, not pytest's shared
    /tmp/pytest-of-root: PostgreSQL runs as the unprivileged `pgserver` account and reaches its data directory
    there through o+x on each ancestor, and every pytest session that starts on the machine re-tightens
    /tmp/pytest-of-root to 0700, which cut a running server off from its files (`PANIC: could not open file
    ".../global/pg_control": Permission denied`, then "server closed the connection" in the tests). Workers of
    pytest-xdist are handed a folder inside the controller's; an explicit --basetemp is kept."""
    _outbound_guard()
    if os.geteuid() == 0 and config.option.basetemp is None and not hasattr(config, "workerinput"):
        config.option.basetemp = tempfile.mkdtemp(prefix="quire-pytest-")
        config.stash[_OWN_BASETEMP] = Path(config.option.basetemp)
    if os.geteuid() == 0 and config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):
        # Two workers starting their first PostgreSQL at once on a machine without the `pgserver` account would both
        # run useradd, and one would fail: the account is made here (EmbeddedPostgres makes it), before any worker.
        from shared.local.embedded_postgres import EmbeddedPostgres

        EmbeddedPostgres(Path(config.option.basetemp) / "pgdata", secrets_file=Path(config.option.basetemp) / "unused")


def _outbound_guard() -> None:
    """No test's webhook sender resolves a name or connects anywhere but loopback, whatever sender a test builds:
    the system resolver and connector it falls back to are replaced by refusals (a test gives its sender a fake
    resolver, tests/webhook_receiver.py). So no packet leaves the machine, not even a DNS query."""
    import ipaddress
    import socket

    from shared.adapters import outbound_http

    real_connect = outbound_http._connect

    def no_resolving(host: str, port: int) -> list[Any]:
        raise socket.gaierror(socket.EAI_NONAME, f"tests resolve no names ({host}): give the sender a FakeResolver")

    def loopback_only(address: tuple[str, int], timeout: float) -> socket.socket:
        if not ipaddress.ip_address(address[0]).is_loopback:
            raise ConnectionRefusedError(f"tests connect to loopback only, not {address[0]}")
        return real_connect(address, timeout)

    outbound_http.system_resolver = no_resolving
    outbound_http._connect = loopback_only


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's own temporary directory is removed when every test passed (or nothing was written there, as
    with --help), kept for a look when one failed."""
    own = config.stash.get(_OWN_BASETEMP, None)
    if own is None or not own.exists():
        return
    if config.stash.get(_SESSION_PASSED, False) or not any(own.iterdir()):
        shutil.rmtree(own, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_SESSION_PASSED] = exitstatus == 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.fspath)).relative_to(REPO_ROOT / "tests").parts
        if parts and parts[0] in _SUITES:
            item.add_marker(getattr(pytest.mark, parts[0]))


def load_event(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS_DIR / name).read_text(encoding="utf-8"))
    return loaded
