"""`quire up`, `quire down`, `quire status`: the local stack seen from the outside."""

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from shared.local.paths import LOCAL_AWS_ENVIRONMENT, StackPaths, read_json
from shared.local.processes import find_processes, is_our_process, is_running

if TYPE_CHECKING:
    from shared.bootstrap import Container
    from shared.config import Settings

READY_TIMEOUT_SECONDS = 180
STOP_TIMEOUT_SECONDS = 60
NOT_RUNNING = "the local stack is not running: start it with `quire up`"


class StackError(Exception):
    """The stack could not be started or stopped; the message says what to look at."""


def supervisor_arguments(paths: StackPaths) -> tuple[str, ...]:
    """How a supervisor of this stack shows in its command line (and how we recognise it)."""
    return ("-m", "shared.local.supervisor", "--state-dir", str(paths.root))


def running_state(paths: StackPaths) -> dict[str, Any] | None:
    """The state of a live supervisor of this stack; a state file whose pid is dead or reused is ignored."""
    state = read_json(paths.state)
    if state is None or not is_our_process(int(state["pid"]), *supervisor_arguments(paths)):
        return None
    return state


def up(paths: StackPaths) -> tuple[dict[str, Any], bool]:
    """Start the stack in the background and wait until it is ready. Returns (state, started_now)."""
    paths.ensure()
    # Two `quire up` at once must not start two supervisors on one data directory.
    with (paths.root / "up.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = running_state(paths)
        if state is not None:
            return state, False
        starting = find_processes(*supervisor_arguments(paths))
        if starting:
            # A supervisor still starting (its `quire up` was interrupted): wait for it, never start a second.
            return _wait_until_ready(paths, starting[0]), False
        return _start_supervisor(paths), True


def _start_supervisor(paths: StackPaths) -> dict[str, Any]:
    paths.state.unlink(missing_ok=True)
    log = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        process = subprocess.Popen(
            [sys.executable, *supervisor_arguments(paths)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            env={**os.environ, **LOCAL_AWS_ENVIRONMENT},
        )
    finally:
        os.close(log)  # the child has its own copy
    try:
        return _wait_until_ready(paths, process.pid)
    except StackError:
        _stop(paths)
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
        raise


def _wait_until_ready(paths: StackPaths, pid: int) -> dict[str, Any]:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        state = read_json(paths.state)
        if state is not None and state.get("pid") == pid:
            return state
        if not is_running(pid):
            raise StackError(f"{_last_log_line(paths)} (the supervisor exited; full log in {paths.log})")
        time.sleep(0.1)
    raise StackError(f"the local stack was not ready after {READY_TIMEOUT_SECONDS}s; see {paths.log}")


def _last_log_line(paths: StackPaths) -> str:
    """The supervisor's last words: for a failed start, the exception that stopped it."""
    lines = [line for line in paths.log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "the local stack exited without a word"


def down(paths: StackPaths) -> bool:
    """Stop the stack and everything it started. Returns False if it was not running."""
    if not paths.root.exists():
        return False
    with (paths.root / "up.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _stop(paths)


def _stop(paths: StackPaths) -> bool:
    stopped = False
    # A supervisor of this stack, whether or not its state file survived (killed mid-start, say).
    for pid in find_processes(*supervisor_arguments(paths)):
        # It may exit between the listing and the signal (a supervisor already stopping): gone is stopped.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
            while is_running(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if is_our_process(pid, *supervisor_arguments(paths)):
                os.kill(pid, signal.SIGKILL)
        stopped = True
    # Whatever happened to the supervisor, no PostgreSQL of this stack may outlive `down`.
    if paths.pgdata.exists():
        from shared.local.embedded_postgres import EmbeddedPostgres

        postgres = EmbeddedPostgres(paths.pgdata, secrets_file=paths.postgres_admin_secret)
        if postgres.running_pid() is not None:
            postgres.stop()
            stopped = True
    paths.state.unlink(missing_ok=True)
    return stopped


def redact_database_url(url: str) -> str:
    import psycopg

    params = psycopg.conninfo.conninfo_to_dict(url)
    user, host, port, name = (params.get(key, "") for key in ("user", "host", "port", "dbname"))
    return f"postgresql://{user}@{host}:{port}/{name}"


def settings_for(state: dict[str, Any]) -> "Settings":
    """The settings the running stack's functions use, as seen from outside it."""
    from shared.config import Settings

    os.environ.update({k: v for k, v in LOCAL_AWS_ENVIRONMENT.items() if k not in os.environ})
    return Settings(
        runtime="local",
        database_url=state["database"]["url"],
        s3_endpoint_url=state["s3"]["endpoint"],
        bucket=state["s3"]["bucket"],
        embedding_dimension=state["database"]["embeddingDimension"],
    )


def status(paths: StackPaths) -> dict[str, Any]:
    """Probe every part of the stack; capabilities are reported whether or not it runs."""
    from shared.bootstrap import Container
    from shared.config import Settings

    state = running_state(paths)
    report: dict[str, Any] = {"running": state is not None, "stateDir": str(paths.root)}
    if state is None:
        report["api"] = None
        report["mcp"] = None
        report["apiHealth"] = {"ok": False, "reason": NOT_RUNNING}
        report["database"] = {
            "ok": False,
            "url": None,
            "postgres": None,
            "pgvector": None,
            "reason": NOT_RUNNING,
        }
        report["s3"] = {"ok": False, "endpoint": None, "bucket": None, "reason": NOT_RUNNING}
        settings = Settings(runtime="local")
    else:
        report["pid"] = state["pid"]
        report["startedAt"] = state["startedAt"]
        report["readySeconds"] = state["readySeconds"]
        settings = settings_for(state)
        container = Container(settings)
        report["api"] = state["api"]
        # Served on the API's base URL (a stack started before the endpoint existed has none).
        report["mcp"] = state.get("mcp")
        report["apiHealth"] = _probe_api(state["api"])
        report["database"] = _probe_database(container, state)
        report["s3"] = _probe_s3(container, state)
    capabilities = Container(settings).capabilities()
    for capability, capability_status in capabilities.items():
        report[capability.value] = capability_status.model_dump()
    return report


def _probe_api(base_url: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"{base_url}/v1/health", timeout=10) as response:  # noqa: S310 - our URL
            return {"ok": response.status == 200, "status": response.status, "body": json.load(response)}
    except urllib.error.HTTPError as error:
        return {"ok": False, "status": error.code, "reason": error.reason}
    except OSError as error:
        return {"ok": False, "reason": str(error)}


def _probe_database(container: "Container", state: dict[str, Any]) -> dict[str, Any]:
    url = redact_database_url(state["database"]["url"])
    try:
        facts = container.database.server_facts()
    except Exception as error:
        return {"ok": False, "url": url, "postgres": None, "pgvector": None, "reason": str(error)}
    finally:
        container.database.close()
    return {
        "ok": facts["pgvector"] is not None,
        "url": url,
        "postgres": facts["postgres"],
        "pgvector": facts["pgvector"],
        "role": facts["role"],
        "embedded": state["database"]["embedded"],
        "embeddingDimension": state["database"]["embeddingDimension"],
    }


def _probe_s3(container: "Container", state: dict[str, Any]) -> dict[str, Any]:
    from shared.adapters.aws.s3_content_store import S3ContentStore

    s3 = state["s3"]
    base = {"endpoint": s3["endpoint"], "bucket": s3["bucket"]}
    store = container.content
    assert isinstance(store, S3ContentStore)
    try:
        versioning = store.bucket_versioning()
    except Exception as error:
        return {"ok": False, **base, "reason": str(error)}
    return {
        "ok": versioning == "Enabled",
        **base,
        "versioning": versioning,
        "persistence": f"every object version is written through to {s3.get('objects')} before S3 answers, and"
        " read back by `quire up`: nothing acknowledged is lost to a crash",
    }
