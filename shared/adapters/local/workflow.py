"""The Workflow port locally: the pipeline's steps run in this process, one version at a time, in a
background worker (the stand-in for Step Functions). Whoever calls `start` has already claimed the
attempt in the database, so each attempt is started once."""

import logging
import queue
import threading
from collections.abc import Callable

from shared.domain.workflow import ProcessVersion, StartOutcome
from shared.ports import Workflow

_log = logging.getLogger(__name__)

Run = Callable[[ProcessVersion], object]


class InProcessWorkflow(Workflow):
    def __init__(self, run: Run) -> None:
        self._run = run
        self._queue: queue.Queue[ProcessVersion] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self, request: ProcessVersion) -> StartOutcome:
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
                # An infrastructure failure, recorded on the version (`interrupted`): reconciliation retries it.
                _log.exception("the pipeline failed on a version; reconciliation will start it again")
            finally:
                self._queue.task_done()
