"""Delivers events to Lambda handlers in the background, as EventBridge would: after the fact, in order.

The S3 server must never wait for a handler (S3 does not), so events go through a queue to one worker.
"""

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from shared.local.http_api import LocalLambdaContext

Handler = Callable[[dict[str, Any], Any], Any]
_log = logging.getLogger(__name__)
_STOP = object()


class EventDispatcher:
    def __init__(self, handler: Handler, *, name: str) -> None:
        self._handler = handler
        self._queue: queue.Queue[object] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"quire-events-{name}", daemon=True)
        self._name = name

    def start(self) -> None:
        self._thread.start()

    def submit(self, event: dict[str, Any]) -> None:
        self._queue.put(event)

    def join(self) -> None:
        """Wait until every submitted event has been handled."""
        self._queue.join()

    def stop(self) -> None:
        """Deliver what is queued, then stop."""
        self._queue.put(_STOP)
        self._thread.join(timeout=60)

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            try:
                if event is _STOP:
                    return
                assert isinstance(event, dict)
                # EventBridge retries a failed delivery; locally a failure is logged (the sweep recovers).
                self._handler(event, LocalLambdaContext(function_name=f"quire-{self._name}-local"))
            except Exception:
                _log.exception("handler %s failed on an event", self._name)
            finally:
                self._queue.task_done()
