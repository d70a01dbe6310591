"""The local stack's long-lived process: PostgreSQL, the S3 server, the HTTP API and the MCP endpoint behind it, up
and down together.

`quire up` starts this in its own session and returns once `state.json` says ready; `quire down`
sends SIGTERM, and everything stops in reverse order.
"""

import argparse
import fcntl
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from migrations.runner import APP_ROLE, apply_migrations
from shared.adapters.local.jwt_tokens import LocalTokenIssuer, LocalTokenVerifier
from shared.adapters.local.secret_files import read_or_create_secret
from shared.domain.uploads import ORIGINALS_PREFIX
from shared.local.console_site import ConsoleSite
from shared.local.embedded_postgres import EmbeddedPostgres, ServerAddress, free_port, reserved_port
from shared.local.event_workers import RelayWorker
from shared.local.events import EventDispatcher
from shared.local.http_api import Forwarding, LocalHttpApi
from shared.local.mcp_server import LocalMcpServer, local_mcp_app
from shared.local.paths import (
    LOCAL_AWS_ENVIRONMENT,
    LOCAL_BUCKET,
    StackPaths,
    read_json,
    write_private_json,
)
from shared.local.s3_server import LocalS3Server

if TYPE_CHECKING:
    from shared.bootstrap import Container

_log = logging.getLogger("quire.supervisor")


def set_app_role_password(owner_url: str, password: str, role: str = APP_ROLE) -> None:
    with psycopg.connect(owner_url, autocommit=True) as conn:
        # A SCRAM verifier computed here, as psql's \password does: the password itself never reaches
        # the server, so no statement log can capture it.
        verifier = conn.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256").decode()
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role), sql.Literal(verifier)))


def ensure_app_role_password(owner_url: str, password: str, role: str = APP_ROLE) -> str:
    """The application role's URL, setting its password only when the stored one does not work.

    Roles are cluster-wide: resetting a password that works would cut off anyone already using it.
    """
    app_url = app_url_from_owner(owner_url, password, role)
    try:
        psycopg.connect(app_url, connect_timeout=10).close()
    except psycopg.OperationalError:
        set_app_role_password(owner_url, password, role)
    return app_url


def app_url_from_owner(owner_url: str, password: str, role: str = APP_ROLE) -> str:
    """The same server and database as `owner_url`, as the application role."""
    params = psycopg.conninfo.conninfo_to_dict(owner_url)
    params.update(user=role, password=password)
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in params.items() if v is not None})


def console_origins(api_port: int) -> tuple[str, ...]:
    """Where the console's page lives locally (the API's origin, by either loopback name)."""
    return (f"http://127.0.0.1:{api_port}", f"http://localhost:{api_port}")


def ensure_bucket(endpoint: str, bucket: str, *, browser_origins: tuple[str, ...] = ()) -> str:
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    if bucket not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
        client.create_bucket(Bucket=bucket)
    client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    if browser_origins:
        # The console's browser uploads straight to the bucket, as on AWS (infra's CORS rule): a presigned POST, or
        # a multipart upload's parts by presigned PUT, each with its x-amz-checksum-sha256 header (any header is
        # allowed); the completion names each part's ETag, which a browser reads only when it is exposed.
        client.put_bucket_cors(
            Bucket=bucket,
            CORSConfiguration={
                "CORSRules": [
                    {
                        "AllowedMethods": ["POST", "PUT"],
                        "AllowedOrigins": list(browser_origins),
                        "AllowedHeaders": ["*"],
                        "ExposeHeaders": ["ETag"],
                        "MaxAgeSeconds": 3000,
                    }
                ]
            },
        )
    status: str = client.get_bucket_versioning(Bucket=bucket)["Status"]
    return status


@dataclass(frozen=True)
class LocalDatabase:
    app_url: str
    embedded: bool
    port: int | None


# The API's and the upload events' connections together (each 4 on Lambda, QUIRE_DATABASE_POOL_SIZE).
LOCAL_DATABASE_POOL_SIZE = 8


class Supervisor:
    def __init__(self, paths: StackPaths, *, embedding_dimension: int) -> None:
        self.paths = paths
        self.embedding_dimension = embedding_dimension
        self.stop_requested = threading.Event()
        self._watchdog: threading.Thread | None = None
        self._postgres: EmbeddedPostgres | None = None
        self._s3: LocalS3Server | None = None
        self._api: LocalHttpApi | None = None
        self._mcp: LocalMcpServer | None = None
        self._events: EventDispatcher | None = None
        self._relay: RelayWorker | None = None

    def run(self) -> None:
        started = time.monotonic()
        started_at = datetime.now(UTC)
        ports = read_json(self.paths.ports) or {}
        try:
            database = self._start_database(ports)
            s3_port = free_port(ports.get("s3"))
            s3_endpoint = f"http://127.0.0.1:{s3_port}"
            self._configure_functions(database.app_url, s3_endpoint)
            # S3 announces new objects to the same handler EventBridge invokes on AWS.
            from functions.on_object_created.handler import handler as on_object_created

            self._events = EventDispatcher(on_object_created, name="on-object-created")
            self._events.start()
            self._s3 = LocalS3Server(
                self.paths.s3_objects,
                port=s3_port,
                on_object_created=self._announce_original,
                legacy_snapshot=self.paths.legacy_s3_snapshot,
            )
            restored = self._s3.start()
            # Held from here until the API binds it: the MCP server and the bucket's CORS rule need its number
            # first, and meanwhile another process (a connection's ephemeral port) could take a port only probed.
            api_reservation = reserved_port(ports.get("api"))
            api_port = api_reservation.getsockname()[1]
            versioning = ensure_bucket(self._s3.endpoint, LOCAL_BUCKET, browser_origins=console_origins(api_port))
            verifier = LocalTokenVerifier(read_or_create_secret(self.paths.jwt_secret))
            # Served on the API's base URL, as API Gateway routes /mcp to the MCP function.
            self._mcp = self._start_mcp(f"http://127.0.0.1:{api_port}", verifier)
            console = ConsoleSite(
                LocalTokenIssuer(read_or_create_secret(self.paths.jwt_secret)),
                store_origin=self._s3.endpoint,
                sign_in_key=read_or_create_secret(self.paths.console_sign_in_key).decode(),
            )
            api_reservation.close()
            self._api = self._start_api(api_port, verifier, self._mcp.forwarding(), console)
            write_private_json(self.paths.ports, {"postgres": database.port, "s3": s3_port, "api": api_port})
            if self.stop_requested.is_set():
                return  # asked to stop while starting: never announce a stack that is going away
            write_private_json(
                self.paths.state,
                {
                    "pid": os.getpid(),
                    "startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "readySeconds": round(time.monotonic() - started, 2),
                    "api": self._api.base_url,
                    "mcp": f"{self._api.base_url}/mcp",
                    "database": {
                        "url": database.app_url,
                        "embedded": database.embedded,
                        "embeddingDimension": self.embedding_dimension,
                    },
                    "s3": {
                        "endpoint": self._s3.endpoint,
                        "bucket": LOCAL_BUCKET,
                        "versioning": versioning,
                        "restoredBuckets": restored,
                        "objects": str(self.paths.s3_objects),
                    },
                },
            )
            _log.info("ready in %.2fs", time.monotonic() - started)
            self._start_event_workers(database.app_url)
            threading.Thread(
                target=self._reconcile_on_schedule, args=(started_at,), name="quire-reconcile", daemon=True
            ).start()
            # On a thread of its own: a restart may take a while, and a stop must be acted on meanwhile.
            self._watchdog = threading.Thread(
                target=self._watch_database, args=(database,), name="quire-postgres-watchdog", daemon=True
            )
            self._watchdog.start()
            while not self.stop_requested.wait(timeout=1.0):
                pass  # a timeout, so the main thread runs the signal handlers promptly
        finally:
            self.shutdown()

    def _start_event_workers(self, app_url: str) -> None:
        """The relay, and the webhook deliverer's sweep (what was due before a stop is sent now)."""
        from shared.bootstrap import container as process_container

        container = process_container()
        self._relay = RelayWorker(container.event_relay, app_url)
        self._relay.start()
        container.delivery_queue.start()  # type: ignore[attr-defined]

    def _announce_original(self, event: dict[str, Any]) -> None:
        """Only originals reach the handler, as the EventBridge rule on AWS matches their prefix alone."""
        if self._events is not None and event["detail"]["object"]["key"].startswith(ORIGINALS_PREFIX):
            self._events.submit(event)

    def _reconcile_on_schedule(self, started_at: datetime) -> None:
        """As the stack starts, take up what its last stop or crash cut off (a lost upload event, a version the
        workers were processing, a render); then reconcile as the schedule does on AWS."""
        from shared.bootstrap import container as process_container

        container = process_container()
        interval = container.settings.local_reconcile_interval_seconds
        try:
            report = container.reconciler_after_restart().run(started_at)
            _log.info("reconciled after the start: %s", report.counts())
        except Exception:
            _log.exception("could not reconcile after the start; `quire reconcile` runs it by hand")
        self._reembed_what_another_model_embedded(container)
        while interval and not self.stop_requested.wait(timeout=interval):
            try:
                _log.info("reconciled: %s", container.reconciler.run(datetime.now(UTC)).counts())
            except Exception:
                _log.exception("could not reconcile; the next run tries again")

    @staticmethod
    def _reembed_what_another_model_embedded(container: "Container") -> None:
        """A stack whose local model changed (an upgrade: torch's fp32 vectors to the int8 ONNX model's) has
        versions the vector lane no longer compares with the query's: each tenant's are queued for re-indexing
        from their stored documents, on the workers, as `quire reindex` would (its spend limit applies)."""
        from shared.domain.errors import QuireError

        queued = 0
        try:
            for tenant_id in container.file_metadata.tenant_ids():
                while True:
                    report = container.reindexer.start_batch(tenant_id, None, limit=100)
                    queued += report.queued
                    if report.queued == 0 or report.remaining == 0:
                        break
        except QuireError as refusal:  # the model unavailable, a tenant's embedding budget spent
            _log.warning("stale versions are not all re-embedded: %s; `quire reindex` asks again", refusal)
        except Exception:
            _log.exception("could not look for versions another model embedded; `quire reindex` asks again")
        if queued:
            _log.info("%s versions embedded by another model are being re-embedded", queued)

    def _watch_database(self, database: LocalDatabase) -> None:
        pause = 0.5
        while not self.stop_requested.wait(timeout=pause):
            try:
                self._restart_database_if_it_died(database)
                pause = 0.5
            except Exception:
                # A server that will not come back (its port taken, say): tried again ever more slowly, up to 30 s.
                _log.exception("could not start PostgreSQL again; trying again in %.0f s", min(pause * 2, 30.0))
                pause = min(pause * 2, 30.0)

    def _restart_database_if_it_died(self, database: LocalDatabase) -> None:
        """The embedded PostgreSQL killed under a running stack (an OOM kill, `kill -9`) is started again on its
        port: committed work is in its WAL, and the pools replace connections the server dropped."""
        postgres = self._postgres
        if postgres is None or database.port is None or postgres.running_pid() is not None:
            return
        if self.stop_requested.is_set():
            return
        _log.warning("PostgreSQL is not running: starting it again on port %s", database.port)
        # On that port or not at all: the pools and every handler's settings name it.
        postgres.start(preferred_port=database.port, require_port=True)

    def _start_database(self, ports: dict[str, Any]) -> LocalDatabase:
        external = os.environ.get("DATABASE_URL")
        if external:
            owner_url = external
            port = None
        else:
            self._postgres = EmbeddedPostgres(self.paths.pgdata, secrets_file=self.paths.postgres_admin_secret)
            address: ServerAddress = self._postgres.start(preferred_port=ports.get("postgres"))
            owner_url = self._postgres.owner_url(address)
            port = address.port
        report = apply_migrations(owner_url, embedding_dimension=self.embedding_dimension)
        _log.info("migrations applied=%s already=%s", report.applied, report.already_applied)
        # With an external server the caller may bring the application role's own URL; otherwise the
        # local runtime manages that role's password.
        app_url = os.environ.get("QUIRE_DATABASE_URL") if external else None
        if not app_url:
            app_password = read_or_create_secret(self.paths.app_role_secret).decode()
            app_url = ensure_app_role_password(owner_url, app_password)
        return LocalDatabase(app_url=app_url, embedded=external is None, port=port)

    def _configure_functions(self, app_url: str, s3_endpoint: str) -> None:
        # Handlers read their settings once, when the process's container is first built: set them first, exactly
        # as Lambda would.
        os.environ.update(LOCAL_AWS_ENVIRONMENT)
        # One container serves the API, the upload events, the sweep and the workers here (on Lambda each is a
        # process of its own): its pool holds what the API's and the events' separate pools held before.
        os.environ.setdefault("QUIRE_DATABASE_POOL_SIZE", str(LOCAL_DATABASE_POOL_SIZE))
        os.environ.update(
            {
                "QUIRE_RUNTIME": "local",
                "QUIRE_DATABASE_URL": app_url,
                "QUIRE_S3_ENDPOINT_URL": s3_endpoint,
                "QUIRE_BUCKET": LOCAL_BUCKET,
                "QUIRE_EMBEDDING_DIMENSION": str(self.embedding_dimension),
                # The key the local API's verifier (below) and the container's token_verifier check tokens with.
                "QUIRE_JWT_SECRET_FILE": str(self.paths.jwt_secret),
                "QUIRE_EVENT_ARCHIVE_FILE": str(self.paths.event_archive),
                "POWERTOOLS_TRACE_DISABLED": "true",
            }
        )

    def _start_api(
        self, port: int, verifier: LocalTokenVerifier, forwarding: Forwarding, console: ConsoleSite
    ) -> LocalHttpApi:
        from functions.api.handler import UNAUTHENTICATED_ROUTES, handler

        api = LocalHttpApi(
            handler,
            verifier,
            public_routes=UNAUTHENTICATED_ROUTES,
            port=port,
            forwarding=forwarding,
            console=console,
        )
        api.start()
        return api

    def _start_mcp(self, api_base_url: str, verifier: LocalTokenVerifier) -> LocalMcpServer:
        from shared.bootstrap import Container
        from shared.config import load_settings

        # Its own container, as the MCP function has its own on AWS (and its own connection pool).
        settings = load_settings()
        server = LocalMcpServer(local_mcp_app(Container(settings), verifier, api_base_url, settings))
        server.start()
        return server

    def shutdown(self) -> None:
        """Stop in reverse order; each step runs even if an earlier one failed (PostgreSQL always stops)."""
        self.paths.state.unlink(missing_ok=True)
        self.stop_requested.set()  # however the main loop ended: the watchdog starts nothing more
        watchdog = self._watchdog
        if watchdog is not None:
            # A restart under way finishes (pg_ctl's attempts are bounded), so the server it starts is stopped below.
            watchdog.join(timeout=600)
        api, mcp, s3, events, postgres = self._api, self._mcp, self._s3, self._events, self._postgres
        self._api = self._mcp = self._s3 = self._events = self._postgres = None
        relay, self._relay = self._relay, None
        if api is not None:
            _attempt("stop the local API", api.stop)
        if relay is not None:
            _attempt("stop the event relay", relay.stop)
            _attempt("stop webhook deliveries", _stop_deliveries)
        if mcp is not None:
            _attempt("stop the MCP endpoint", mcp.stop)
        if s3 is not None:
            _attempt("stop the S3 server", s3.stop)
        if events is not None:
            # Objects that arrived before the stop are still recorded (the database is still up).
            _attempt("deliver pending events", events.stop)
        if postgres is not None:
            _attempt("stop PostgreSQL", postgres.stop)


def _stop_deliveries() -> None:
    from shared.bootstrap import container as process_container

    process_container().delivery_queue.stop()  # type: ignore[attr-defined]


def _attempt(what: str, step: Callable[[], None]) -> None:
    begun = time.monotonic()
    try:
        step()
    except Exception:
        _log.exception("could not %s", what)
    else:
        _log.info("%s: %.2fs", what, time.monotonic() - begun)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="quire-supervisor")
    parser.add_argument("--state-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    # Everything the stack writes (logs, snapshots, secrets) is for its owner only.
    os.umask(0o077)
    paths = StackPaths(args.state_dir.resolve())
    paths.ensure()
    # One supervisor per data directory, for its whole life: the lock dies with the process.
    lifetime_lock = (paths.root / "supervisor.lock").open("w")
    try:
        fcntl.flock(lifetime_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"another supervisor already runs this stack ({paths.root})", file=sys.stderr)
        return 3
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stderr)
    from shared.config import Settings

    supervisor = Supervisor(paths, embedding_dimension=Settings().embedding_dimension)

    def request_stop(signum: int, _frame: object) -> None:
        _log.info("signal %s: stopping", signum)
        supervisor.stop_requested.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    try:
        supervisor.run()
    except Exception:
        _log.exception("the local stack failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
