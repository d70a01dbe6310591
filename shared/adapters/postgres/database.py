"""PostgreSQL access as the application role, one tenant per transaction.

Row-level security is forced on every tenant table; the policies read `quire.tenant_id`, which is set
with `set_config(..., true)`: transaction-local, so a pooled connection never carries a tenant into
the next transaction.

Locally the role connects with the password in its URL. On AWS it connects to the RDS Proxy with IAM
authentication: the password is a SigV4-signed token that is valid for 15 minutes, and the pool opens
connections whenever it needs them (minutes or hours later), so each new connection signs its own.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import psycopg
from pgvector.psycopg.vector import register_vector_info
from psycopg.conninfo import make_conninfo
from psycopg.types import TypeInfo
from psycopg_pool import ConnectionPool

from shared.adapters.aws.retrying import LazyClient
from shared.domain.auth import IDENTIFIER_PATTERN

TENANT_SETTING = "quire.tenant_id"
# The snapshot this thread (or task) is reading in, if any: (database, tenant, its connection).
_SNAPSHOT: ContextVar["tuple[Database, str, psycopg.Connection[Any]] | None"] = ContextVar("snapshot", default=None)


@dataclass(frozen=True)
class IamEndpoint:
    """Where the application role connects with IAM authentication (on AWS: the RDS Proxy)."""

    host: str
    port: int
    dbname: str
    user: str
    region: str
    # verify-full checks the server's certificate and name against `sslrootcert`; require only encrypts.
    sslmode: Literal["require", "verify-full"] = "verify-full"
    sslrootcert: str | None = None


def rds_auth_token(rds_client: object, endpoint: IamEndpoint) -> Callable[[], str]:
    """A function that signs a fresh IAM authentication token for `endpoint` each time it is called.

    `rds_client` is a boto3 RDS client, or a zero-argument factory for one (built on first use). Signing
    is local (no request leaves the process) and uses the client's current credentials, so a token
    signed after Lambda refreshed them carries the new ones.
    """
    client: LazyClient[Any] = LazyClient(rds_client)

    def sign() -> str:
        return str(
            client.get().generate_db_auth_token(
                DBHostname=endpoint.host, Port=endpoint.port, DBUsername=endpoint.user, Region=endpoint.region
            )
        )

    return sign


class VectorType:
    """pgvector's adapter for each new connection: a vector goes to the server in binary (4 bytes a
    dimension), and as pgvector's `Vector` it is a parameter of type vector, not text to cast. The type's id
    is read once per process (the first connection), not on every connection the pool opens."""

    def __init__(self) -> None:
        self._info: TypeInfo | None = None

    def register(self, conn: psycopg.Connection[Any]) -> None:
        if self._info is None:
            self._info = fetch_vector_type(conn)
            # Reading the type's id opened a transaction; the pool takes only an idle connection.
            conn.commit()
        # Without the extension there is nothing to register: the health check says what is missing.
        if self._info is not None:
            register_vector_info(conn, self._info)


def fetch_vector_type(conn: psycopg.Connection[Any]) -> TypeInfo | None:
    return TypeInfo.fetch(conn, "vector")


def _with_password(options: dict[str, Any], password: Callable[[], str]) -> dict[str, Any]:
    return {**options, "password": password()}


class Database:
    def __init__(
        self,
        url: str,
        *,
        max_size: int = 4,
        wait_seconds: float = 10,
        password: Callable[[], str] | None = None,
    ) -> None:
        """`url`: a PostgreSQL URL or conninfo string. `password`, when given, is called for every new
        connection the pool opens and overrides any password in `url`."""
        # prepare_threshold=None: server-side prepared statements freeze plans across SET changes and pin
        # connections behind RDS Proxy.
        options: dict[str, Any] = {"prepare_threshold": None, "autocommit": False}
        self._pool = ConnectionPool(
            url,
            min_size=0,
            max_size=max_size,
            # A callable is resolved by the pool on every connection attempt (psycopg_pool >= 3.3).
            kwargs=options if password is None else partial(_with_password, options, password),
            open=False,
            configure=VectorType().register,
            name="quire-app",
            # How long a request waits for a connection before failing (not retried forever).
            timeout=wait_seconds,
            # Checked as it leaves the pool (one empty round trip) and replaced if the server dropped it while
            # it sat idle: Aurora pausing or failing over, an idle timeout, the proxy's connection borrow limit.
            check=ConnectionPool.check_connection,
        )
        self._opened = False

    @classmethod
    def with_iam_auth(
        cls, endpoint: IamEndpoint, token: Callable[[], str], *, max_size: int = 4, wait_seconds: float = 10
    ) -> "Database":
        """Connect as `endpoint.user` with a token from `token` (see `rds_auth_token`) per new connection."""
        conninfo = make_conninfo(
            host=endpoint.host,
            port=endpoint.port,
            dbname=endpoint.dbname,
            user=endpoint.user,
            sslmode=endpoint.sslmode,
            **({"sslrootcert": endpoint.sslrootcert} if endpoint.sslrootcert else {}),
        )
        return cls(conninfo, max_size=max_size, wait_seconds=wait_seconds, password=token)

    def _ensure_open(self) -> None:
        # Opened on first use, not at import: a cold start that never touches the database pays nothing.
        if not self._opened:
            self._pool.open(wait=False)
            self._opened = True

    @contextmanager
    def tenant_transaction(self, tenant_id: str) -> Iterator[psycopg.Connection[Any]]:
        """A transaction in which RLS shows and accepts only `tenant_id`'s rows; inside `snapshot(tenant_id)`, the
        snapshot's own."""
        if not IDENTIFIER_PATTERN.fullmatch(tenant_id):
            raise ValueError(f"invalid tenant id {tenant_id!r}")
        active = _SNAPSHOT.get()
        if active is not None and active[0] is self and active[1] == tenant_id:
            yield active[2]
            return
        self._ensure_open()
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, tenant_id))
            yield conn

    @contextmanager
    def snapshot(self, tenant_id: str) -> Iterator[None]:
        """Every `tenant_transaction(tenant_id)` of this thread inside is one REPEATABLE READ transaction: reads that
        see the database at one moment (a search's lanes and its citations see a file's metadata before a change or
        after it, never both). Nested, the outer one holds."""
        active = _SNAPSHOT.get()
        if active is not None and active[0] is self and active[1] == tenant_id:
            yield
            return
        if not IDENTIFIER_PATTERN.fullmatch(tenant_id):
            raise ValueError(f"invalid tenant id {tenant_id!r}")
        self._ensure_open()
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, tenant_id))
            token = _SNAPSHOT.set((self, tenant_id, conn))
            try:
                yield
            finally:
                _SNAPSHOT.reset(token)

    @contextmanager
    def unscoped_transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A transaction with no tenant: RLS shows it no tenant rows. For health checks and catalog reads."""
        self._ensure_open()
        with self._pool.connection() as conn, conn.transaction():
            yield conn

    def server_facts(self) -> dict[str, str | None]:
        """PostgreSQL and pgvector versions as the application role sees them."""
        with self.unscoped_transaction() as conn:
            row = conn.execute(
                "SELECT current_setting('server_version'),"
                " (SELECT extversion FROM pg_extension WHERE extname = 'vector'), current_user"
            ).fetchone()
        assert row is not None
        return {"postgres": row[0], "pgvector": row[1], "role": row[2]}

    def close(self) -> None:
        if self._opened:
            self._pool.close()
            self._opened = False
