"""The local stack's relay (issue 34): publishes the outbox as soon as a change commits, as the relay function does on
AWS. It listens on the `quire_events` channel (each event's trigger notifies it, delivered at commit) and also runs
every second, so a notification lost to a dropped connection only delays an event, never loses it.
"""

import logging
import threading

import psycopg

from shared.services.event_relay import EventRelay

_log = logging.getLogger(__name__)
CHANNEL = "quire_events"
SWEEP_SECONDS = 1.0


class RelayWorker:
    def __init__(self, relay: EventRelay, database_url: str) -> None:
        self._relay = relay
        self._database_url = database_url
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._work, name="quire-event-relay", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._database_url, autocommit=True) as listening:
                    listening.execute(f"LISTEN {CHANNEL}")
                    while not self._stop.is_set():
                        self._relay_once()
                        # Wakes on the first notification, or after a second; the relay reads what is pending.
                        for _ in listening.notifies(timeout=SWEEP_SECONDS, stop_after=1):
                            pass
            except psycopg.Error:
                _log.exception("the event relay lost its connection; publishing on a timer until it is back")
                self._relay_once()
                self._stop.wait(SWEEP_SECONDS)

    def _relay_once(self) -> None:
        try:
            self._relay.relay_all()
        except Exception:  # the database restarting: the events stay in the outbox for the next run
            _log.exception("relaying events failed; they stay in the outbox")
