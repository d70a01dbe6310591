"""The RenderQueue port locally: renders run in this process, one at a time, in a background worker (the
stand-in for the render Lambda function), off the request path like on AWS."""

import logging
import queue
import threading
from collections.abc import Callable

from shared.domain.exports import RenderJob
from shared.ports import RenderQueue

_log = logging.getLogger(__name__)


class InProcessRenderQueue(RenderQueue):
    def __init__(self, render: Callable[[RenderJob], object]) -> None:
        self._render = render
        self._queue: queue.Queue[RenderJob] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, job: RenderJob) -> None:
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="quire-render", daemon=True)
                self._worker.start()
        self._queue.put(job)

    def drain(self) -> None:
        """Wait until every submitted render has run."""
        self._queue.join()

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            try:
                self._render(job)
            except BaseException:
                # An infrastructure failure: the export stays pending and the sweep submits it again.
                _log.exception("a render failed; the export stays pending and the sweep will submit it again")
            finally:
                self._queue.task_done()
