"""Apply the ordered SQL migrations in this folder, once each, recording what was applied.

A migration that needs more than SQL (a re-analysis in Python of what is stored) has a Python step beside its SQL
file, of the same name (`0030_languages.sql` and `0030_languages.py`): its `migrate(conn)` runs after the SQL, in the
same transaction, so the two land together or not at all. A step may instead (or also) define `backfill(conn,
deadline)`: a rewrite of stored rows too large for one transaction (every chunk of every tenant), run after the
migration committed, in batches that each commit (`0033_duplicates.py`), stopping between batches once `deadline`
(time.monotonic(); None: none) has passed. It returns True when it has reached its end: then it is recorded in
`schema_backfills` and never run again. It must be resumable: an interrupted or stopped backfill is run again by the
next runner, before any later migration, and until then it is reported `unfinished`. A backfill changes data only,
and no later migration may depend on its end: one the deadline stopped does not hold the later migrations back (the
deployed code needs their schema). The schema and the application must serve while it runs (the rows it has not
reached yet are the old ones).

One runner for `quire up`, the tests and the deploy-time custom resource. It connects as the schema owner (never as
the application role), holds an advisory lock so concurrent runners queue, applies each pending file in its own
transaction, and refuses to continue when history and files disagree: a migration edited after it was applied, or
settings that contradict what the schema was built with.
"""

import hashlib
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg

MIGRATIONS_DIR = Path(__file__).resolve().parent
APP_ROLE = "quire_app"
# Arbitrary but fixed: every runner of every version contends for the same lock.
_ADVISORY_LOCK = 7_251_120_411
_FILENAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
_ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# The owner connects to Aurora's writer directly (not through RDS Proxy, whose certificate is publicly trusted):
# its certificate is signed by an RDS certificate authority, which no public trust store holds, so the
# authorities ship with the package (their source is written at the top of the file).
RDS_CA_BUNDLE = MIGRATIONS_DIR / "certificates" / "rds-ca-bundle.pem"


class MigrationError(Exception):
    """The database and the migration files disagree; the message says how."""


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    template: str
    step: Path | None = None  # the Python step beside the SQL, if there is one

    @property
    def checksum(self) -> str:
        # Of the template, not the rendered SQL: a parameter is checked on its own, with its own message. A Python
        # step is part of the migration: editing it after it ran is refused like editing the SQL.
        source = self.template if self.step is None else f"{self.template}\0{self.step.read_text(encoding='utf-8')}"
        return hashlib.sha256(source.encode()).hexdigest()

    def python_step(self) -> Callable[[psycopg.Connection[Any]], None] | None:
        """The step's `migrate(conn)`, run in the migration's transaction (None: it has none)."""
        migrate: Callable[[psycopg.Connection[Any]], None] | None = self._step_function("migrate")
        return migrate

    def backfill(self) -> Callable[[psycopg.Connection[Any], float | None], bool] | None:
        """The step's `backfill(conn, deadline)`, run after the migration committed, batch by batch (None: it has
        none)."""
        backfill: Callable[[psycopg.Connection[Any], float | None], bool] | None = self._step_function("backfill")
        return backfill

    def _step_function(self, name: str) -> Any:
        """A function of the step, loaded from its file (a migration's name starts with digits, so it is not
        importable by name)."""
        if self.step is None:
            return None
        spec = importlib.util.spec_from_file_location(f"migrations.step_{self.version}", self.step)
        if spec is None or spec.loader is None:
            raise MigrationError(f"{self.step.name}: cannot be loaded")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found = {key: getattr(module, key, None) for key in ("migrate", "backfill")}
        if not any(callable(function) for function in found.values()):
            raise MigrationError(
                f"{self.step.name}: a migration's Python step defines migrate(conn) or backfill(conn, deadline)"
            )
        function = found[name]
        return function if callable(function) else None

    def render(self, parameters: dict[str, str]) -> str:
        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in parameters:
                raise MigrationError(f"migration {self.version} uses unknown parameter {{{{{name}}}}}")
            return parameters[name]

        return _PLACEHOLDER.sub(substitute, self.template)


# Migrations revised after they were applied somewhere, with the checksums of their earlier text, each accepted as
# theirs (a database that ran it is where the revision leaves one that runs it now). 0033 backfilled every chunk's
# text key in its own transaction, one rewrite of the whole table; it now backfills in batches after it commits.
REVISED: dict[str, frozenset[str]] = {
    "0033": frozenset({"a9cf0dc262283283bd1edd5b619c920dbfa3c01e6b76326d7084cf0855b72839"}),
}


@dataclass(frozen=True)
class MigrationReport:
    applied: list[str]
    already_applied: list[str]
    backfilled: list[str] = field(default_factory=list)  # backfills run to their end by this run
    unfinished: list[str] = field(default_factory=list)  # backfills the deadline stopped: the next run resumes them


def owner_url(*, host: str, port: int, dbname: str, user: str, password: str, ca_bundle: Path = RDS_CA_BUNDLE) -> str:
    """The owner's URL for `apply_migrations` on AWS, `sslmode=verify-full`: encrypted, and the server must
    present a certificate that chains to `ca_bundle` and names `host`, so the password goes to the writer
    and nobody else. User and password are percent-encoded, whatever characters a generated password holds.
    (Locally the embedded server has no TLS; its owner URL is its own, from shared/local/embedded_postgres.py.)"""
    if not ca_bundle.is_file():
        raise MigrationError(
            f"the database server's certificate is verified against {ca_bundle}, which is missing: put the RDS"
            " certificate bundle (global-bundle.pem, from the RDS user guide) there before packaging"
        )
    credentials = f"{quote(user, safe='')}:{quote(password, safe='')}"
    tls = f"sslmode=verify-full&sslrootcert={quote(str(ca_bundle), safe='/')}"
    return f"postgresql://{credentials}@{host}:{port}/{quote(dbname, safe='')}?{tls}"


def discover(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    migrations: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        match = _FILENAME.fullmatch(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: migration files are named NNNN_snake_case.sql")
        step = path.with_suffix(".py")
        migrations.append(
            Migration(match.group(1), match.group(2), path.read_text(encoding="utf-8"), step if step.exists() else None)
        )
    versions = [migration.version for migration in migrations]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two migrations share a version number: {versions}")
    return migrations


def _parameters(embedding_dimension: int, app_role: str) -> dict[str, str]:
    if not 1 <= embedding_dimension <= 2000:
        raise MigrationError(f"embedding dimension {embedding_dimension} is outside 1..2000 (pgvector HNSW)")
    if not _ROLE_NAME.fullmatch(app_role):
        raise MigrationError(f"application role {app_role!r} must be a lower-case SQL identifier")
    return {"embedding_dimension": str(embedding_dimension), "app_role": app_role}


def _check_recorded_parameters(conn: psycopg.Connection[Any], parameters: dict[str, str]) -> None:
    recorded = dict(conn.execute("SELECT name, value FROM schema_parameters").fetchall())
    for name, value in parameters.items():
        if name in recorded and recorded[name] != value:
            raise MigrationError(
                f"the schema was built with {name}={recorded[name]} but settings ask for {value}; "
                f"changing it needs a new migration (and, for the embedding dimension, a re-index)"
            )


def _check_app_role(conn: psycopg.Connection[Any], app_role: str) -> None:
    """The application role must stay unable to escape row-level security."""
    attributes = conn.execute(
        "SELECT rolsuper, rolbypassrls, rolreplication, rolcreaterole, rolcanlogin FROM pg_roles WHERE rolname = %s",
        (app_role,),
    ).fetchone()
    if attributes is None:
        raise MigrationError(f"the application role {app_role} does not exist after migrating")
    problems = [
        name
        for name, present in zip(("SUPERUSER", "BYPASSRLS", "REPLICATION", "CREATEROLE"), attributes[:4], strict=True)
        if present
    ]
    if not attributes[4]:
        problems.append("NOLOGIN")
    memberships = [
        row[0]
        for row in conn.execute(
            "SELECT granted.rolname FROM pg_auth_members m"
            " JOIN pg_roles granted ON granted.oid = m.roleid JOIN pg_roles member ON member.oid = m.member"
            " WHERE member.rolname = %s AND granted.rolname <> 'rds_iam'",
            (app_role,),
        )
    ]
    if memberships:
        problems.append(f"member of {', '.join(sorted(memberships))}")
    owned = conn.execute(
        "SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner"
        " WHERE r.rolname = %s AND c.relnamespace = 'public'::regnamespace",
        (app_role,),
    ).fetchone()
    if owned and owned[0]:
        problems.append(f"owner of {owned[0]} relations")
    if problems:
        raise MigrationError(
            f"the application role {app_role} could bypass row-level security ({'; '.join(problems)}): "
            "fix the role as a superuser, then migrate again"
        )


def apply_migrations(
    owner_url: str,
    *,
    embedding_dimension: int,
    app_role: str = APP_ROLE,
    directory: Path = MIGRATIONS_DIR,
    backfill_deadline: float | None = None,
) -> MigrationReport:
    """Bring the database at `owner_url` up to date. Re-running is a no-op. Backfills stop between batches once
    `backfill_deadline` (time.monotonic()) has passed, reported `unfinished` (the next run resumes them)."""
    parameters = _parameters(embedding_dimension, app_role)
    migrations = discover(directory)
    applied: list[str] = []
    already: list[str] = []
    backfilled: list[str] = []
    unfinished: list[str] = []

    def backfill(migration: Migration, label: str) -> None:
        finished = _backfilled(conn, migration, backfill_deadline)
        if finished is not None:
            (backfilled if finished else unfinished).append(label)

    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_ADVISORY_LOCK,))
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version text PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            conn.execute("CREATE TABLE IF NOT EXISTS schema_parameters (name text PRIMARY KEY, value text NOT NULL)")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_backfills ("
                " version text PRIMARY KEY, completed_at timestamptz NOT NULL DEFAULT now())"
            )
            backfilled_before = {row[0] for row in conn.execute("SELECT version FROM schema_backfills")}
            _check_recorded_parameters(conn, parameters)
            history: dict[str, str] = dict(conn.execute("SELECT version, checksum FROM schema_migrations").fetchall())
            unknown = sorted(set(history) - {migration.version for migration in migrations})
            if unknown:
                raise MigrationError(f"the database has migrations these files do not: {unknown}")
            for migration in migrations:
                label = f"{migration.version}_{migration.name}"
                if migration.version in history:
                    recorded = history[migration.version]
                    if recorded != migration.checksum and recorded not in REVISED.get(migration.version, ()):
                        raise MigrationError(f"migration {label} was edited after it was applied")
                    already.append(label)
                    if migration.version not in backfilled_before:
                        backfill(migration, label)
                    continue
                step = migration.python_step()
                with conn.transaction():
                    conn.execute(migration.render(parameters).encode())
                    if step is not None:
                        step(conn)
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                        (migration.version, migration.name, migration.checksum),
                    )
                    for name, value in parameters.items():
                        conn.execute(
                            "INSERT INTO schema_parameters (name, value) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
                            (name, value),
                        )
                applied.append(label)
                backfill(migration, label)
            # Every run, not only the one that created the role: a membership granted later is caught too.
            _check_app_role(conn, app_role)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_ADVISORY_LOCK,))
    return MigrationReport(applied=applied, already_applied=already, backfilled=backfilled, unfinished=unfinished)


def _backfilled(conn: psycopg.Connection[Any], migration: Migration, deadline: float | None) -> bool | None:
    """Run `migration`'s backfill, if it has one (None: it has none), until its end or `deadline`: True when it
    ended, and is recorded so. Its batches commit as they go (`conn` is in autocommit), so one that fails or stops
    midway keeps what it did, and the next run resumes it."""
    backfill = migration.backfill()
    if backfill is None:
        return None
    if not backfill(conn, deadline):
        return False
    conn.execute(
        "INSERT INTO schema_backfills (version) VALUES (%s) ON CONFLICT (version) DO NOTHING", (migration.version,)
    )
    return True
