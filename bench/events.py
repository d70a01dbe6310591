"""Events and webhooks (issue 34): how soon a product hears of a change, and how fast the relay drains a backlog.

- **Change to receipt**, through a real local stack (`quire up`: the relay thread woken by LISTEN, the delivery
  thread, the pinned sender) to a receiver on 127.0.0.1: a file's metadata is changed RUNS x CHANGES times, one at a
  time; each latency is the receiver's clock at receipt minus the event's `occurredAt` (the trigger's clock, the same
  machine), p50 / p95 per run, the median run reported.
- **Relay throughput**: BACKLOG events queued for one tenant in an embedded PostgreSQL of its own (written by the
  files trigger, as a metadata change writes them), with one webhook that wants them all, drained by
  `EventRelay.relay_tenant` (publish to the local archive bus, mark, fan out one delivery each): events per second,
  median of RUNS.

`python -m bench.events` runs only these (replacing the `events.*` figures in .bench/results.json).
"""

import json
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg

from bench.run import percentile, quire

RUNS = 3
CHANGES = 40
BACKLOG = 10_000
TENANT = "bench-events"
COLLECTION = "docs"


@contextmanager
def receiver() -> Iterator[tuple[str, list[tuple[float, dict[str, Any]]]]]:
    """A plain-HTTP receiver on 127.0.0.1 (the local stack allows loopback): (url, [(receipt time, body)])."""
    received: list[tuple[float, dict[str, Any]]] = []
    arrived = threading.Condition()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            at = time.time()
            self.send_response(204)
            self.end_headers()
            with arrived:
                received.append((at, json.loads(body)))
                arrived.notify_all()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    finally:
        server.shutdown()
        server.server_close()


def _call(api: str, token: str, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{api}{path}",
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method=method,
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
        raw = response.read()
    return json.loads(raw) if raw else None


def change_to_receipt_ms(workdir: Path) -> list[tuple[float, float]]:
    """(p50, p95) of each run, in ms."""
    from shared.local.api_client import ApiClient

    quire(workdir, "up")
    try:
        api = json.loads(quire(workdir, "status", "--json"))["api"]
        token = quire(workdir, "token", "--tenant", TENANT, "--admin", COLLECTION).strip()
        path = workdir / "note.md"
        path.write_text("# Note\n\nA file whose metadata changes.\n", encoding="utf-8")
        client = ApiClient(api, token)
        file_id = client.upload(path, COLLECTION)["fileId"]
        client.wait_until_processed(file_id, timeout=300)
        runs = []
        with receiver() as (url, received):
            _call(
                api,
                token,
                "POST",
                "/v1/webhooks",
                {"url": url, "events": ["file.metadata.changed"], "collectionIds": [COLLECTION]},
            )
            for run in range(RUNS):
                latencies = []
                for change in range(CHANGES):
                    before = len(received)
                    _call(
                        api, token, "PATCH", f"/v1/files/{file_id}/metadata", {"set": {"step": run * CHANGES + change}}
                    )
                    deadline = time.monotonic() + 30
                    while len(received) == before and time.monotonic() < deadline:
                        time.sleep(0.0005)
                    at, body = received[-1]
                    latencies.append((at - datetime.fromisoformat(body["occurredAt"]).timestamp()) * 1000)
                latencies.sort()
                runs.append((percentile(latencies, 0.5), percentile(latencies, 0.95)))
        return runs
    finally:
        quire(workdir, "down")


class _UnwokenQueue:
    def wake(self, tenant_id: str, delivery_ids: Sequence[uuid.UUID], *, delay_seconds: int = 0) -> None:
        pass


def relay_events_per_second() -> list[float]:
    from bench.search import embedded_server
    from shared.adapters.local.event_bus import ArchiveEventBus
    from shared.adapters.postgres.database import Database
    from shared.adapters.postgres.events import PostgresEventOutbox
    from shared.services.event_relay import EventRelay

    rates = []
    with embedded_server() as (owner_url, app_url), tempfile.TemporaryDirectory() as scratch:
        database = Database(app_url, max_size=2)
        _queue_backlog(owner_url)
        outbox = PostgresEventOutbox(database)
        for run in range(RUNS):
            relay = EventRelay(outbox, ArchiveEventBus(Path(scratch) / f"bus-{run}.jsonl"), _UnwokenQueue())
            begun = time.perf_counter()
            published = 0
            while True:
                events, _ = relay.relay_tenant(TENANT)
                published += events
                if events == 0:
                    break
            rates.append(published / (time.perf_counter() - begun))
            assert published == BACKLOG, published
            with psycopg.connect(owner_url, autocommit=True) as conn:  # queued again for the next run
                conn.execute("SELECT set_config('quire.tenant_id', %s, false)", (TENANT,))
                conn.execute("DELETE FROM webhook_deliveries")
                conn.execute("UPDATE events SET published_at = NULL, position = NULL")
        database.close()
    return rates


def _queue_backlog(owner_url: str) -> None:
    """BACKLOG metadata changes of one file, each writing its event through the trigger, and one webhook."""
    with psycopg.connect(owner_url) as conn:
        conn.execute("SELECT set_config('quire.tenant_id', %s, false)", (TENANT,))
        conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", (TENANT,))
        file_id = uuid.uuid4()
        conn.execute(
            "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by)"
            " VALUES (%s, %s, %s, 'a.md', 'b')",
            (TENANT, file_id, COLLECTION),
        )
        conn.execute(
            "INSERT INTO webhooks (tenant_id, webhook_id, url, event_types, collection_ids, secret, created_by)"
            " VALUES (%s, %s, 'https://receiver.example/hook', '{*}', %s,"
            " 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'b')",
            (TENANT, uuid.uuid4(), [COLLECTION]),
        )
        for _ in range(BACKLOG):
            conn.execute(
                "UPDATE files SET metadata_revision = metadata_revision + 1 WHERE tenant_id = %s AND file_id = %s",
                (TENANT, file_id),
            )
        conn.commit()


def figures(result: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        latency = change_to_receipt_ms(Path(scratch))
    rates = relay_events_per_second()
    return [
        result(
            "events: change to webhook receipt, local stack, p50",
            [p50 for p50, _ in latency],
            "ms",
            changes_per_run=CHANGES,
        ),
        result("events: change to webhook receipt, local stack, p95", [p95 for _, p95 in latency], "ms"),
        result(
            f"events: relay throughput, {BACKLOG:,} queued (publish + mark + fan out to 1 webhook)",
            rates,
            "events/s",
            backlog=BACKLOG,
        ),
    ]


def main() -> int:
    from bench.run import RESULTS, result, table

    measured = figures(result)
    kept = (
        [r for r in json.loads(RESULTS.read_text()) if not r["name"].startswith("events:")] if RESULTS.exists() else []
    )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(kept + measured, indent=2), encoding="utf-8")
    print(table(measured))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
