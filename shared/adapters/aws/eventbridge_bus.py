"""The EventBus port on AWS: PutEvents to the environment's bus (source `quire`, detail-type the event type, detail
the event as every reader sees it), ten entries a call as the API allows. Any entry that failed fails the whole
publish: the relay's transaction rolls back and every event of the batch is published again, under the same ids
(a consumer deduplicates by `detail.eventId`)."""

import json
from collections.abc import Sequence
from typing import Any

from shared.adapters.aws.retrying import LazyClient
from shared.domain.events import EVENT_SOURCE, StoredEvent, event_body
from shared.ports import EventBus

SOURCE = EVENT_SOURCE
ENTRIES_PER_CALL = 10  # PutEvents' limit


class EventBridgePublishFailed(RuntimeError):
    pass


class EventBridgeBus(EventBus):
    def __init__(self, events_client: object, bus_name: str) -> None:
        self._client: LazyClient[Any] = LazyClient(events_client)
        self._bus = bus_name

    def publish(self, events: Sequence[StoredEvent]) -> None:
        for start in range(0, len(events), ENTRIES_PER_CALL):
            batch = events[start : start + ENTRIES_PER_CALL]
            answer = self._client.get().put_events(
                Entries=[
                    {
                        "EventBusName": self._bus,
                        "Source": SOURCE,
                        "DetailType": event.type.value,
                        "Detail": json.dumps(event_body(event)),
                        "Time": event.occurred_at,
                    }
                    for event in batch
                ]
            )
            if answer.get("FailedEntryCount", 0):
                failed: dict[str, Any] = next(
                    (entry for entry in answer.get("Entries", []) if entry.get("ErrorCode")), {}
                )
                raise EventBridgePublishFailed(
                    f"{answer['FailedEntryCount']} of {len(batch)} events were not published:"
                    f" {failed.get('ErrorCode')}: {failed.get('ErrorMessage')}"
                )
