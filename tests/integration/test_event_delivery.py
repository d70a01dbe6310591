"""Object Created events delivered any number of times, in any order: the work is done exactly once."""

import uuid
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.bootstrap import overridden
from shared.domain.workflow import ProcessVersion, StartOutcome
from shared.services.upload_completion import Completion, UploadCompletion
from tests.integration.api_steps import EventLost
from tests.integration.files_stack import PDF, Stack


class CountingWorkflow:
    """Fake Workflow port: counts starts per version (the real ones are Step Functions / in-process)."""

    def __init__(self) -> None:
        self.starts: Counter[str] = Counter()

    def start(self, request: ProcessVersion) -> StartOutcome:
        self.starts[request.version_id] += 1
        return StartOutcome.STARTED


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    deliveries=st.lists(st.tuples(st.integers(min_value=0, max_value=3), st.booleans()), min_size=0, max_size=12),
)
def test_any_sequence_of_deliveries_stores_each_delivered_version_once(
    stack: Stack, deliveries: list[tuple[int, bool]]
) -> None:
    token = stack.token()
    with overridden(EventLost(stack.container)):  # the bytes land, the events are ours to deliver
        tickets = [stack.upload(token, f"e{i}.pdf", "application/pdf", PDF) for i in range(3)]
    workflow = CountingWorkflow()
    completion = UploadCompletion(
        stack.container.file_metadata,
        stack.container.file_metadata,
        stack.container.content,
        workflow,
        stack.container.malware_scanning,
    )
    objects = {}
    for ticket in tickets:
        key = ticket["upload"]["fields"]["key"]
        landed = stack.container.content.head(key)
        assert landed is not None
        objects[ticket["versionId"]] = (key, landed.version_id, landed.byte_size)
    delivered: set[str] = set()
    for index, forged in deliveries:
        if index == 3 or forged:
            # A key no upload was given, or a real key under another tenant: never trusted.
            key = (
                f"tenants/acme/files/{uuid.uuid4()}/versions/{uuid.uuid4()}"
                if index == 3
                else (objects[tickets[index]["versionId"]][0].replace("tenants/acme/", "tenants/intruder/"))
            )
            assert completion.object_created(key, "v", 1) is Completion.UNKNOWN_KEY
            continue
        version_id = tickets[index]["versionId"]
        outcome = completion.object_created(*objects[version_id])
        assert outcome is (Completion.DUPLICATE if version_id in delivered else Completion.STORED)
        delivered.add(version_id)
    for ticket in tickets:
        state = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]["state"]
        assert state == ("stored" if ticket["versionId"] in delivered else "pending")
    assert workflow.starts == Counter(dict.fromkeys(delivered, 1))


class FlakyWorkflow(CountingWorkflow):
    """Fake Workflow port whose first start fails, as a crash between storing and starting would."""

    def start(self, request: ProcessVersion) -> StartOutcome:
        if not self.starts and not getattr(self, "failed", False):
            self.failed = True
            raise ConnectionError("workflow unreachable")
        return super().start(request)


def test_a_redelivered_event_asks_for_processing_the_first_delivery_could_not(stack: Stack) -> None:
    token = stack.token()
    with overridden(EventLost(stack.container)):
        ticket = stack.upload(token, "flaky.pdf", "application/pdf", PDF)
    key = ticket["upload"]["fields"]["key"]
    landed = stack.container.content.head(key)
    assert landed is not None
    workflow = FlakyWorkflow()
    completion = UploadCompletion(
        stack.container.file_metadata,
        stack.container.file_metadata,
        stack.container.content,
        workflow,
        stack.container.malware_scanning,
    )
    # First delivery: stored, but the workflow could not be reached; the upload is not failed by it.
    assert completion.object_created(key, landed.version_id, landed.byte_size) is Completion.STORED
    assert workflow.starts == Counter()
    assert stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]["state"] == "stored"
    # Redelivery: nothing is stored twice, and processing is asked for now.
    assert completion.object_created(key, landed.version_id, landed.byte_size) is Completion.DUPLICATE
    assert workflow.starts == Counter({ticket["versionId"]: 1})
    # A third delivery asks for nothing more.
    completion.object_created(key, landed.version_id, landed.byte_size)
    assert workflow.starts == Counter({ticket["versionId"]: 1})


class RacingMetadata:
    """Wraps the real FileMetadataStore: just before the first `mark_stored`, another delivery (a second
    post of the same upload form) completes first, as two concurrent Lambda invocations could."""

    def __init__(self, real: Any, interleave: Any) -> None:
        self._real = real
        self._interleave = interleave

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def mark_stored(self, *args: Any, **kwargs: Any) -> bool:
        interleave, self._interleave = self._interleave, None
        if interleave:
            interleave()
        return bool(self._real.mark_stored(*args, **kwargs))


def test_a_second_post_racing_the_first_never_displaces_the_recorded_bytes(stack: Stack) -> None:
    token = stack.token()
    with overridden(EventLost(stack.container)):
        ticket = stack.upload(token, "double.txt", "text/plain", b"the first post")
        stack.post_bytes(ticket, b"again", "text/plain")  # a double-clicked form
    key = ticket["upload"]["fields"]["key"]
    # Told apart by size: the first post is the longer one.
    first, second = sorted(stack.container.content.object_versions(key), key=lambda o: o.byte_size, reverse=True)
    winner = UploadCompletion(
        stack.container.file_metadata,
        stack.container.file_metadata,
        stack.container.content,
        CountingWorkflow(),
        stack.container.malware_scanning,
    )
    racing = RacingMetadata(
        stack.container.file_metadata,
        lambda: winner.object_created(key, second.version_id, second.byte_size),
    )
    loser = UploadCompletion(
        racing, racing, stack.container.content, CountingWorkflow(), stack.container.malware_scanning
    )
    assert loser.object_created(key, first.version_id, first.byte_size) is Completion.UNEXPECTED_OBJECT_VERSION
    # One object is left, it is the recorded one, and it is the file's content.
    remaining = [stored.version_id for stored in stack.container.content.object_versions(key)]
    found = stack.container.file_metadata.find_version("acme", uuid.UUID(ticket["versionId"]))
    assert found is not None
    assert remaining == [found[1].storage_version_id] == [second.version_id]
    assert stack.container.content.get(key, max_bytes=10) == b"again"
