"""The local stack's workers (shared/adapters/local/workflow.py): fair across tenants, as many at once as asked."""

import threading

from shared.adapters.local.workflow import FairWorkers, InProcessWorkflow, machine_cores
from shared.domain.workflow import ProcessVersion, StartOutcome


def request(tenant: str, number: int) -> ProcessVersion:
    return ProcessVersion(tenant_id=tenant, file_id=f"{tenant}-{number}", version_id=f"{tenant}-{number}")


def test_one_tenants_backlog_delays_another_tenants_upload_by_one_version_not_by_the_backlog() -> None:
    workers = FairWorkers(1)
    ran: list[str] = []
    first_started, release = threading.Event(), threading.Event()

    def run(version: ProcessVersion) -> None:
        if not ran:
            first_started.set()
            release.wait(timeout=10)
        ran.append(version.version_id)

    workflow = InProcessWorkflow(run, workers)
    assert workflow.start(request("flood", 0)) is StartOutcome.STARTED
    assert first_started.wait(timeout=10)
    for number in range(1, 381):
        workflow.start(request("flood", number))
    workflow.start(request("single", 0))
    workflow.start(request("other", 0))
    assert workers.queued() == {"flood": 380, "single": 1, "other": 1}
    release.set()
    workflow.drain()
    assert len(ran) == 383
    # The running one, then one of flood's (its turn came before the others queued), then theirs.
    assert ran[:4] == ["flood-0", "flood-1", "single-0", "other-0"]
    assert ran[4:] == [f"flood-{n}" for n in range(2, 381)]  # each tenant's own order kept
    assert workers.queued() == {}


def test_a_re_index_backlog_waits_while_a_new_upload_of_the_same_tenant_runs_first() -> None:
    workers = FairWorkers(1)
    ran: list[str] = []
    first_started, release = threading.Event(), threading.Event()

    def run(version: ProcessVersion) -> None:
        if not ran:
            first_started.set()
            release.wait(timeout=10)
        ran.append(version.version_id)

    workflow = InProcessWorkflow(run, workers)
    stale = [request("acme", number).model_copy(update={"reindex": True}) for number in range(50)]
    workflow.start(stale[0])
    assert first_started.wait(timeout=10)
    for version in stale[1:]:
        workflow.start(version)
    workflow.start(request("acme", 99))  # an upload, after the model change queued every stale version
    assert workers.queued() == {"acme": 50}
    release.set()
    workflow.drain()
    assert ran[:2] == ["acme-0", "acme-99"]
    assert ran[2:] == [f"acme-{n}" for n in range(1, 50)]


def test_a_stream_of_uploads_cannot_starve_a_re_index() -> None:
    workers = FairWorkers(1)
    ran: list[str] = []
    first_started, release = threading.Event(), threading.Event()

    def run(version: ProcessVersion) -> None:
        if not ran:
            first_started.set()
            release.wait(timeout=10)
        ran.append(version.version_id)

    workflow = InProcessWorkflow(run, workers)
    workflow.start(request("busy", 0))
    assert first_started.wait(timeout=10)
    for number in range(3):
        workflow.start(request("acme", number).model_copy(update={"reindex": True}))
    for number in range(1, 40):
        workflow.start(request("busy", number))
    release.set()
    workflow.drain()
    # One turn in BACKGROUND_EVERY goes to the re-index while uploads wait.
    assert [ran.index(f"acme-{n}") for n in range(3)] == [7, 15, 23]


def test_as_many_versions_run_at_once_as_there_are_workers() -> None:
    workers = FairWorkers(3)
    running, most, lock = 0, 0, threading.Lock()
    all_three = threading.Barrier(3, timeout=10)

    def run(_: ProcessVersion) -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        all_three.wait()  # passes only if three run at the same time
        with lock:
            running -= 1

    workflow = InProcessWorkflow(run, workers)
    for number in range(6):
        workflow.start(request(f"t{number % 2}", number))
    workflow.drain()
    assert most == 3


def test_a_failing_version_does_not_stop_the_workers() -> None:
    workers = FairWorkers(1)
    ran: list[str] = []

    def run(version: ProcessVersion) -> None:
        ran.append(version.version_id)
        if version.version_id == "a-0":
            raise RuntimeError("the database went away")

    workflow = InProcessWorkflow(run, workers)
    workflow.start(request("a", 0))
    workflow.start(request("a", 1))
    workflow.drain()
    assert ran == ["a-0", "a-1"]


def test_the_shared_workers_are_as_many_as_the_machines_cores() -> None:
    workflow = InProcessWorkflow(lambda _: None)
    assert workflow.workers.workers == machine_cores() >= 1
    assert InProcessWorkflow(lambda _: None).workers is workflow.workers  # one pool per process
