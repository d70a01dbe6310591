"""Steps that several HTTP tests against the local Stack share: sample content, the calls that set a test up
(an indexed file, an artifact, a drained render queue), and a stand-in for an Object Created event that is lost."""

from typing import Any

from shared.services.upload_completion import Completion
from tests.integration.files_stack import Stack

RUNBOOK = b"""# Payments runbook

## Incident ERR-4021

Checkout failed for 47 minutes because the TLS certificate on the payments load balancer expired.
Renewal is now automated and an alarm fires thirty days before expiry.

## Refunds

Refunds above 500 EUR need a second approver from the finance team.
"""


def indexed(stack: Stack, token: str, filename: str, content: bytes, collection: str = "docs") -> dict[str, Any]:
    ticket = stack.upload(token, filename, "text/markdown", content, collection=collection)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, record = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert status == 200 and record["current"]["processingState"] == "indexed", record
    return record  # type: ignore[no-any-return]


def search(stack: Stack, token: str, query: str, **body: Any) -> dict[str, Any]:
    status, answer = stack.json("POST", "/v1/search", token, {"query": query, **body})
    assert status == 200, answer
    return answer  # type: ignore[no-any-return]


REPORT = """# Quarterly report

Revenue grew in every region.

## Risks

- Supply chain
- Currency

| Region | Revenue |
| --- | --- |
| North | 12 |
| South | 9 |
"""


def create(stack: Stack, token: str, body: dict[str, Any], expect: int = 201) -> Any:
    status, answer = stack.json("POST", "/v1/artifacts", token, {"collectionId": "docs", "name": "Q3", **body})
    assert status == expect, answer
    return answer


def drain(stack: Stack) -> None:
    stack.container.render_queue.drain()  # type: ignore[attr-defined]


class EventLost:
    """Fake for the container as the Object Created handler sees it: the event never arrives (EventBridge lost it),
    while every other handler (the API's, a sweep's) gets the stack's own parts. Put in place with
    `overridden(EventLost(stack.container))`."""

    def __init__(self, container: Any) -> None:
        self._container = container

    def __getattr__(self, name: str) -> Any:
        return getattr(self._container, name)

    class upload_completion:  # noqa: N801 - stands in for the container's attribute
        @staticmethod
        def object_created(key: str, version_id: str | None, size: int) -> Completion:
            return Completion.DUPLICATE
