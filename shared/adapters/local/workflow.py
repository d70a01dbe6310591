"""The Workflow port locally: the pipeline's steps run in this process, in background workers (the stand-in for
Step Functions, where each version is an execution of its own). Whoever calls `start` has already claimed the
attempt in the database, so each attempt is started once.

The workers are the process's, shared by every container in it (the process's, which the API, the upload events
and the sweep use, and the MCP server's): as many as the machine has cores, since a version's heavy work (parsing
in a sandboxed child, OCR and embedding in onnxruntime) runs outside the interpreter lock. They take queued
versions fairly across tenants: one tenant's next version, then the next tenant's, so a tenant that queued hundreds
of files delays another's single upload by at most one version per worker, never by its whole backlog.
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
    """Queued versions per tenant, taken round robin by a fixed number of worker threads. Re-indexing (a whole
    tenant's versions queued at once after a model change) waits in a lane of its own, taken while no new
    upload waits and otherwise one turn in `BACKGROUND_EVERY`: a re-index never holds up the upload someone is
    looking at, and a steady stream of uploads cannot starve it (reconciliation would take a re-index queued
    past the stuck threshold for lost, and process the version again from the start)."""

    BACKGROUND_EVERY = 8

    def __init__(self, workers: int) -> None:
        self._workers = max(1, workers)
        # Keyed by (tenant, re-index?): each a queue with its own turn.
        self._queues: dict[tuple[str, bool], deque[tuple[Run, ProcessVersion]]] = {}
        # Queues with work, in the order their turn comes: new work first, re-indexing when none waits.
        self._turns: deque[tuple[str, bool]] = deque()
        self._background_turns: deque[tuple[str, bool]] = deque()
        self._taken = 0
        self._unfinished = 0
        self._changed = threading.Condition()
        self._threads: list[threading.Thread] = []

    @property
    def workers(self) -> int:
        return self._workers

    def submit(self, run: Run, request: ProcessVersion) -> None:
        with self._changed:
            lane = (request.tenant_id, request.reindex)
            queue = self._queues.setdefault(lane, deque())
            if not queue:
                self._turns_of(lane).append(lane)
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
            counts: dict[str, int] = {}
            for (tenant, _reindex), queue in self._queues.items():
                if queue:
                    counts[tenant] = counts.get(tenant, 0) + len(queue)
            return counts

    def drain(self) -> None:
        """Wait until every version submitted so far (and any submitted meanwhile) has been run."""
        with self._changed:
            self._changed.wait_for(lambda: self._unfinished == 0)

    def _next(self) -> tuple[Run, ProcessVersion]:
        with self._changed:
            self._changed.wait_for(lambda: bool(self._turns or self._background_turns))
            self._taken += 1
            due = self._background_turns and self._taken % self.BACKGROUND_EVERY == 0
            turns = self._background_turns if due or not self._turns else self._turns
            lane = turns.popleft()
            queue = self._queues[lane]
            taken = queue.popleft()
            if queue:
                turns.append(lane)  # its next version waits for every other tenant's turn
            else:
                del self._queues[lane]
            return taken

    def _turns_of(self, lane: tuple[str, bool]) -> deque[tuple[str, bool]]:
        return self._background_turns if lane[1] else self._turns

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
