"""IAM database authentication: each new pooled connection is opened with a freshly signed token.

An IAM token is valid for 15 minutes and the pool opens connections whenever it needs them, so a
password fixed when the pool was built would soon be refused. Offline: the tokens are signed by a real
boto3 RDS client with made-up credentials, and psycopg's connect is replaced by a recorder.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus

from shared.adapters.postgres import database as database_module
from shared.adapters.postgres.database import Database, IamEndpoint, rds_auth_token
from shared.bootstrap import ConfigurationError, Container
from shared.config import Settings

PROXY = "quire-dev-database.proxy-abcdefghijkl.eu-west-1.rds.amazonaws.com"
ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"


class FakeConnection:
    """What the pool and Database touch of a psycopg connection."""

    def __init__(self) -> None:
        self.pgconn = SimpleNamespace(transaction_status=TransactionStatus.IDLE)
        self.closed = False
        self.autocommit = False  # the pool's liveness check toggles it around an empty query

    def __enter__(self) -> "FakeConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        yield

    def execute(self, *args: Any) -> None:
        return None

    def commit(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True


@dataclass
class RecordedConnects:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def connect(self, conninfo: str = "", **kwargs: Any) -> FakeConnection:
        self.calls.append((conninfo, kwargs))
        return FakeConnection()


@dataclass
class CountingSigner:
    """A real boto3 RDS client, counting the tokens it signs."""

    client: Any
    signed: list[str] = field(default_factory=list)

    def generate_db_auth_token(self, **kwargs: Any) -> str:
        token = str(self.client.generate_db_auth_token(**kwargs))
        self.signed.append(token)
        return token


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> RecordedConnects:
    recorder = RecordedConnects()
    monkeypatch.setattr(psycopg.Connection, "connect", recorder.connect)
    # No server to read pgvector's type ids from.
    monkeypatch.setattr(database_module, "fetch_vector_type", lambda connection: None)
    return recorder


@pytest.fixture
def signer() -> CountingSigner:
    session = boto3.session.Session(
        aws_access_key_id=ACCESS_KEY, aws_secret_access_key="not-a-real-secret", region_name="eu-west-1"
    )
    return CountingSigner(session.client("rds"))


def endpoint() -> IamEndpoint:
    return IamEndpoint(host=PROXY, port=5432, dbname="quire", user="quire_app", region="eu-west-1")


def token_fields(token: str) -> tuple[str, dict[str, str]]:
    """`host:port/?Action=connect&...`: the address and the presigned query."""
    parts = urlsplit(f"https://{token}")
    return parts.netloc, {name: values[0] for name, values in parse_qs(parts.query).items()}


def test_each_new_connection_is_opened_with_its_own_signed_token(
    connects: RecordedConnects, signer: CountingSigner
) -> None:
    # Given a pool that authenticates with IAM: nothing is signed until a connection is opened
    database = Database.with_iam_auth(endpoint(), rds_auth_token(signer, endpoint()), max_size=2)
    assert signer.signed == []
    try:
        # When two transactions run at once (two connections)
        with database.unscoped_transaction(), database.unscoped_transaction():
            pass
    finally:
        database.close()
    # Then each connection signed a token of its own at the moment it was opened, and was handed it
    assert len(connects.calls) == 2
    assert len(signer.signed) == 2
    assert [kwargs["password"] for _, kwargs in connects.calls] == signer.signed


def test_the_password_is_a_sigv4_presigned_connect_for_quire_app(
    connects: RecordedConnects, signer: CountingSigner
) -> None:
    database = Database.with_iam_auth(endpoint(), rds_auth_token(signer, endpoint()))
    try:
        with database.unscoped_transaction():
            pass
    finally:
        database.close()
    [(_, kwargs)] = connects.calls
    address, query = token_fields(kwargs["password"])
    assert address == f"{PROXY}:5432"
    assert query["Action"] == "connect"
    assert query["DBUser"] == "quire_app"
    assert query["X-Amz-Expires"] == "900"
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    access_key, _date, region, service, terminator = query["X-Amz-Credential"].split("/")
    assert (access_key, region, service, terminator) == (ACCESS_KEY, "eu-west-1", "rds-db", "aws4_request")
    assert len(query["X-Amz-Signature"]) == 64


def test_the_connection_goes_to_the_proxy_as_quire_app_over_verified_tls(
    connects: RecordedConnects, signer: CountingSigner
) -> None:
    verified = IamEndpoint(
        host=PROXY, port=5432, dbname="quire", user="quire_app", region="eu-west-1", sslrootcert="/opt/ca.pem"
    )
    database = Database.with_iam_auth(verified, rds_auth_token(signer, verified))
    try:
        with database.unscoped_transaction():
            pass
    finally:
        database.close()
    [(conninfo, kwargs)] = connects.calls
    assert conninfo_to_dict(conninfo) == {
        "host": PROXY,
        "port": "5432",
        "dbname": "quire",
        "user": "quire_app",
        "sslmode": "verify-full",
        "sslrootcert": "/opt/ca.pem",
    }
    # The options every application connection has, whatever its authentication
    assert kwargs["prepare_threshold"] is None
    assert kwargs["autocommit"] is False


def test_a_url_keeps_its_own_password_and_signs_nothing(connects: RecordedConnects) -> None:
    # Given the local runtime's connection: a URL with the role's password
    database = Database("postgresql://quire_app:local-secret@127.0.0.1:5432/quire")
    try:
        with database.unscoped_transaction():
            pass
    finally:
        database.close()
    [(conninfo, kwargs)] = connects.calls
    assert conninfo == "postgresql://quire_app:local-secret@127.0.0.1:5432/quire"
    assert "password" not in kwargs


def aws_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "runtime": "aws",
        "region": "eu-west-1",
        "database_iam_auth": True,
        "database_host": PROXY,
        "database_name": "quire",
        "database_user": "quire_app",
    }
    return Settings(**{**values, **overrides})


def test_the_composition_root_signs_with_the_functions_credentials_and_verifies_the_proxy(
    connects: RecordedConnects, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the environment Lambda gives a function: temporary credentials with a session token
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ASIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-token")
    # boto3's default session caches the credentials it resolved first (another test's): start from none.
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    container = Container(aws_settings())
    try:
        with container.database.unscoped_transaction():
            pass
    finally:
        container.database.close()
    [(conninfo, kwargs)] = connects.calls
    _, query = token_fields(kwargs["password"])
    assert query["X-Amz-Credential"].startswith("ASIAIOSFODNN7EXAMPLE/")
    assert query["X-Amz-Security-Token"] == "session-token"
    assert query["DBUser"] == "quire_app"
    options = conninfo_to_dict(conninfo)
    assert options["sslmode"] == "verify-full"
    # The proxy's ACM certificate chains to an Amazon root in the bundle botocore ships (no download)
    assert "Amazon Root CA 1" in Path(str(options["sslrootcert"])).read_text(encoding="utf-8")


@pytest.mark.parametrize("missing", ["database_host", "database_name", "database_user"])
def test_iam_auth_without_an_address_names_the_settings(missing: str) -> None:
    container = Container(aws_settings(**{missing: None}))
    with pytest.raises(ConfigurationError, match="QUIRE_DATABASE_HOST, QUIRE_DATABASE_NAME and QUIRE_DATABASE_USER"):
        _ = container.database


def test_iam_auth_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The names infra/constructs/database.py sets on every function that reaches the database
    for name, value in {
        "QUIRE_DATABASE_IAM_AUTH": "true",
        "QUIRE_DATABASE_HOST": PROXY,
        "QUIRE_DATABASE_PORT": "5432",
        "QUIRE_DATABASE_NAME": "quire",
        "QUIRE_DATABASE_USER": "quire_app",
    }.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.database_iam_auth is True
    assert (settings.database_host, settings.database_port, settings.database_name, settings.database_user) == (
        PROXY,
        5432,
        "quire",
        "quire_app",
    )
