"""The Workflow port locally: the pipeline's steps run in this process, in background workers (the stand-in for
Step Functions, where each version is an execution of its own). Whoever calls `start` has already claimed the
attempt in the database, so each attempt is started once.

The workers are the process's, shared by every container in it (the API's, the upload event's, the MCP
server's): as many as the machine has cores, since a version's heavy work (parsing in a sandboxed child, OCR
and embedding in onnxruntime) runs outside the interpreter lock. They take queued versions fairly across
tenants: one tenant's next version, then the next tenant's, so a tenant that queued hundreds of files delays
another's single upload by at most one version per worker, never by its whole backlog.
"""

import logging
import os
import threading
from collections import deque
from collections.abc import Callable

from shared.domain.workflow import ProcessVersion, StartOutcome
from shared.ports import Workflow

_log = logging.getLogger(__name__)

Run = Callable[[ProcessVersion], object]


def machine_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class FairWorkers:
    """Queued versions per tenant, taken round robin by a fixed number of worker threads."""

    def __init__(self, workers: int) -> None:
        self._workers = max(1, workers)
        self._queues: dict[str, deque[tuple[Run, ProcessVersion]]] = {}
        # Tenants with queued work, in the order their turn comes.
        self._turns: deque[str] = deque()
        self._unfinished = 0
        self._changed = threading.Condition()
        self._threads: list[threading.Thread] = []

    @property
    def workers(self) -> int:
        return self._workers

    def submit(self, run: Run, request: ProcessVersion) -> None:
        with self._changed:
            queue = self._queues.setdefault(request.tenant_id, deque())
            if not queue:
                self._turns.append(request.tenant_id)
            queue.append((run, request))
            self._unfinished += 1
            self._threads = [thread for thread in self._threads if thread.is_alive()]
            while len(self._threads) < self._workers:
                thread = threading.Thread(target=self._work, name=f"quire-pipeline-{len(self._threads)}", daemon=True)
                thread.start()
                self._threads.append(thread)
            self._changed.notify_all()  # a drain() waits on the same condition: wake a worker, whoever else

    def queued(self) -> dict[str, int]:
        """How many versions wait, per tenant (not those running)."""
        with self._changed:
            return {tenant: len(queue) for tenant, queue in self._queues.items() if queue}

    def drain(self) -> None:
        """Wait until every version submitted so far (and any submitted meanwhile) has been run."""
        with self._changed:
            self._changed.wait_for(lambda: self._unfinished == 0)

    def _next(self) -> tuple[Run, ProcessVersion]:
        with self._changed:
            self._changed.wait_for(lambda: bool(self._turns))
            tenant = self._turns.popleft()
            queue = self._queues[tenant]
            taken = queue.popleft()
            if queue:
                self._turns.append(tenant)  # its next version waits for every other tenant's turn
            else:
                del self._queues[tenant]
            return taken

    def _work(self) -> None:
        while True:
            run, request = self._next()
            try:
                run(request)
            except BaseException:
                # An infrastructure failure, recorded on the version (`interrupted`): reconciliation retries it.
                _log.exception("the pipeline failed on a version; reconciliation will start it again")
            finally:
                with self._changed:
                    self._unfinished -= 1
                    self._changed.notify_all()


_SHARED: FairWorkers | None = None
_SHARED_LOCK = threading.Lock()


def shared_workers() -> FairWorkers:
    """The process's workers, made on first use."""
    global _SHARED  # noqa: PLW0603 - one pool per process, whichever container asks first
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = FairWorkers(machine_cores())
        return _SHARED


class InProcessWorkflow(Workflow):
    def __init__(self, run: Run, workers: FairWorkers | None = None) -> None:
        self._run = run
        self._workers = workers

    @property
    def workers(self) -> FairWorkers:
        return self._workers or shared_workers()

    def start(self, request: ProcessVersion) -> StartOutcome:
        self.workers.submit(self._run, request)
        return StartOutcome.STARTED

    def drain(self) -> None:
        """Wait until every started version has been through the pipeline."""
        self.workers.drain()
