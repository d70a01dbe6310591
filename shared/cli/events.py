"""`quire webhooks ...` and `quire events`: a collection admin's webhooks and their deliveries, and the event feed
(docs/events.md), through the API's routes like any other caller."""

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from shared.cli.common import (
    add_caller_options,
    add_collections_option,
    collections_client,
    print_result,
    reports_api_errors,
)
from shared.domain.auth import Role
from shared.domain.events import MAX_PAGE, EventType

if TYPE_CHECKING:
    from quire_client import Quire
    from quire_client.models import WebhookRequestBody

SHOWN_ONLY_NOW = "This secret is shown only now: keep it where your receiver verifies signatures."
EVENT_TYPES = ", ".join(sorted(EventType))
DELIVERY_PAGE_MAX = 100  # the API's largest page of deliveries


def add_event_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    _add_webhook_commands(commands)
    events = commands.add_parser(
        "events",
        help="list the caller's events after a cursor (--follow: keep printing new ones until Ctrl-C)",
        description="Without --follow, the cursor to continue from is printed last, on standard error.",
    )
    events.add_argument("--after", metavar="CURSOR", help="a cursor from before (`latest`: only what comes next)")
    events.add_argument("--collection", metavar="ID", help="only this collection's events")
    events.add_argument("--type", type=_comma_list, metavar="T1,T2", help=f"only these event types ({EVENT_TYPES})")
    events.add_argument("--follow", action="store_true", help="keep polling for new events until Ctrl-C")
    # Stop after this many events (tests: --follow ends without a signal).
    events.add_argument("--max-events", type=int, help=argparse.SUPPRESS)
    add_collections_option(events)
    events.add_argument("--json", action="store_true", help="{events, nextCursor}; with --follow one event a line")
    add_caller_options(events)
    events.set_defaults(run=cmd_events)


def _add_webhook_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    webhooks = commands.add_parser(
        "webhooks",
        help="a collection admin's webhooks: add, ls, rm, rotate, test, enable, deliveries, replay",
        description="The caller's token needs the admin role in every collection of a webhook (--collections).",
    )
    actions = webhooks.add_subparsers(dest="action", required=True)

    def action(name: str, run: Callable[[argparse.Namespace], int], help: str, *ids: str) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help)
        for id_name in ids:
            parser.add_argument(id_name)
        parser.set_defaults(run=run)
        return parser

    add = action("add", cmd_add, "register an endpoint; prints its signing secret, once")
    add.add_argument("url", help="https://… (plain http to loopback only, in the local stack)")
    add.add_argument(
        "--events",
        type=_comma_list,
        default=["*"],
        metavar="T1,T2",
        help=f"event types (default *: all; {EVENT_TYPES})",
    )
    add.add_argument("--description", default="", help="what the endpoint is for")
    action("ls", cmd_ls, "the webhooks of collections the caller administers")
    action("rm", cmd_rm, "delete a webhook and its deliveries", "webhook_id")
    action("rotate", cmd_rotate, "a new signing secret, shown once (the old one signs for 24 h)", "webhook_id")
    action("test", cmd_test, "send a webhook.test message to the endpoint", "webhook_id")
    action("enable", cmd_enable, "turn a disabled webhook on again", "webhook_id")
    deliveries = action("deliveries", cmd_deliveries, "a webhook's deliveries, newest first", "webhook_id")
    deliveries.add_argument(
        "--limit", type=_delivery_limit, default=20, help=f"how many (default 20, at most {DELIVERY_PAGE_MAX})"
    )
    replay = action("replay", cmd_replay, "send a delivery again (same body, same webhook-id)", "webhook_id")
    replay.add_argument("delivery_id")
    for parser in actions.choices.values():
        parser.add_argument(
            "--collections",
            default="default",
            help="comma-separated: the collections the webhook is for (add); the locally minted token is their admin",
        )
        parser.add_argument("--json", action="store_true", help="the API's answer as it is")
        add_caller_options(parser)


def _comma_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("names no event type")
    return names


def _delivery_limit(text: str) -> int:
    limit = int(text) if text.strip().isdigit() else 0
    if not 1 <= limit <= DELIVERY_PAGE_MAX:
        raise argparse.ArgumentTypeError(f"must be 1 to {DELIVERY_PAGE_MAX}")
    return limit


def _admin(args: argparse.Namespace) -> "Quire":
    """The typed client, with a token holding the admin role in --collections (webhooks are an admin's)."""
    return collections_client(args, args.collections.split(","), Role.ADMIN).quire


# Webhooks.


@reports_api_errors("webhooks add: {url}")
def cmd_add(args: argparse.Namespace) -> int:
    body: WebhookRequestBody = {"url": args.url, "events": args.events, "collectionIds": args.collections.split(",")}
    if args.description:
        body["description"] = args.description
    made = _admin(args).register_webhook(body)
    print_result(args, made, _print_secret)
    return 0


@reports_api_errors("webhooks ls")
def cmd_ls(args: argparse.Namespace) -> int:
    webhooks = _admin(args).list_webhooks()
    print_result(args, webhooks, lambda listed: _print_webhooks(listed["webhooks"]))
    return 0


@reports_api_errors("webhooks rm: {webhook_id}")
def cmd_rm(args: argparse.Namespace) -> int:
    _admin(args).delete_webhook(args.webhook_id)
    print_result(args, {"webhookId": args.webhook_id, "deleted": True}, lambda _: print(f"{args.webhook_id} deleted"))
    return 0


@reports_api_errors("webhooks rotate: {webhook_id}")
def cmd_rotate(args: argparse.Namespace) -> int:
    rotated = _admin(args).rotate_webhook_secret(args.webhook_id)
    print_result(args, rotated, _print_secret)
    return 0


@reports_api_errors("webhooks test: {webhook_id}")
def cmd_test(args: argparse.Namespace) -> int:
    delivery = _admin(args).test_webhook(args.webhook_id)
    print_result(
        args,
        delivery,
        lambda sent: print(
            f"{sent['eventType']} delivery {sent['deliveryId']} {sent['state']}: how it went is in"
            f" quire webhooks deliveries {args.webhook_id}"
        ),
    )
    return 0


@reports_api_errors("webhooks enable: {webhook_id}")
def cmd_enable(args: argparse.Namespace) -> int:
    webhook = _admin(args).enable_webhook(args.webhook_id)
    print_result(args, webhook, lambda enabled: _print_webhooks([enabled]))
    return 0


@reports_api_errors("webhooks deliveries: {webhook_id}")
def cmd_deliveries(args: argparse.Namespace) -> int:
    page = _admin(args).list_deliveries(args.webhook_id, limit=args.limit)
    print_result(args, page, lambda listed: _print_deliveries(listed["deliveries"]))
    return 0


@reports_api_errors("webhooks replay: {webhook_id} {delivery_id}")
def cmd_replay(args: argparse.Namespace) -> int:
    delivery = _admin(args).replay_delivery(args.webhook_id, args.delivery_id)
    print_result(
        args,
        delivery,
        lambda again: print(
            f"delivery {again['deliveryId']} {again['state']} again: the same body under webhook-id"
            f" {again['messageId']}"
        ),
    )
    return 0


def _print_secret(answer: Any) -> None:
    webhook = answer["webhook"]
    _print_webhooks([webhook])
    print(f"secret  {answer['secret']}")
    if webhook.get("previousSecretExpiresAt"):
        print(f"The previous secret signs too until {webhook['previousSecretExpiresAt']}.")
    print(SHOWN_ONLY_NOW)


def _print_webhooks(webhooks: Sequence[Any]) -> None:
    if not webhooks:
        print("no webhooks")
        return
    rows = [
        [
            webhook["webhookId"],
            webhook["state"],
            webhook["url"],
            ",".join(webhook["events"]),
            ",".join(webhook["collectionIds"]),
            _trouble(webhook),
        ]
        for webhook in webhooks
    ]
    _print_table(["webhook", "state", "url", "events", "collections", "failing since / disabled"], rows)


def _trouble(webhook: Any) -> str:
    if webhook.get("disabledReason"):
        return str(webhook["disabledReason"])
    return f"failing since {webhook['failingSince']}" if webhook.get("failingSince") else ""


def _print_deliveries(deliveries: Sequence[Any]) -> None:
    if not deliveries:
        print("no deliveries")
        return
    rows = [
        [
            delivery["deliveryId"],
            delivery["eventType"],
            delivery["state"],
            str(delivery["attempts"]),
            _last_outcome(delivery),
            delivery["createdAt"],
        ]
        for delivery in deliveries
    ]
    _print_table(["delivery", "event", "state", "attempts", "last status / error", "created"], rows)


def _last_outcome(delivery: Any) -> str:
    status = f"HTTP {delivery['lastStatus']}" if delivery.get("lastStatus") is not None else ""
    return "; ".join(part for part in (status, delivery.get("lastError") or "") if part)


def _print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]
    for row in [headers, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


# Events.


def cmd_events(args: argparse.Namespace) -> int:
    from shared.local.api_client import ApiError

    client = collections_client(args, args.collections.split(","), Role.READ).quire
    feed = EventFeed(client, args.after, args.collection, args.type)
    try:
        if args.follow:
            for event in feed.follow(max_events=args.max_events):
                print(json.dumps(event) if args.json else event_line(event), flush=True)
            return 0
        events = list(feed.read(max_events=args.max_events))
    except ApiError as error:
        print(f"quire events: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if args.follow:  # how --follow is meant to end
            return 0
        raise
    if args.json:
        print(json.dumps({"events": events, "nextCursor": feed.cursor}, indent=2))
    else:
        for event in events:
            print(event_line(event))
        print(f"next cursor: {feed.cursor}", file=sys.stderr)
    return 0


class EventFeed:
    """`GET /v1/events` page after page from a cursor (`cursor` is where the next page starts), through the typed
    client's `list_events`: read up to now, or follow, waiting with the client's polling backoff while caught up.
    (The client's own `iter_events` takes no event types, which this passes to the API.)"""

    def __init__(
        self,
        client: "Quire",
        after: str | None,
        collection_id: str | None,
        types: list[str] | None,
        *,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self._client = client
        self.cursor = after
        self._collection_id = collection_id
        self._types = ",".join(types) if types else None
        self._sleep = sleep or time.sleep

    def read(self, *, max_events: int | None = None) -> Iterator[Any]:
        """Every event after the cursor, until a page comes back empty (caught up)."""
        return self._events(follow=False, max_events=max_events)

    def follow(self, *, max_events: int | None = None) -> Iterator[Any]:
        """Every event after the cursor and then each new one as it is published, until `max_events` (or forever)."""
        return self._events(follow=True, max_events=max_events)

    def _events(self, *, follow: bool, max_events: int | None) -> Iterator[Any]:
        from quire_client import Polling

        given = 0
        delays = Polling().delays()
        while max_events is None or given < max_events:
            # A page no longer than what is still wanted, so the cursor ends exactly after the last event given.
            limit = MAX_PAGE if max_events is None else min(MAX_PAGE, max_events - given)
            page = self._client.list_events(
                after=self.cursor, limit=limit, collection_id=self._collection_id, type=self._types
            )
            events = page["events"]
            self.cursor = page["nextCursor"]
            yield from events
            given += len(events)
            if events:
                delays = Polling().delays()
            elif follow:
                self._sleep(next(delays))
            else:
                return


def event_line(event: Any) -> str:
    """`occurredAt  type  collection  file=… version=…  reason`: one event on one line."""
    data = event.get("data", {})
    ids = " ".join(f"{name}={data[key]}" for key, name in _IDS if data.get(key) is not None)
    reason = next((str(data[key]) for key in _REASONS if data.get(key)), "")
    parts = [event["occurredAt"], event["type"], event["collectionId"], ids, reason]
    return "  ".join(part for part in parts if part)


_IDS = (
    ("fileId", "file"),
    ("versionId", "version"),
    ("exportId", "export"),
    ("replacementId", "replacement"),
    ("webhookId", "webhook"),
    ("direction", "direction"),
    ("metadataRevision", "revision"),
)
_REASONS = ("failureReason", "rejectionReason", "reason")
