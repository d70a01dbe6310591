"""Events and webhooks (docs/events.md): the event list a product catches up with, and a collection admin's
endpoints with their deliveries."""

from datetime import datetime
from typing import Annotated
from uuid import UUID

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from functions.api.routes.context import current_principal, json_response, parse_id
from functions.views.events import (
    DeliveryListView,
    DeliveryView,
    EventPageView,
    WebhookListView,
    WebhookRequestBody,
    WebhookSecretView,
    WebhookView,
)
from shared.bootstrap import container
from shared.domain.errors import InvalidRequest
from shared.domain.events import DEFAULT_PAGE, MAX_PAGE, EventCursor
from shared.domain.webhooks import WebhookRequest

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
MAX_DELIVERY_PAGE = 100


@router.get("/v1/events")
def list_events(
    after: Annotated[str | None, Query(max_length=EventCursor.MAX_CHARACTERS)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = DEFAULT_PAGE,
    collection_id: Annotated[str | None, Query(alias="collectionId", max_length=64)] = None,
    type_: Annotated[str | None, Query(alias="type", max_length=400)] = None,
) -> EventPageView:
    """The tenant's events in the collections the caller reads, oldest first, after the cursor `after` (none: the
    oldest kept, 14 days; `latest`: no events, only the cursor after the last one published). `type` is a
    comma-separated list of event types. Pass `nextCursor` back as `after`."""
    types = [name.strip() for name in type_.split(",") if name.strip()] if type_ else None
    page = container().webhooks.events(
        current_principal(router), after=after, limit=limit, collection_id=collection_id, types=types
    )
    return EventPageView.of(page)


@router.post("/v1/webhooks")
def register_webhook(body: WebhookRequestBody) -> Response[WebhookSecretView]:
    """Register an endpoint (the admin role in every collection it names). The answer holds the signing secret,
    shown this once. An unsafe URL is a 400 naming the rule it breaks."""
    registered = container().webhooks.register(
        current_principal(router),
        WebhookRequest(
            url=body.url, events=body.events, collection_ids=body.collection_ids, description=body.description
        ),
    )
    return json_response(201, WebhookSecretView(webhook=WebhookView.of(registered.webhook), secret=registered.secret))


@router.get("/v1/webhooks")
def list_webhooks() -> WebhookListView:
    """The webhooks whose every collection the caller administers."""
    return WebhookListView(
        webhooks=[WebhookView.of(w) for w in container().webhooks.list_webhooks(current_principal(router))]
    )


@router.get("/v1/webhooks/<webhook_id>")
def get_webhook(webhook_id: str) -> WebhookView:
    return WebhookView.of(container().webhooks.get(current_principal(router), parse_id(webhook_id)))


@router.delete("/v1/webhooks/<webhook_id>")
def delete_webhook(webhook_id: str) -> Response[str]:
    container().webhooks.delete(current_principal(router), parse_id(webhook_id))
    return Response(status_code=204, body="")


@router.post("/v1/webhooks/<webhook_id>/rotate-secret")
def rotate_webhook_secret(webhook_id: str) -> WebhookSecretView:
    """A new signing secret, shown this once; the previous one still signs for 24 hours."""
    registered = container().webhooks.rotate_secret(current_principal(router), parse_id(webhook_id))
    return WebhookSecretView(webhook=WebhookView.of(registered.webhook), secret=registered.secret)


@router.post("/v1/webhooks/<webhook_id>/enable")
def enable_webhook(webhook_id: str) -> WebhookView:
    """Turn a disabled webhook on again (its failing streak starts over)."""
    return WebhookView.of(container().webhooks.enable(current_principal(router), parse_id(webhook_id)))


@router.get("/v1/webhooks/<webhook_id>/deliveries")
def list_deliveries(
    webhook_id: str,
    limit: Annotated[int, Query(ge=1, le=MAX_DELIVERY_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=100)] = None,
) -> DeliveryListView:
    """The webhook's deliveries, newest first, with each attempt's outcome and the exact body sent."""
    before = None
    if cursor:
        try:
            at, _, delivery_id = cursor.partition("~")
            before = (datetime.fromisoformat(at), UUID(delivery_id))
        except ValueError:
            raise InvalidRequest("cursor: not one this API gave: pass back `nextCursor` exactly") from None
    deliveries = container().webhooks.deliveries(
        current_principal(router), parse_id(webhook_id), limit=limit, before=before
    )
    last = deliveries[-1] if len(deliveries) == limit else None
    next_cursor = f"{last.created_at.isoformat()}~{last.delivery_id}" if last else None
    return DeliveryListView(deliveries=[DeliveryView.of(d) for d in deliveries], next_cursor=next_cursor)


@router.post("/v1/webhooks/<webhook_id>/deliveries/<delivery_id>/replay")
def replay_delivery(webhook_id: str, delivery_id: str) -> Response[DeliveryView]:
    """Send a delivery again: the same body under the same `webhook-id`, now."""
    replayed = container().webhooks.replay(current_principal(router), parse_id(webhook_id), parse_id(delivery_id))
    return json_response(202, DeliveryView.of(replayed))


@router.post("/v1/webhooks/<webhook_id>/test")
def test_webhook(webhook_id: str) -> Response[DeliveryView]:
    """Send a `webhook.test` message to this endpoint; its delivery (and how it went) is in the deliveries list."""
    delivery = container().webhooks.send_test(current_principal(router), parse_id(webhook_id))
    return json_response(202, DeliveryView.of(delivery))
