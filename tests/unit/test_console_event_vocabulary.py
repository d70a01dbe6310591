"""The console's list of event types (events.js EVENT_TYPES, the webhook form's checkboxes) names every type the API
sends and no other, and the types its event follower asks for are among them: a type added or renamed on the server
fails here, not in an admin's form."""

import re
from pathlib import Path

from shared.domain.events import EventType

EVENTS_MODULE = Path(__file__).resolve().parents[2] / "console" / "events.js"


def array_of(name: str) -> list[str]:
    """The strings of `export const NAME = [ "…", … ];` in events.js."""
    source = EVENTS_MODULE.read_text(encoding="utf-8")
    body = re.search(rf"export const {name} = \[(.*?)\];", source, re.DOTALL)
    assert body is not None, f"events.js has no `export const {name} = [...];`"
    return re.findall(r'"([^"]+)"', body.group(1))


def test_the_console_offers_every_event_type_the_api_sends() -> None:
    listed = array_of("EVENT_TYPES")
    assert len(listed) == len(set(listed))
    assert set(listed) == {event_type.value for event_type in EventType}


def test_the_console_follows_only_file_event_types_the_api_sends() -> None:
    followed = set(array_of("FILE_EVENT_TYPES"))
    assert followed and followed <= {event_type.value for event_type in EventType}
    assert all(name.startswith("file.") for name in followed)
