"""Real PostgreSQL (embedded, or DATABASE_URL's) and a real S3 API (moto's server) for integration tests."""

import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest

from migrations.runner import apply_migrations
from shared.adapters.postgres.database import Database
from shared.local.embedded_postgres import EmbeddedPostgres, free_port
from shared.local.paths import LOCAL_AWS_ENVIRONMENT
from shared.local.supervisor import app_url_from_owner, set_app_role_password


@pytest.fixture(scope="session")
def postgres_owner_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An owner (migration) connection to a PostgreSQL with pgvector; embedded unless DATABASE_URL is set."""
    external = os.environ.get("DATABASE_URL")
    if external:
        yield external
        return
    root = tmp_path_factory.mktemp("postgres")
    server = EmbeddedPostgres(root / "pgdata", secrets_file=root / "admin.secret")
    address = server.start()
    try:
        yield server.owner_url(address)
    finally:
        server.stop()


@dataclass(frozen=True)
class MigratedDatabase:
    owner_url: str
    app_url: str
    name: str


def create_database(owner_url: str, prefix: str = "quire_test") -> str:
    """A new empty database on the same server; returns the owner URL for it."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    params = psycopg.conninfo.conninfo_to_dict(owner_url)
    params["dbname"] = name
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in params.items() if v is not None})


@pytest.fixture(scope="session")
def migrated_database(postgres_owner_url: str) -> MigratedDatabase:
    owner_url = create_database(postgres_owner_url)
    apply_migrations(owner_url, embedding_dimension=384)
    password = secrets.token_urlsafe(16)
    set_app_role_password(owner_url, password)
    return MigratedDatabase(
        owner_url=owner_url,
        app_url=app_url_from_owner(owner_url, password),
        name=psycopg.conninfo.conninfo_to_dict(owner_url)["dbname"],  # type: ignore[arg-type]
    )


@pytest.fixture
def app_database(migrated_database: MigratedDatabase) -> Iterator[Database]:
    """The application's own access path: the non-owner role, pooled, tenant per transaction."""
    database = Database(migrated_database.app_url, max_size=2)
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def owner_connection(migrated_database: MigratedDatabase) -> Iterator[psycopg.Connection]:
    with psycopg.connect(migrated_database.owner_url, autocommit=True) as conn:
        yield conn


@pytest.fixture(scope="session")
def aws_credentials() -> None:
    for name, value in LOCAL_AWS_ENVIRONMENT.items():
        os.environ.setdefault(name, value)


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory, aws_credentials: None) -> Iterator[str]:
    from shared.local.s3_server import LocalS3Server

    server = LocalS3Server(tmp_path_factory.mktemp("s3") / "snapshot.pickle", port=free_port())
    server.start()
    try:
        yield server.endpoint
    finally:
        server.stop()
