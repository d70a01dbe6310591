"""Real PostgreSQL (embedded, or DATABASE_URL's) and a real S3 API (moto's server) for integration tests.

With DATABASE_URL pointing at a shared server, the tests create their own databases and their own
application role (roles are cluster-wide: a running stack's `quire_app` is never touched) and drop
them again at the end of the session.
"""

import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest

from migrations.runner import apply_migrations
from shared.adapters.local.jwt_tokens import LocalTokenVerifier
from shared.adapters.postgres.database import Database
from shared.bootstrap import Container, overridden
from shared.bootstrap.adapters import adapters_for
from shared.config import Settings
from shared.local.embedded_postgres import EmbeddedPostgres, free_port
from shared.local.events import EventDispatcher
from shared.local.http_api import LocalHttpApi
from shared.local.paths import LOCAL_AWS_ENVIRONMENT
from shared.local.s3_server import LocalS3Server
from shared.local.supervisor import app_url_from_owner, ensure_bucket, set_app_role_password
from tests.integration.files_stack import LIMIT, SECRET, Stack

if TYPE_CHECKING:
    from tests.builders.enforced_stack import EnforcedStack


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


def with_database(owner_url: str, name: str) -> str:
    params = psycopg.conninfo.conninfo_to_dict(owner_url)
    params["dbname"] = name
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in params.items() if v is not None})


@pytest.fixture(scope="session")
def new_database(postgres_owner_url: str) -> Iterator[Callable[[], str]]:
    """Make an empty database on the test server (owner URL returned); all are dropped at session end."""
    created: list[str] = []

    def make() -> str:
        name = f"quire_test_{secrets.token_hex(4)}"
        with psycopg.connect(postgres_owner_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        created.append(name)
        return with_database(postgres_owner_url, name)

    yield make
    with psycopg.connect(postgres_owner_url, autocommit=True) as conn:
        for name in created:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@dataclass(frozen=True)
class MigratedDatabase:
    owner_url: str
    app_url: str
    app_role: str


@pytest.fixture(scope="session")
def migrated_database(postgres_owner_url: str, new_database: Callable[[], str]) -> Iterator[MigratedDatabase]:
    owner_url = new_database()
    app_role = f"quire_app_test_{secrets.token_hex(4)}"
    apply_migrations(owner_url, embedding_dimension=384, app_role=app_role)
    password = secrets.token_urlsafe(16)
    set_app_role_password(owner_url, password, role=app_role)
    yield MigratedDatabase(
        owner_url=owner_url, app_url=app_url_from_owner(owner_url, password, role=app_role), app_role=app_role
    )
    drop_role(owner_url, app_role)


def drop_role(owner_url: str, role: str) -> None:
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {role}")
        conn.execute(f"DROP ROLE IF EXISTS {role}")


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

    server = LocalS3Server(tmp_path_factory.mktemp("s3"), port=free_port())
    server.start()
    try:
        yield server.endpoint
    finally:
        server.stop()


def stop_webhook_deliveries(container: Container) -> None:
    """The delivery thread, if a test started it, before the pool it uses closes."""
    queue = container.adapters.__dict__.get("delivery_queue")
    if queue is not None:
        queue.stop()


@pytest.fixture(scope="session")
def stack(
    migrated_database: MigratedDatabase, aws_credentials: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    from functions.api import handler as api_handler
    from functions.on_object_created import handler as created_handler
    from shared.adapters.outbound_http import PinnedHttpSender, tls_context
    from tests.webhook_receiver import RECEIVER_NAME, FakeResolver, LoopbackOnlyConnector, receiver_certificate

    port = free_port()
    bucket = f"quire-files-{port}"
    settings = Settings(
        runtime="local",
        database_url=migrated_database.app_url,
        s3_endpoint_url=f"http://127.0.0.1:{port}",
        bucket=bucket,
        max_upload_bytes=LIMIT,
        event_archive_file=tmp_path_factory.mktemp("events") / "bus.jsonl",
    )
    # Webhooks go to the tests' HTTPS receivers on 127.0.0.1 only, by a name this fake resolves (no DNS query
    # leaves the machine), with the receivers' self-signed certificate trusted.
    certificate = receiver_certificate(tmp_path_factory.mktemp("receiver"))
    resolver = FakeResolver()
    resolver.set(RECEIVER_NAME, "127.0.0.1")
    connector = LoopbackOnlyConnector()
    sender = PinnedHttpSender(
        allow_loopback=True, resolve=resolver, context=tls_context(certificate[0]), connect=connector
    )
    container = Container(settings, adapters_for(settings, webhook_sender=sender))
    events = EventDispatcher(created_handler.handler, name="test")
    events.start()
    s3 = LocalS3Server(tmp_path_factory.mktemp("s3files"), port=port, on_object_created=events.submit)
    s3.start()
    ensure_bucket(s3.endpoint, bucket)
    api = LocalHttpApi(
        api_handler.handler, LocalTokenVerifier(SECRET), public_routes=api_handler.UNAUTHENTICATED_ROUTES, port=0
    )
    # No relay runs in the background: a test publishes events when it means to (`relay_worker` runs one as the
    # local stack does, for a test that needs it).
    with overridden(container):
        api.start()
        try:
            yield Stack(
                api=api.base_url,
                bucket=bucket,
                events=events,
                container=container,
                resolver=resolver,
                receiver_certificate=certificate,
                connector=connector,
            )
        finally:
            api.stop()
            s3.stop()
            events.stop()
            stop_webhook_deliveries(container)
            container.database.close()


@pytest.fixture
def relay_worker(stack: Stack, migrated_database: MigratedDatabase) -> Iterator[None]:
    """The local stack's relay (LISTEN quire_events + a 1 s sweep) over the session's database, for this test."""
    from shared.local.event_workers import RelayWorker

    relay = RelayWorker(stack.container.event_relay, migrated_database.app_url)
    relay.start()
    try:
        yield
    finally:
        relay.stop()


@pytest.fixture
def own_stack(stack: Stack, migrated_database: MigratedDatabase, new_database: Callable[[], str]) -> Iterator[Stack]:
    """The session stack's API, S3 server and event delivery over a database and a bucket of this test's own: for a
    test whose sweeps walk every tenant and every object, which the session's other tests would otherwise fill."""
    from pydantic import SecretStr

    owner_url = new_database()
    apply_migrations(owner_url, embedding_dimension=384, app_role=migrated_database.app_role)
    name = psycopg.conninfo.conninfo_to_dict(owner_url)["dbname"]
    app_url = with_database(migrated_database.app_url, str(name))
    bucket = f"quire-own-{secrets.token_hex(4)}"
    settings = stack.container.settings
    assert settings.s3_endpoint_url is not None
    ensure_bucket(settings.s3_endpoint_url, bucket)
    own_settings = settings.model_copy(update={"database_url": SecretStr(app_url), "bucket": bucket})
    # The session's webhook sender: its fake resolver and loopback-only connector.
    container = Container(own_settings, adapters_for(own_settings, webhook_sender=stack.container.webhook_sender))
    with overridden(container):
        try:
            yield Stack(
                api=stack.api,
                bucket=bucket,
                events=stack.events,
                container=container,
                resolver=stack.resolver,
                receiver_certificate=stack.receiver_certificate,
                connector=stack.connector,
            )
        finally:
            container.workflow.drain()  # type: ignore[attr-defined]
            stop_webhook_deliveries(container)
            container.database.close()
            # Now, not at the session's end: the session's role cannot be dropped while a database grants it.
            with psycopg.connect(migrated_database.owner_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def dev_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dev stack's cloud assembly as `cdk deploy` uploads it, without the bootstrap-version rule (moto's
    CloudFormation has no bootstrap stack): the template and its assets (tests/builders/moto_stack.py)."""
    from tests.infra.synthesis import stand_in_package, synthesize_assembly

    root = tmp_path_factory.mktemp("assembly")
    return synthesize_assembly("dev", root, stand_in_package(root / "package"), bootstrap_rule=False).outdir


@pytest.fixture(scope="module")
def enforced_stack(  # noqa: PLR0917 - a fixture takes what it depends on as arguments
    request: pytest.FixtureRequest,
    dev_assembly: Path,
    aws_credentials: None,
    postgres_owner_url: str,
    new_database: Callable[[], str],
    tmp_path_factory: pytest.TempPathFactory,
) -> "Iterator[EnforcedStack]":
    """The dev stack deployed into moto under IAM enforcement, one per module, over a database of its own
    (tests/builders/enforced_stack.py)."""
    from tests.builders.enforced_stack import enforced_deployment

    owner_url = new_database()
    role = f"quire_app_iam_{secrets.token_hex(4)}"
    # The dimension the deployed functions embed at (QUIRE_EMBEDDING_DIMENSION, resolved from the template).
    apply_migrations(owner_url, embedding_dimension=1024, app_role=role)
    password = secrets.token_urlsafe(16)
    set_app_role_password(owner_url, password, role=role)
    app_url = app_url_from_owner(owner_url, password, role=role)
    stack_name = "Quire-" + request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_").replace("_", "-")
    try:
        with enforced_deployment(
            dev_assembly, app_url, tmp_path_factory.mktemp("assets"), stack_name=stack_name
        ) as deployed:
            deployed.owner_url = owner_url
            yield deployed
    finally:
        drop_role(owner_url, role)
