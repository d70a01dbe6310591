"""The EventBus and DeliveryQueue ports locally.

The bus appends each published event, as EventBridge would receive it (source `quire`, detail-type the type, detail
the body), to a JSON-lines archive in the stack's folder: what the relay published, in order, for a person or a test
to read (the stand-in for the AWS bus's archive). The queue wakes a worker thread of this process that runs the
deliverer (the stand-in for SQS and the delivery function); its sweep finds anything a lost wake-up missed.
"""

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from uuid import UUID

from shared.domain.events import EVENT_SOURCE, StoredEvent, event_body
from shared.ports import DeliveryQueue, EventBus

_log = logging.getLogger(__name__)


def bus_entry(event: StoredEvent) -> dict[str, object]:
    """One event as a PutEvents entry (without the bus name)."""
    return {"Source": EVENT_SOURCE, "DetailType": event.type.value, "Detail": json.dumps(event_body(event))}


class ArchiveEventBus(EventBus):
    def __init__(self, archive: Path) -> None:
        self._archive = archive
        self._lock = threading.Lock()

    def publish(self, events: Sequence[StoredEvent]) -> None:
        lines = "".join(json.dumps(bus_entry(event), separators=(",", ":")) + "\n" for event in events)
        with self._lock:
            self._archive.parent.mkdir(parents=True, exist_ok=True)
            with self._archive.open("a", encoding="utf-8") as archive:
                archive.write(lines)
                archive.flush()
                os.fsync(archive.fileno())


class ThreadDeliveryQueue(DeliveryQueue):
    """Runs `deliver(tenant, delivery ids)` on one background thread: at once for a wake-up, after its delay for a
    retry, and every `sweep_seconds` for whatever is due (`deliver(None, ())`: every tenant)."""

    def __init__(self, deliver: Callable[[str | None, Sequence[UUID]], object], *, sweep_seconds: float = 5.0) -> None:
        self._deliver = deliver
        self._sweep_seconds = sweep_seconds
        self._due: list[tuple[float, str, tuple[UUID, ...]]] = []
        self._condition = threading.Condition()
        self._worker: threading.Thread | None = None
        self._stopped = False

    def wake(self, tenant_id: str, delivery_ids: Sequence[UUID], *, delay_seconds: int = 0) -> None:
        with self._condition:
            self._due.append((time.monotonic() + delay_seconds, tenant_id, tuple(delivery_ids)))
            self._running()
            self._condition.notify()

    def start(self) -> None:
        """Start the sweep without a wake-up (the stack does, so what was due before a restart is sent)."""
        with self._condition:
            self._running()

    def _running(self) -> None:
        """The worker, started if it is not running (called holding the condition)."""
        if self._worker is None or not self._worker.is_alive():
            self._stopped = False
            self._worker = threading.Thread(target=self._work, name="quire-webhooks", daemon=True)
            self._worker.start()

    def stop(self) -> None:
        with self._condition:
            self._stopped = True
            self._condition.notify()
        if self._worker is not None:
            self._worker.join(timeout=15)

    def _work(self) -> None:
        last_sweep = 0.0
        while True:
            with self._condition:
                while not self._stopped:
                    now = time.monotonic()
                    ready = [entry for entry in self._due if entry[0] <= now]
                    if ready or now - last_sweep >= self._sweep_seconds:
                        break
                    upcoming = min((at for at, _, _ in self._due), default=now + self._sweep_seconds)
                    self._condition.wait(timeout=max(0.01, min(upcoming, last_sweep + self._sweep_seconds) - now))
                if self._stopped:
                    return
                self._due = [entry for entry in self._due if entry not in ready]
            try:
                for _, tenant_id, ids in ready:
                    self._deliver(tenant_id, ids)
                if time.monotonic() - last_sweep >= self._sweep_seconds:
                    last_sweep = time.monotonic()
                    self._deliver(None, ())
            except Exception:  # the database was unreachable: the sweep tries again
                _log.exception("delivering webhooks failed; what is due stays due")
