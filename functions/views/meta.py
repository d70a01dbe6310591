"""What the API tells a client about itself (camelCase on the wire, like the rest of the API)."""

from functions.views.base import ApiModel
from shared.domain.events import EventType
from shared.domain.uploads import ACCEPTED_TYPES, AcceptedType


class AcceptedTypeView(ApiModel):
    media_type: str
    extensions: list[str]
    kind: str

    @classmethod
    def of(cls, accepted: AcceptedType) -> "AcceptedTypeView":
        return cls(media_type=accepted.media_type, extensions=list(accepted.extensions), kind=accepted.kind)


class MetaView(ApiModel):
    """The vocabularies a client needs and must not copy: the upload types the API accepts (each media type
    with the extensions a file of it must have), and the event types a webhook may ask for (docs/events.md)."""

    accepted_types: list[AcceptedTypeView]
    event_types: list[str]

    @classmethod
    def current(cls) -> "MetaView":
        return cls(
            accepted_types=[AcceptedTypeView.of(accepted) for accepted in ACCEPTED_TYPES],
            event_types=[event_type.value for event_type in EventType],
        )
