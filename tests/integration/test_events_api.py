"""Events and webhooks through the API (issue 34): the event list and who sees what, registration and its refusals,
signed deliveries to a real HTTPS receiver on 127.0.0.1, rotation, replay, the test message, a failing endpoint."""

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import standardwebhooks

from shared.domain.auth import Role
from tests.integration.files_stack import Stack
from tests.webhook_receiver import Receiver, https_receiver

DOC = b"# Quarterly plan\n\nThe harbour project starts in March and ends in June.\n"
FORBIDDEN_IN_EVENTS = ("storageKey", "storage_key", "derived/", "tenants/", "X-Amz", "harbour")


@pytest.fixture
def receiver(stack: Stack) -> Iterator[Receiver]:
    assert stack.receiver_certificate is not None
    with https_receiver(*stack.receiver_certificate) as running:
        yield running


def relay(stack: Stack) -> None:
    stack.container.event_relay.relay_all()


def events_of(stack: Stack, token: str, after: str | None = None, **query: str) -> dict[str, Any]:
    parts = [f"after={after}"] if after else []
    parts += [f"{key}={value}" for key, value in query.items()]
    status, page = stack.json("GET", "/v1/events" + ("?" + "&".join(parts) if parts else ""), token)
    assert status == 200, page
    return page  # type: ignore[no-any-return]


def register(stack: Stack, token: str, url: str, **body: Any) -> tuple[int, Any]:
    return stack.json("POST", "/v1/webhooks", token, {"url": url, "events": ["*"], "collectionIds": ["docs"], **body})


def wait_until(check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    return check()


def test_an_indexed_upload_is_one_event_that_readers_of_its_collection_see_and_nobody_else(stack: Stack) -> None:
    token = stack.token(tenant="ev-list")
    ticket = stack.processed_markdown(token, "plan.md", DOC, None)
    relay(stack)
    relay(stack)  # a second run publishes nothing again
    page = events_of(stack, token)
    indexed = [e for e in page["events"] if e["type"] == "file.version.indexed"]
    assert len(indexed) == 1, page
    event = indexed[0]
    assert event["collectionId"] == "docs" and event["tenantId"] == "ev-list"
    assert event["data"]["fileId"] == ticket["fileId"] and event["data"]["versionId"] == ticket["versionId"]
    assert set(event) == {"eventId", "type", "occurredAt", "tenantId", "collectionId", "data", "cursor"}
    assert int(event["cursor"]) <= int(page["nextCursor"])
    assert not any(marker in json.dumps(event) for marker in FORBIDDEN_IN_EVENTS)
    assert stack.connector.refused == []
    # Caught up: the cursor returns nothing more, and stays where it was; `latest` is that cursor.
    after = events_of(stack, token, page["nextCursor"])
    assert after == {"events": [], "nextCursor": page["nextCursor"]}
    assert events_of(stack, token, "latest") == after
    # A reader of the collection sees it; a reader of another collection, and another tenant, see nothing.
    reader = stack.token(tenant="ev-list", role=Role.READ)
    assert [e["eventId"] for e in events_of(stack, reader)["events"]] == [e["eventId"] for e in page["events"]]
    assert events_of(stack, stack.token(tenant="ev-list", collections=("other",)))["events"] == []
    assert events_of(stack, stack.token(tenant="ev-list-2"))["events"] == []
    # Filters by type and collection.
    assert events_of(stack, token, type="file.deleted")["events"] == []
    assert len(events_of(stack, token, collectionId="docs", type="file.version.indexed")["events"]) == 1


def test_event_list_refusals_name_the_fix(stack: Stack) -> None:
    token = stack.token(tenant="ev-refuse")
    for query, word in (("after=abc", "cursor"), ("type=file.exploded", "unknown event type"), ("limit=501", "limit")):
        status, body = stack.json("GET", f"/v1/events?{query}", token)
        assert status in (400, 422) and word in json.dumps(body), (query, body)


def test_a_registered_webhook_receives_each_event_signed_and_a_rotation_signs_with_both(
    stack: Stack, receiver: Receiver
) -> None:
    token = stack.token(tenant="ev-hook")
    status, made = register(stack, token, receiver.url(), description="ready files")
    assert status == 201, made
    secret, webhook_id = made["secret"], made["webhook"]["webhookId"]
    assert secret.startswith("whsec_") and "secret" not in made["webhook"]
    status, shown = stack.json("GET", f"/v1/webhooks/{webhook_id}", token)
    assert status == 200 and "secret" not in json.dumps(shown).lower().replace("previoussecretexpiresat", "")

    ticket = stack.processed_markdown(token, "plan.md", DOC, None)
    relay(stack)
    (message,) = [r for r in receiver.wait_for(1) if r.json()["type"] == "file.version.indexed"]
    payload = standardwebhooks.Webhook(secret).verify(message.body, message.headers)
    assert payload["data"]["fileId"] == ticket["fileId"]
    assert message.headers["webhook-id"] == payload["eventId"]
    # Its delivery is listed as delivered, with the exact body sent.
    delivery = wait_until(
        lambda: next(
            (
                d
                for d in stack.json("GET", f"/v1/webhooks/{webhook_id}/deliveries", token)[1]["deliveries"]
                if d["state"] == "delivered"
            ),
            None,
        )
    )
    assert delivery["lastStatus"] == 200 and delivery["body"] == payload

    # A tampered body and a replayed old timestamp are refused by the receiver's library.
    with pytest.raises(standardwebhooks.webhooks.WebhookVerificationError):
        standardwebhooks.Webhook(secret).verify(message.body.replace(b"indexed", b"failed"), message.headers)
    old = dict(message.headers, **{"webhook-timestamp": str(int(time.time()) - 3600)})
    with pytest.raises(standardwebhooks.webhooks.WebhookVerificationError):
        standardwebhooks.Webhook(secret).verify(message.body, old)

    status, rotated = stack.json("POST", f"/v1/webhooks/{webhook_id}/rotate-secret", token)
    assert status == 200 and rotated["secret"] != secret and rotated["webhook"]["previousSecretExpiresAt"]
    status, test_delivery = stack.json("POST", f"/v1/webhooks/{webhook_id}/test", token)
    assert status == 202, test_delivery
    tested = wait_until(lambda: receiver.of_type("webhook.test"))
    assert len(tested) == 1
    for signing in (secret, rotated["secret"]):  # both secrets sign during the overlap
        assert standardwebhooks.Webhook(signing).verify(tested[0].body, tested[0].headers)["type"] == "webhook.test"

    # A replay sends the same body under the same id.
    status, replayed = stack.json(
        "POST", f"/v1/webhooks/{webhook_id}/deliveries/{delivery['deliveryId']}/replay", token
    )
    assert status == 202 and replayed["state"] == "pending"
    again = wait_until(
        lambda: [r for r in receiver.received if r.headers["webhook-id"] == message.headers["webhook-id"]][1:]
    )
    assert again and again[0].body == message.body

    status, _ = stack.json("DELETE", f"/v1/webhooks/{webhook_id}", token)
    assert status == 204
    assert stack.json("GET", f"/v1/webhooks/{webhook_id}", token)[0] == 404


def test_only_an_admin_of_every_collection_registers_or_sees_a_webhook(stack: Stack, receiver: Receiver) -> None:
    admin = stack.token(tenant="ev-roles", collections=("docs", "legal"))
    status, made = stack.json(
        "POST",
        "/v1/webhooks",
        admin,
        {"url": receiver.url(), "events": ["file.deleted"], "collectionIds": ["docs", "legal"]},
    )
    assert status == 201, made
    webhook_id = made["webhook"]["webhookId"]
    writer = stack.token(tenant="ev-roles", collections=("docs",), role=Role.WRITE)
    status, body = register(stack, writer, receiver.url())
    assert status == 403 and "admin" in body["message"]
    docs_admin = stack.token(tenant="ev-roles", collections=("docs",))
    other_tenant = stack.token(tenant="ev-roles-2", collections=("docs", "legal"))
    status, delivery = stack.json("POST", f"/v1/webhooks/{webhook_id}/test", admin)
    assert status == 202
    for caller in (docs_admin, writer, other_tenant):
        for method, path in (
            ("GET", f"/v1/webhooks/{webhook_id}"),
            ("DELETE", f"/v1/webhooks/{webhook_id}"),
            ("POST", f"/v1/webhooks/{webhook_id}/test"),
            ("POST", f"/v1/webhooks/{webhook_id}/rotate-secret"),
            ("POST", f"/v1/webhooks/{webhook_id}/enable"),
            ("GET", f"/v1/webhooks/{webhook_id}/deliveries"),
            ("POST", f"/v1/webhooks/{webhook_id}/deliveries/{delivery['deliveryId']}/replay"),
        ):
            assert stack.json(method, path, caller)[0] == 404, (method, path)
        assert webhook_id not in json.dumps(stack.json("GET", "/v1/webhooks", caller)[1])
    assert stack.json("GET", f"/v1/webhooks/{webhook_id}", admin)[0] == 200


def test_registration_refuses_what_it_cannot_deliver_safely(stack: Stack) -> None:
    token = stack.token(tenant="ev-bad")
    stack.resolver.set("private.quire.test", "10.0.0.8")
    stack.resolver.set("metadata.quire.test", "169.254.169.254")
    cases = {
        "ftp://receiver.quire.test/hook": "scheme",
        "https://user:pw@receiver.quire.test/hook": "credentials",
        "https://10.1.2.3/hook": "private",
        "https://169.254.169.254/latest/meta-data/": "metadata",
        "https://[::ffff:169.254.169.254]/": "metadata",
        "https://2852039166/": "numeric-host",
        "https://0x7f000001/": "numeric-host",
        "https://private.quire.test/hook": "private",
        "https://metadata.quire.test/hook": "metadata",
        "https://unknown.quire.test/hook": "unresolvable",
    }
    for url, rule in cases.items():
        status, body = register(stack, token, url)
        assert status == 400 and f"'{rule}'" in body["message"], (url, body)
    status, body = stack.json(
        "POST",
        "/v1/webhooks",
        token,
        {"url": "https://receiver.quire.test/", "events": ["file.exploded"], "collectionIds": ["docs"]},
    )
    assert status == 400 and "unknown event type" in body["message"]
    status, body = stack.json(
        "POST", "/v1/webhooks", token, {"url": "https://receiver.quire.test/", "events": ["*"], "collectionIds": []}
    )
    assert status == 422 and "collectionIds" in body["message"]


def test_a_failing_endpoint_is_retried_and_the_delivery_says_why(stack: Stack, receiver: Receiver) -> None:
    token = stack.token(tenant="ev-fail")
    receiver.status = 503
    status, made = register(stack, token, receiver.url())
    assert status == 201
    webhook_id = made["webhook"]["webhookId"]
    stack.json("POST", f"/v1/webhooks/{webhook_id}/test", token)
    receiver.wait_for(1)

    def first_failure() -> Any:
        deliveries = stack.json("GET", f"/v1/webhooks/{webhook_id}/deliveries", token)[1]["deliveries"]
        return deliveries if deliveries and deliveries[0]["attempts"] >= 1 and deliveries[0]["lastStatus"] else None

    (delivery,) = wait_until(first_failure)
    assert delivery["state"] == "pending" and delivery["lastStatus"] == 503 and "503" in delivery["lastError"]
    status, hook = stack.json("GET", f"/v1/webhooks/{webhook_id}", token)
    assert hook["failingSince"] is not None
    receiver.status = 200  # the retry (after its backoff, 2.5 to 5 s) succeeds and the streak ends
    delivered = wait_until(
        lambda: (
            stack.json("GET", f"/v1/webhooks/{webhook_id}/deliveries", token)[1]["deliveries"][0]["state"]
            == "delivered"
        ),
        timeout=30,
    )
    assert delivered
    assert stack.json("GET", f"/v1/webhooks/{webhook_id}", token)[1]["failingSince"] is None


def test_a_name_that_turns_private_after_registration_or_a_redirect_to_metadata_is_never_followed(
    stack: Stack, receiver: Receiver
) -> None:
    token = stack.token(tenant="ev-rebind")
    stack.resolver.set("rebinding.quire.test", "93.184.216.34")  # public when registered (resolved, never connected)
    status, made = register(stack, token, "https://rebinding.quire.test/hook")
    assert status == 201, made
    stack.resolver.set("rebinding.quire.test", "10.0.0.7")  # private when delivered
    rebinding = made["webhook"]["webhookId"]
    stack.json("POST", f"/v1/webhooks/{rebinding}/test", token)
    (refused,) = wait_until(
        lambda: [
            d
            for d in stack.json("GET", f"/v1/webhooks/{rebinding}/deliveries", token)[1]["deliveries"]
            if d["lastError"]
        ]
    )
    assert "'private'" in refused["lastError"] and refused["lastStatus"] is None

    receiver.redirect_to = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
    status, made = register(stack, token, receiver.url("/redirecting"))
    redirecting = made["webhook"]["webhookId"]
    stack.json("POST", f"/v1/webhooks/{redirecting}/test", token)
    (redirected,) = wait_until(
        lambda: [
            d
            for d in stack.json("GET", f"/v1/webhooks/{redirecting}/deliveries", token)[1]["deliveries"]
            if d["lastError"]
        ]
    )
    assert redirected["lastStatus"] == 302 and "redirects are not followed" in redirected["lastError"]
    assert [r.path for r in receiver.received] == ["/redirecting"]
    assert stack.connector.refused == []  # neither reached for a connection anywhere but 127.0.0.1


def test_a_delivery_is_retried_for_24_hours_and_an_endpoint_failing_for_3_days_is_disabled_with_an_event(
    own_stack: Stack, receiver: Receiver
) -> None:
    # A database of its own, and nothing here wakes its delivery thread: only this test's clock sends.
    stack = own_stack
    from datetime import UTC, datetime, timedelta

    from shared.services.webhook_delivery import WebhookDeliverer

    tenant = "ev-window"
    token = stack.token(tenant=tenant)
    receiver.status = 500
    _, made = register(stack, token, receiver.url())
    webhook_id = made["webhook"]["webhookId"]
    clock = [datetime.now(UTC)]
    deliverer = WebhookDeliverer(stack.container.webhook_store, stack.container.webhook_sender, clock=lambda: clock[0])

    def delivery(delivery_id: str) -> Any:
        listed = stack.json("GET", f"/v1/webhooks/{webhook_id}/deliveries?limit=100", token)[1]["deliveries"]
        return next(d for d in listed if d["deliveryId"] == delivery_id)

    # Made directly in the store, so the stack's own deliverer (real time) leaves it to this one's clock.
    first = stack.container.webhook_store.add_delivery(
        tenant, uuid.UUID(webhook_id), message_id="m-window", event_type="webhook.test", body={"n": 1}
    )
    attempts = 0
    while delivery(str(first.delivery_id))["state"] == "pending" and attempts < 60:
        clock[0] += timedelta(hours=2)  # past any backoff step (an hour at most)
        deliverer.deliver_due(tenant, [first.delivery_id])
        attempts += 1
    failed = delivery(str(first.delivery_id))
    assert failed["state"] == "failed" and failed["finishedAt"] is not None and 12 <= failed["attempts"] <= 14
    assert stack.json("GET", f"/v1/webhooks/{webhook_id}", token)[1]["state"] == "active"  # 1 day: not yet
    # Two days later, still failing: three days since the streak began, so the endpoint is disabled and told.
    clock[0] += timedelta(days=2)
    later = stack.container.webhook_store.add_delivery(
        tenant, first.webhook_id, message_id="m-later", event_type="webhook.test", body={"n": 2}
    )
    deliverer.deliver_due(tenant, [later.delivery_id])
    hook = stack.json("GET", f"/v1/webhooks/{webhook_id}", token)[1]
    assert hook["state"] == "disabled" and "3 days" in hook["disabledReason"]
    relay(stack)
    disabled = events_of(stack, token, type="webhook.disabled")["events"]
    assert [e["data"]["webhookId"] for e in disabled] == [webhook_id]
    # Enabled again, it delivers (and the streak starts over).
    receiver.status = 200
    assert stack.json("POST", f"/v1/webhooks/{webhook_id}/enable", token)[1]["state"] == "active"
    assert stack.container.webhook_store.replay(tenant, first.webhook_id, first.delivery_id) is not None
    clock[0] += timedelta(seconds=1)
    deliverer.deliver_due(tenant, [first.delivery_id])
    assert delivery(str(first.delivery_id))["state"] == "delivered"
