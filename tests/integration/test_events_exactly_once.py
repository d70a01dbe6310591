"""Exactly once (issue 34): every Object Created event delivered three times, relays crashing before and after the
publish, relays and deliverers running at once; then each version's terminal event was published once per state by
`eventId`, each matching webhook got it at least once (signed), and the receiver's log with duplicates removed equals
the database's state changes, in order per file. Another collection's and another tenant's webhooks get none of
it."""

import contextlib
import json
import random
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import standardwebhooks

from functions.on_object_created.handler import handler as on_object_created
from shared.domain.events import StoredEvent
from shared.local.http_api import LocalLambdaContext
from shared.local.s3_server import object_created_event
from shared.services.event_relay import EventRelay
from shared.services.webhook_delivery import WebhookDeliverer
from tests.integration.files_stack import PNG, Stack
from tests.webhook_receiver import Receiver, https_receiver

TENANT = "ev-once"
GOOD = 8
REJECTED = 2
FAILED = 2


class CrashingBus:
    """Fake for the bus port around the real one: crashes at a boundary the schedule names, "before" (nothing
    published) or "after" (published, then the relay dies before the outbox is marked)."""

    def __init__(self, real: Any, schedule: list[str], seed: int) -> None:
        self._real = real
        self._schedule = schedule
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.crashes: dict[str, int] = defaultdict(int)

    def publish(self, events: Sequence[StoredEvent]) -> None:
        with self._lock:
            mode = self._schedule.pop(0) if self._schedule else self._random.choice(["ok", "ok", "before", "after"])
        if mode == "before":
            self.crashes["before"] += 1
            raise ConnectionError("the relay died before publishing")
        self._real.publish(events)
        if mode == "after":
            self.crashes["after"] += 1
            raise ConnectionError("the relay died after publishing, before marking the outbox")


def upload_with_triple_delivery(stack: Stack, token: str, name: str, media_type: str, content: bytes) -> dict[str, Any]:
    ticket = stack.upload(token, name, media_type, content)
    key = ticket["upload"]["fields"]["key"]
    found = stack.container.file_metadata.find_version(TENANT, uuid.UUID(ticket["versionId"]))
    assert found is not None
    event = object_created_event(stack.bucket, key, found[1].storage_version_id, len(content), "etag")
    # The S3 server delivered it once already; twice more, at once.
    threads = [threading.Thread(target=on_object_created, args=(event, LocalLambdaContext())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return ticket  # type: ignore[no-any-return]


class UnwokenQueue:
    """Fake for the delivery queue: wakes nobody, so the test's own deliverers (one of them crashing) take the
    deliveries; the stack's sweep may join them, as another worker would."""

    def wake(self, tenant_id: str, delivery_ids: Sequence[uuid.UUID], *, delay_seconds: int = 0) -> None:
        pass


class CrashAfterSendStore:
    """Fake for the webhook store around the real one: the first `crashes` attempts are sent but never recorded (the
    deliverer died between the send and the record), so their lease runs out and another deliverer sends them
    again: the receiver sees them twice, under one webhook-id."""

    def __init__(self, real: Any, crashes: int) -> None:
        self._real = real
        self._crashes = crashes
        self._lock = threading.Lock()
        self.crashed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def record_attempt(self, *args: Any, **kwargs: Any) -> None:
        with self._lock:
            if self.crashed < self._crashes:
                self.crashed += 1
                raise ConnectionError("the deliverer died after sending, before recording")
        self._real.record_attempt(*args, **kwargs)


def relay_until_empty(stack: Stack, bus: CrashingBus) -> None:
    relay = EventRelay(stack.container.event_outbox, bus, UnwokenQueue())

    def run() -> None:
        for _ in range(200):
            try:
                relay.relay_tenant(TENANT)
            except ConnectionError:
                continue
            with stack.container.database.tenant_transaction(TENANT) as conn:
                row = conn.execute("SELECT count(*) FROM events WHERE published_at IS NULL").fetchone()
            if row is not None and row[0] == 0:
                return

    relays = [threading.Thread(target=run) for _ in range(3)]
    for thread in relays:
        thread.start()
    for thread in relays:
        thread.join()


def deliver_with_crashes(stack: Stack) -> CrashAfterSendStore:
    """Two deliverers at once whose first sends are never recorded, then (their leases spent) two sound ones."""
    crashing = CrashAfterSendStore(stack.container.webhook_store, crashes=2)
    flaky = WebhookDeliverer(crashing, stack.container.webhook_sender, lease_seconds=1)

    def run_flaky() -> None:
        with contextlib.suppress(ConnectionError):
            flaky.deliver_due(TENANT)

    for target in (run_flaky, run_flaky):
        threads = [threading.Thread(target=target) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    time.sleep(1.2)  # the crashed deliveries' leases run out
    sound = [threading.Thread(target=stack.container.webhook_deliverer.deliver_due, args=(TENANT,)) for _ in range(2)]
    for thread in sound:
        thread.start()
    for thread in sound:
        thread.join()
    return crashing


def wait_for_no_pending_deliveries(stack: Stack) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with stack.container.database.tenant_transaction(TENANT) as conn:
            row = conn.execute("SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'").fetchone()
        if row is not None and row[0] == 0:
            return
        time.sleep(0.1)
    raise AssertionError("webhook deliveries still pending after 60 s")


def register_webhooks(stack: Stack, token: str, receiver: Receiver) -> dict[str, str]:
    """Four endpoints on one receiver, told apart by path; their secrets by path."""
    secrets = {}
    for path, events, collections, caller in (
        ("/all", ["*"], ["docs"], token),
        ("/indexed", ["file.version.indexed"], ["docs"], token),
        ("/legal", ["*"], ["legal"], token),
        ("/other-tenant", ["*"], ["docs"], stack.token(tenant="ev-once-other")),
    ):
        status, made = stack.json(
            "POST", "/v1/webhooks", caller, {"url": receiver.url(path), "events": events, "collectionIds": collections}
        )
        assert status == 201, made
        secrets[path] = made["secret"]
    return secrets


def upload_everything(stack: Stack, token: str) -> str:
    """Good, rejected and failing uploads, each event delivered three times; then one file's later changes, in
    order: two metadata revisions and a move to the other collection. Returns that file's id."""
    tickets = [
        upload_with_triple_delivery(
            stack, token, f"note-{i}.md", "text/markdown", f"# Note {i}\n\nAbout harbours {i}.\n".encode()
        )
        for i in range(GOOD)
    ]
    for i in range(REJECTED):
        upload_with_triple_delivery(stack, token, f"photo-{i}.jpg", "image/jpeg", PNG)
    for i in range(FAILED):
        broken = b"%PDF-1.7\n" + bytes(range(256)) * 4
        upload_with_triple_delivery(stack, token, f"broken-{i}.pdf", "application/pdf", broken)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    moved = str(tickets[0]["fileId"])
    for value in ("draft", "final"):
        status, _ = stack.json("PATCH", f"/v1/files/{moved}/metadata", token, {"set": {"stage": value}})
        assert status == 200
    status, answer = stack.json("POST", f"/v1/files/{moved}/move", token, {"collectionId": "legal"})
    assert status == 200, answer
    return moved


def expected_terminal_events(stack: Stack) -> set[tuple[str, str]]:
    """What the database says each version ended as."""
    with stack.container.database.tenant_transaction(TENANT) as conn:
        versions = conn.execute(
            "SELECT version_id, state, processing_state FROM file_versions WHERE tenant_id = %s", (TENANT,)
        ).fetchall()
    expected = set()
    for version_id, state, processing in versions:
        kind = "rejected" if state == "rejected" else processing
        assert kind in ("indexed", "failed", "rejected"), (version_id, state, processing)
        expected.add((f"file.version.{kind}", str(version_id)))
    assert sum(1 for kind, _ in expected if kind == "file.version.indexed") == GOOD
    assert sum(1 for kind, _ in expected if kind == "file.version.rejected") == REJECTED
    assert sum(1 for kind, _ in expected if kind == "file.version.failed") == FAILED
    return expected


def published_bodies(stack: Stack) -> dict[str, set[str]]:
    """Each of the tenant's event ids on the bus (its archive), with the distinct bodies published under it."""
    published: dict[str, set[str]] = defaultdict(set)
    archive = stack.container.settings.event_archive_file
    assert archive is not None
    for line in archive.read_text().splitlines():
        detail = json.loads(json.loads(line)["Detail"])
        if detail["tenantId"] == TENANT:
            published[detail["eventId"]].add(json.dumps(detail, sort_keys=True))
    return published


def verified_by_path(received: list[Any], secrets: dict[str, str]) -> dict[str, list[Any]]:
    """Every receipt's payload, each signature verified by the standardwebhooks package, by endpoint path."""
    by_path: dict[str, list[Any]] = defaultdict(list)
    for message in received:
        payload = standardwebhooks.Webhook(secrets[message.path]).verify(message.body, message.headers)
        assert message.headers["webhook-id"] == payload["eventId"]
        by_path[message.path].append(payload)
    return by_path


def deduplicated(payloads: list[Any]) -> list[Any]:
    """A receiver's log with repeats of an id removed, first receipt kept (as a receiver deduplicates)."""
    seen: dict[str, Any] = {}
    for payload in payloads:
        seen.setdefault(payload["eventId"], payload)
    return list(seen.values())


def test_every_state_change_is_published_once_by_id_and_delivered_at_least_once(own_stack: Stack) -> None:
    # A database of its own: no relay but this test's (crashing) ones publishes its events.
    stack = own_stack
    token = stack.token(tenant=TENANT, collections=("docs", "legal"))
    assert stack.receiver_certificate is not None
    with https_receiver(*stack.receiver_certificate) as receiver:
        secrets = register_webhooks(stack, token, receiver)
        moved = upload_everything(stack, token)
        bus = CrashingBus(stack.container.event_bus, ["before", "after", "after", "before"], seed=34)
        relay_until_empty(stack, bus)
        crashing = deliver_with_crashes(stack)
        wait_for_no_pending_deliveries(stack)
        received = list(receiver.received)

    expected = expected_terminal_events(stack)
    with stack.container.database.tenant_transaction(TENANT) as conn:
        stored = conn.execute(
            "SELECT event_id, type, data FROM events WHERE tenant_id = %s ORDER BY seq", (TENANT,)
        ).fetchall()
    terminal = [(kind, data["versionId"]) for _, kind, data in stored if kind.startswith("file.version.")]
    assert sorted(terminal) == sorted(expected)  # once each, and nothing invented

    # The bus got every event; duplicates (from the crashes after publishing) carry the same id and body.
    published = published_bodies(stack)
    assert set(published) == {str(event_id) for event_id, *_ in stored}
    assert all(len(bodies) == 1 for bodies in published.values())
    assert bus.crashes["before"] >= 2 and bus.crashes["after"] >= 2

    by_path = verified_by_path(received, secrets)
    assert by_path["/other-tenant"] == []
    assert crashing.crashed == 2 and len(received) > len({m.headers["webhook-id"] + m.path for m in received})
    everything = deduplicated(by_path["/all"])
    assert {
        (e["type"], e["data"]["versionId"]) for e in everything if e["type"].startswith("file.version.")
    } == expected
    assert {e["eventId"] for e in everything} == {str(i) for i, _, data in stored if data.get("direction") != "in"}
    indexed = {pair for pair in expected if pair[0] == "file.version.indexed"}
    assert {(e["type"], e["data"]["versionId"]) for e in deduplicated(by_path["/indexed"])} == indexed
    assert [(e["type"], e["data"].get("direction")) for e in deduplicated(by_path["/legal"])] == [("file.moved", "in")]
    # In order per file: the moved file's events reached /all as they were written.
    of_moved = [e for e in everything if e["data"].get("fileId") == moved]
    assert [e["type"] for e in of_moved] == [
        "file.version.indexed",
        "file.metadata.changed",
        "file.metadata.changed",
        "file.moved",
    ]
    assert [e["data"].get("metadataRevision") for e in of_moved[1:3]] == [1, 2]
    print(
        f"exactly-once: {len(expected)} versions, {len(stored)} events stored, {len(published)} ids on the bus"
        f" (each one body), relay crashes {dict(bus.crashes)}, {len(received)} receipts ({len(by_path['/all'])} to"
        f" /all, {len(everything)} after deduplication), {crashing.crashed} sends unrecorded"
    )
