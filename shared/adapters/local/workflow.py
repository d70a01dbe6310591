"""The Workflow port locally: the pipeline's steps run in this process, one version at a time, in a
background worker (the stand-in for Step Functions). Idempotent per version through the database:
only the call that moves a version to `queued` runs it."""

import logging
import queue
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from shared.domain.workflow import ProcessVersion, StartOutcome

_log = logging.getLogger(__name__)

QueueProcessing = Callable[[ProcessVersion, datetime], bool]
Run = Callable[[ProcessVersion], object]


class InProcessWorkflow:
    def __init__(self, queue_processing: QueueProcessing, run: Run, *, stale_after: timedelta) -> None:
        self._queue_processing = queue_processing
        self._run = run
        self._stale_after = stale_after
        self._queue: queue.Queue[ProcessVersion] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self, request: ProcessVersion) -> StartOutcome:
        if not self._queue_processing(request, datetime.now(UTC) - self._stale_after):
            return StartOutcome.ALREADY_STARTED
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="quire-pipeline", daemon=True)
                self._worker.start()
        self._queue.put(request)
        return StartOutcome.STARTED

    def drain(self) -> None:
        """Wait until every started version has been through the pipeline."""
        self._queue.join()

    def _work(self) -> None:
        while True:
            request = self._queue.get()
            try:
                self._run(request)
            except BaseException:
                # An infrastructure failure: the version stays in progress; reconciliation starts it again.
                _log.exception("the pipeline failed on a version; reconciliation will start it again")
            finally:
                self._queue.task_done()
