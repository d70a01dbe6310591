"""A subverted parser cannot reach the database (security review, finding 1 and probe P10): even handed the
URL and password, the sandbox's child cannot open a connection to the real embedded PostgreSQL, over TCP or
its Unix socket, while the parent can.

The child imports its work by name: the work is module-level here, and this module imports only psycopg."""

import json
import platform
from typing import TYPE_CHECKING

import psycopg
import pytest

from shared.sandbox import pack, run_in_child, unpack

if TYPE_CHECKING:  # not at run time: the child imports this module, and the fixtures' imports are heavy
    from tests.integration.conftest import MigratedDatabase

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"),
    reason="the seccomp filter is written for Linux on x86_64 and aarch64",
)


def read_another_tenants_files(payload: bytes) -> bytes:
    """What the review's probe does with a stolen URL: connect, pick a tenant, count its files."""
    header, _ = unpack(payload)
    try:
        with psycopg.connect(header["url"], connect_timeout=5) as connection:
            connection.execute("SELECT set_config('quire.tenant_id', 'victim', true)")
            row = connection.execute("SELECT count(*) FROM files").fetchone()
        return json.dumps({"connected": True, "files": row[0] if row else None}).encode()
    except psycopg.Error as error:
        return json.dumps({"connected": False, "error": str(error)[:500]}).encode()


def unix_socket_url(url: str) -> str:
    """The same server and role through its Unix socket, where it has one."""
    params = psycopg.conninfo.conninfo_to_dict(url)
    with psycopg.connect(url) as connection:
        directory = connection.execute("SELECT current_setting('unix_socket_directories')").fetchone()
    params["host"] = str(directory[0]).split(",")[0].strip() if directory and directory[0] else ""
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in params.items() if v is not None})


def connect_from_child(url: str) -> dict[str, object]:
    answer = run_in_child(read_another_tenants_files, pack({"url": url}), timeout_seconds=60, memory_limit_bytes=None)
    assert isinstance(answer, bytes), answer
    decoded: dict[str, object] = json.loads(answer)
    return decoded


def test_a_child_handed_the_database_url_cannot_connect_to_the_database(migrated_database: "MigratedDatabase") -> None:
    url = migrated_database.app_url
    with psycopg.connect(url) as connection:  # the parent can: the URL is right
        assert connection.execute("SELECT 1").fetchone() == (1,)
    # libpq's socket() fails with EPERM; it words that "connection is bad: no error details available".
    assert connect_from_child(url) == {"connected": False, "error": "connection is bad: no error details available"}


def test_a_child_cannot_connect_through_the_databases_unix_socket_either(migrated_database: "MigratedDatabase") -> None:
    url = unix_socket_url(migrated_database.owner_url)
    if not psycopg.conninfo.conninfo_to_dict(url).get("host"):
        pytest.skip("this server listens on no Unix socket")
    with psycopg.connect(url) as connection:
        assert connection.execute("SELECT 1").fetchone() == (1,)
    # libpq's socket() fails with EPERM; it words that "connection is bad: no error details available".
    assert connect_from_child(url) == {"connected": False, "error": "connection is bad: no error details available"}
