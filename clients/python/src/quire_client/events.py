"""The event feed (`GET /v1/events`) as the client reads it: an event's shape, the terminal events of a version,
and how a version's state is judged when polling the file instead."""

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

Outcome = Literal["indexed", "failed", "rejected"]
# The event that ends a version's processing, and the outcome it means.
TERMINAL_EVENTS: dict[str, Outcome] = {
    "file.version.indexed": "indexed",
    "file.version.failed": "failed",
    "file.version.rejected": "rejected",
}


class EventData(TypedDict):
    fileId: str
    versionId: NotRequired[str]
    version: NotRequired[int]
    failureReason: NotRequired[str]
    failureSentence: NotRequired[str]
    rejectionReason: NotRequired[str]


class Event(TypedDict):
    """One domain event, as `GET /v1/events` lists it and a webhook delivers it."""

    eventId: str
    type: str
    occurredAt: str
    tenantId: str
    collectionId: str
    data: EventData
    # In the list only: the cursor just after this event (resume from mid-page).
    cursor: NotRequired[str | None]


class EventPage(TypedDict):
    events: list[Event]
    nextCursor: str


def outcome_of_event(event: Event, file_id: str, version_id: str) -> Outcome | None:
    """The outcome `event` settles for this version, or None when it is about something else."""
    data: Mapping[str, Any] = event.get("data", {})
    if data.get("fileId") != file_id or data.get("versionId", version_id) != version_id:
        return None
    return TERMINAL_EVENTS.get(event.get("type", ""))


def outcome_of_file(record: Mapping[str, Any], version_id: str) -> Outcome | None:
    """The outcome of the version `version_id` in a file's view, or None while it is still on its way."""
    versions = [record.get("current", {}), *record.get("versions", [])]
    version: Mapping[str, Any] = next((v for v in versions if v.get("versionId") == version_id), versions[0])
    if version.get("state") == "rejected":
        return "rejected"
    processing = version.get("processingState")
    return processing if processing in ("indexed", "failed") else None
