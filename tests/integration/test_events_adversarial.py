"""Events and webhooks routes over HTTP, adversarially (issue 34; from its independent review): paging a webhook's
deliveries made in one transaction, what the event list's cursor tells a reader of one collection about the others
(nothing), and hostile bodies, queries and cursors (a 4xx, never a 500)."""

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from shared.domain.auth import Role
from tests.integration.files_stack import Stack
from tests.webhook_receiver import Receiver, https_receiver

DOC = b"# Plan\n\nThe harbour project starts in March.\n"


@pytest.fixture
def receiver(stack: Stack) -> Iterator[Receiver]:
    assert stack.receiver_certificate is not None
    with https_receiver(*stack.receiver_certificate) as running:
        yield running


def test_paging_a_webhooks_deliveries_shows_every_delivery(stack: Stack, receiver: Receiver) -> None:
    """Deliveries made by one relay run share `created_at` (the transaction's now()); the page cursor is the last
    one's created_at and the next page asks for `created_at < cursor`: the rest of that run's deliveries are never
    listed."""
    token = stack.token(tenant="rv-pages")
    status, made = stack.json(
        "POST", "/v1/webhooks", token, {"url": receiver.url(), "events": ["*"], "collectionIds": ["docs"]}
    )
    assert status == 201, made
    webhook_id = made["webhook"]["webhookId"]
    for index in range(3):
        stack.processed_markdown(token, f"plan-{index}.md", DOC + str(index).encode(), None)
    stack.container.event_relay.relay_all()  # one run: one transaction makes all three deliveries
    status, everything = stack.json("GET", f"/v1/webhooks/{webhook_id}/deliveries?limit=100", token)
    assert status == 200
    total = len(everything["deliveries"])
    seen: list[str] = []
    cursor = None
    for _ in range(total + 2):
        query = "limit=1" + (f"&cursor={quote(cursor)}" if cursor else "")
        status, page = stack.json("GET", f"/v1/webhooks/{webhook_id}/deliveries?{query}", token)
        assert status == 200, page
        seen += [d["deliveryId"] for d in page["deliveries"]]
        cursor = page["nextCursor"]
        if not cursor:
            break
    print(f"{total} deliveries in one page of 100; paging one at a time listed {len(seen)}")
    assert total >= 3
    assert len(seen) == total, "paging skipped deliveries made in the same transaction"


def test_a_reader_of_one_collection_cannot_watch_another_collections_activity(stack: Stack) -> None:
    """`nextCursor` jumps to the tenant's head when a page is not full, and `after=latest` is the tenant's head:
    both move when an event is published in a collection the caller cannot read."""
    tenant = "rv-watch"
    docs_reader = stack.token(tenant=tenant, collections=("docs",), role=Role.READ)
    status, before = stack.json("GET", "/v1/events?after=latest", docs_reader)
    assert status == 200
    legal_writer = stack.token(tenant=tenant, collections=("legal",))
    stack.processed_markdown(legal_writer, "secret-deal.md", DOC, None, collection="legal")
    stack.container.event_relay.relay_all()
    status, latest = stack.json("GET", "/v1/events?after=latest", docs_reader)
    status, page = stack.json("GET", f"/v1/events?after={before['nextCursor']}", docs_reader)
    assert page["events"] == []
    print(f"docs reader: latest {before['nextCursor']} -> {latest['nextCursor']}; page cursor -> {page['nextCursor']}")
    assert latest["nextCursor"] == before["nextCursor"], "an event in `legal` moved the docs reader's `latest`"
    assert page["nextCursor"] == before["nextCursor"], "an event in `legal` moved the docs reader's cursor"


HOSTILE_BODIES: list[Any] = [
    None,
    [],
    "text",
    {"url": 5, "events": "*", "collectionIds": "docs"},
    {"url": "https://receiver.quire.test/", "events": [None], "collectionIds": ["docs"]},
    {"url": "https://receiver.quire.test/", "events": ["*"], "collectionIds": [{"a": 1}]},
    {"url": "https://receiver.quire.test/", "events": ["*" * 100_000], "collectionIds": ["docs"]},
    {"url": "https://receiver.quire.test/", "events": ["*"], "collectionIds": ["docs"] * 100_000},
    {"url": "https://receiver.quire.test/", "events": ["*"], "collectionIds": ["docs\u0000"]},
    {"url": "https://receiver.quire.test/\u0000", "events": ["*"], "collectionIds": ["docs"]},
    {"url": "https://receiver.quire.test/", "events": ["*"], "collectionIds": ["docs"], "description": "\u0000"},
    {"url": "https://receiver.quire.test/", "events": ["*"], "collectionIds": ["docs"], "description": "x" * 10_000},
    {
        "url": "https://receiver.quire.test/",
        "events": ["*"],
        "collectionIds": ["docs"],
        "description": "\ud83d\ude00" * 500,
    },
    {"url": "https://receiver.quire.test/", "events": ["*"], "collectionIds": ["docs"], "description": {"a": [1]}},
    {"url": "https://\u0445\u0430\u0440\u0431\u043e\u0440.test/", "events": ["*"], "collectionIds": ["docs"]},
    {"url": "https://" + "\u00fc" * 80 + ".test/", "events": ["*"], "collectionIds": ["docs"]},
    {"url": "https://receiver.quire.test:99999/", "events": ["*"], "collectionIds": ["docs"]},
    {"url": "https://[::1/", "events": ["*"], "collectionIds": ["docs"]},
    {"url": "https://[v1.x]/", "events": ["*"], "collectionIds": ["docs"]},
    {"url": "https://receiver.quire.test/", "events": ["*"], "collectionIds": ["docs"], "nested": [[[[[[[[]]]]]]]]},
]


@pytest.mark.parametrize("body", HOSTILE_BODIES, ids=[str(i) for i in range(len(HOSTILE_BODIES))])
def test_a_hostile_registration_is_never_a_500(stack: Stack, body: Any) -> None:
    token = stack.token(tenant="rv-fuzz")
    status, raw = stack.call("POST", "/v1/webhooks", token, body)
    print(status, raw[:300])
    assert status < 500, raw[:500]


HOSTILE_QUERIES = [
    "limit=0",
    "limit=-1",
    "limit=99999999999999999999999",
    "limit=1e3",
    "after=99999999999999999999",
    "after=%00",
    "after=-1",
    "after=%EF%BC%91",  # a fullwidth digit: isdigit() but not ASCII
    "after=%C2%B2",  # superscript two
    "type=%00",
    "type=" + "file.deleted," * 30,
    "type=,,,,",
    "collectionId=%00",
    "collectionId=" + "x" * 5000,
    "after=latest&type=file.nope",
    "limit=1&limit=2",
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_a_hostile_event_query_is_a_4xx_or_a_page(stack: Stack, query: str) -> None:
    token = stack.token(tenant="rv-fuzz")
    status, raw = stack.call("GET", f"/v1/events?{query}", token)
    print(status, raw[:300])
    assert status < 500, raw[:500]
    if status == 200:
        assert "nextCursor" in json.loads(raw)


HOSTILE_DELIVERY_CURSORS = ["%00", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00%2B23:59", "2026-13-01", "x" * 40]


@pytest.mark.parametrize("cursor", HOSTILE_DELIVERY_CURSORS)
def test_a_hostile_deliveries_cursor_is_a_4xx_or_a_page(stack: Stack, receiver: Receiver, cursor: str) -> None:
    token = stack.token(tenant="rv-fuzz-cursor")
    status, made = stack.json(
        "POST", "/v1/webhooks", token, {"url": receiver.url(), "events": ["*"], "collectionIds": ["docs"]}
    )
    if status != 201:  # the tenant's 50 are made by earlier parameters
        status, listed = stack.json("GET", "/v1/webhooks", token)
        webhook_id = listed["webhooks"][0]["webhookId"]
    else:
        webhook_id = made["webhook"]["webhookId"]
    status, raw = stack.call("GET", f"/v1/webhooks/{webhook_id}/deliveries?cursor={cursor}", token)
    print(status, raw[:300])
    assert status < 500, raw[:500]


def test_docs_an_unknown_type_is_a_400_with_after_latest_too(stack: Stack) -> None:
    """docs/api.md: '400 for ... an unknown type'; with after=latest the type is not read at all."""
    status, raw = stack.call("GET", "/v1/events?after=latest&type=file.exploded", stack.token(tenant="rv-docs"))
    print(status, raw[:200])
    assert status == 400


def test_docs_a_cursor_this_api_never_gave_is_a_400(stack: Stack) -> None:
    """docs/api.md: '400 for a cursor this API never gave'. A cursor past the head is taken, echoed back, and every
    page after it is empty ('caught up') until positions pass it: a product that stored a bad cursor never learns."""
    token = stack.token(tenant="rv-docs")
    status, raw = stack.call("GET", "/v1/events?after=99999999999999999999", token)
    print(status, raw[:200])
    assert status == 400
