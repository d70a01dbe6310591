"""A warm Lambda keeps nothing from one invocation to the next.

Lambda reuses a process for many invocations; so does the local stack, for all of them. Each handler
module builds its container once, at import, and must keep nothing per file after that: every step's
handler (and the API's, on_object_created's, record_failure's and reconcile's) runs here many times in
one process, and the memory Python holds is measured before and after.
"""

import gc
import importlib
import tracemalloc
from typing import Any

import pytest

from shared.domain.workflow import ProcessVersion, StartOutcome
from shared.local.http_api import LocalLambdaContext
from shared.local.scan_corpus import table_screenshot
from tests.integration.files_stack import Stack

STEPS = ("inspect", "extract", "recognize", "chunk", "embed", "index", "publish", "record_failure", "reconcile")
WARM_UP_FILES = 3
MEASURED_FILES = 12
# Python's own caches and the stored objects of the measured files (a few KB each) fit well inside this; a
# handler that kept even 10 KB per invocation would not (12 files x 10 handlers).
ALLOWED_GROWTH_BYTES = 1024 * 1024
# Not the handlers': what the harness keeps (pytest's captured log lines) and what the S3 stand-in stores
# (moto's objects and their buffers, werkzeug's request log), which grows with the files as S3 would.
_NOT_THE_HANDLERS = tuple(
    tracemalloc.Filter(False, pattern)
    for pattern in ("*/logging/*", "*/_pytest/*", "*/moto/*", "*/werkzeug/*", "*/tempfile.py", tracemalloc.__file__)
)
SCREENSHOT = table_screenshot()


class RecordedStarts:
    """A fake Workflow port: remembers what on_object_created (or reconcile) started; the test runs it."""

    def __init__(self) -> None:
        self.started: list[ProcessVersion] = []

    def start(self, request: ProcessVersion) -> StartOutcome:
        self.started.append(request)
        return StartOutcome.STARTED


@pytest.fixture
def warm(own_stack: Stack, monkeypatch: pytest.MonkeyPatch) -> tuple[Stack, RecordedStarts]:
    # A database and bucket of its own: reconcile walks every tenant and object, and the session's others hold many.
    stack = own_stack
    starts = RecordedStarts()
    # The workflow instance every service already holds starts nothing now: the test runs the steps itself.
    monkeypatch.setattr(stack.container.workflow, "start", starts.start)
    # Every handler's container() is the stack's own (own_stack puts it in place).
    return stack, starts


def invoke(step: str, event: dict[str, Any]) -> Any:
    handler = importlib.import_module(f"functions.{step}.handler").handler
    return handler(event, LocalLambdaContext(f"quire-{step}"))


def run_steps(request: ProcessVersion) -> dict[str, Any]:
    """The state machine's path through the steps, each through its own handler."""
    event = request.step_input()
    outcome = invoke("inspect", event)
    if outcome["proceed"]:
        outcome = invoke("extract", event)
    if outcome["proceed"] and outcome["recognize"]:
        outcome = invoke("recognize", event)
    if not outcome["proceed"]:
        return dict(outcome)
    chunked = invoke("chunk", event)
    for batch in chunked["batches"]:
        invoke("embed", {**event, "batch": batch})
    indexed = invoke("index", event)
    invoke("publish", indexed)  # the index step's output is publish's input, as the state machine passes it
    return dict(indexed)


def ingest(stack: Stack, starts: RecordedStarts, token: str, serial: int) -> None:
    if serial % 5 == 0:
        # A screenshot, read by OCR in the recognize step.
        ticket = stack.upload(token, f"dashboard-{serial}.png", "image/png", SCREENSHOT.content)
    else:
        text = f"Delivery note {serial}: pallet {serial} of crated lamps left the Rotterdam depot.\n".encode() * 20
        ticket = stack.upload(token, f"note-{serial}.txt", "text/plain", text)
    request = next(s for s in starts.started if s.version_id == ticket["versionId"])
    assert run_steps(request).get("indexed"), request
    status, _ = stack.json("POST", "/v1/search", token, {"query": f"pallet {serial} crated lamps", "limit": 3})
    assert status == 200
    # The Catch path and the sweep, warm too: an interruption recorded on a finished version changes nothing.
    invoke(
        "record_failure",
        {**request.step_input(), "failedStep": "index", "error": {"Error": "Timeout", "Cause": "{}"}},
    )
    invoke("reconcile", {})


def test_no_handler_keeps_state_across_warm_invocations(warm: tuple[Stack, RecordedStarts]) -> None:
    stack, starts = warm
    token = stack.token(collections=("docs",))
    # Given every handler imported and warm
    for serial in range(WARM_UP_FILES):
        ingest(stack, starts, token, serial)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces(_NOT_THE_HANDLERS)
        # When each runs many more times in the same process
        for serial in range(WARM_UP_FILES, WARM_UP_FILES + MEASURED_FILES):
            ingest(stack, starts, token, serial)
        starts.started.clear()
        gc.collect()
        after = tracemalloc.take_snapshot().filter_traces(_NOT_THE_HANDLERS)
    finally:
        tracemalloc.stop()
    growth = after.compare_to(before, "lineno")
    grown = sum(stat.size_diff for stat in growth)
    print(f"warm handlers: Python holds {grown:,} bytes more after {MEASURED_FILES} more files")
    # Then the memory Python holds did not grow with the invocations
    assert grown < ALLOWED_GROWTH_BYTES, (
        f"grew {grown:,} bytes; largest: {sorted(growth, key=lambda s: -s.size_diff)[:5]}"
    )
