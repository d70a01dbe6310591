"""`quire up`, `quire down`, `quire status`: the local stack seen from the outside."""

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

if TYPE_CHECKING:
    from shared.bootstrap import Container

READY_TIMEOUT_SECONDS = 180
STOP_TIMEOUT_SECONDS = 60
NOT_RUNNING = "the local stack is not running: start it with `quire up`"


class StackError(Exception):
    """The stack could not be started or stopped; the message says what to look at."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); ask the kernel for its state.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def running_state(paths: StackPaths) -> dict[str, Any] | None:
    state = read_json(paths.state)
    if state is None or not _alive(int(state["pid"])):
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
        return _start_supervisor(paths), True


def _start_supervisor(paths: StackPaths) -> dict[str, Any]:
    paths.state.unlink(missing_ok=True)
    log = paths.log.open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "shared.local.supervisor", "--state-dir", str(paths.root)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
        env={**os.environ, **LOCAL_AWS_ENVIRONMENT},
    )
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        state = read_json(paths.state)
        if state is not None and state.get("pid") == process.pid:
            return state
        if process.poll() is not None:
            raise StackError(f"the local stack exited with code {process.returncode}; see {paths.log}")
        time.sleep(0.1)
    process.terminate()
    raise StackError(f"the local stack was not ready after {READY_TIMEOUT_SECONDS}s; see {paths.log}")


def down(paths: StackPaths) -> bool:
    """Stop the stack and everything it started. Returns False if it was not running."""
    state = read_json(paths.state)
    pid = int(state["pid"]) if state else _supervisor_pid_from_processes(paths)
    stopped = False
    if pid is not None and _alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)
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


def _supervisor_pid_from_processes(paths: StackPaths) -> int | None:
    """Find a supervisor whose state file is gone (for example, killed mid-start)."""
    needle = f"shared.local.supervisor\0--state-dir\0{paths.root}"
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if needle.encode() in cmdline.read():
                    return int(entry)
        except OSError:
            continue
    return None


def redact_database_url(url: str) -> str:
    import psycopg

    params = psycopg.conninfo.conninfo_to_dict(url)
    user, host, port, name = (params.get(key, "") for key in ("user", "host", "port", "dbname"))
    return f"postgresql://{user}@{host}:{port}/{name}"


def status(paths: StackPaths) -> dict[str, Any]:
    """Probe every part of the stack; capabilities are reported whether or not it runs."""
    from shared.bootstrap import Container
    from shared.config import Settings

    state = running_state(paths)
    report: dict[str, Any] = {"running": state is not None, "stateDir": str(paths.root)}
    if state is None:
        report["api"] = None
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
        settings = Settings(
            runtime="local",
            database_url=state["database"]["url"],
            s3_endpoint_url=state["s3"]["endpoint"],
            bucket=state["s3"]["bucket"],
            embedding_dimension=state["database"]["embeddingDimension"],
        )
        container = Container(settings)
        report["api"] = state["api"]
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
    os.environ.update({k: v for k, v in LOCAL_AWS_ENVIRONMENT.items() if k not in os.environ})
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
        "persistence": f"objects are snapshotted to {s3['snapshot']} on `quire down` and restored on "
        "`quire up`; a killed stack loses changes since its last clean stop",
    }
