"""The relay and the webhook deliverer as their Lambda handlers run them on AWS, against moto's EventBridge and SQS
and the session's PostgreSQL: the relay's PutEvents reaches a rule on the bus (source `quire`, detail-type the
event type) and its wake-up reaches the queue; an EventBridge answer with a failed entry leaves every event of the
batch unpublished (botocore's Stubber); the deliverer sends a woken delivery to a receiver on 127.0.0.1 and
reports a malformed message alone. Deliveries go to 127.0.0.1 only."""

import json
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import boto3
import psycopg
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from functions.deliver_webhooks.handler import handler as deliver_handler
from functions.relay.handler import handler as relay_handler
from shared.adapters.aws.eventbridge_bus import SOURCE, EventBridgeBus
from shared.adapters.aws.sqs_delivery_queue import SqsDeliveryQueue
from shared.adapters.outbound_http import PinnedHttpSender
from shared.adapters.postgres.database import Database
from shared.adapters.postgres.events import PostgresEventOutbox
from shared.adapters.postgres.webhooks import PostgresWebhookStore
from shared.bootstrap import overridden
from shared.domain.webhook_signing import new_secret, verify
from shared.domain.webhooks import DeliveryState, NewWebhook
from shared.local.http_api import LocalLambdaContext
from shared.services.event_relay import EventRelay
from shared.services.webhook_delivery import WebhookDeliverer
from tests.conftest import load_event
from tests.integration.conftest import MigratedDatabase
from tests.webhook_receiver import http_receiver

REGION = "us-east-1"


@dataclass
class Aws:
    events: Any
    sqs: Any
    bus_name: str
    wake_up_url: str
    # A queue a rule on the bus sends every `quire` event to: what a consumer of the bus would get.
    consumer_url: str


@pytest.fixture(scope="module")
def aws(aws_credentials: None) -> Iterator[Aws]:
    # The session's S3 server lives in moto's process-wide backends: nothing is reset or removed.
    mock = mock_aws()
    mock.start(reset=False)
    try:
        events, sqs = boto3.client("events", region_name=REGION), boto3.client("sqs", region_name=REGION)
        name = f"quire-test-{secrets.token_hex(3)}-events"
        events.create_event_bus(Name=name)
        consumer = sqs.create_queue(QueueName=f"consumer-{secrets.token_hex(3)}")["QueueUrl"]
        consumer_arn = sqs.get_queue_attributes(QueueUrl=consumer, AttributeNames=["QueueArn"])["Attributes"]
        events.put_rule(Name="to-consumer", EventBusName=name, EventPattern=json.dumps({"source": [SOURCE]}))
        events.put_targets(
            Rule="to-consumer", EventBusName=name, Targets=[{"Id": "consumer", "Arn": consumer_arn["QueueArn"]}]
        )
        wake_up = sqs.create_queue(QueueName=f"wake-ups-{secrets.token_hex(3)}")["QueueUrl"]
        yield Aws(events, sqs, name, wake_up, consumer)
    finally:
        mock.stop(remove_data=False)


@pytest.fixture(scope="module")
def database(migrated_database: MigratedDatabase) -> Iterator[Database]:
    db = Database(migrated_database.app_url, max_size=2)
    try:
        yield db
    finally:
        db.close()


def record_event(owner_url: str, tenant: str, file_id: str) -> None:
    """A file's deletion event, as the trigger writes it (record_event, migrations/0027)."""
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(
            "SELECT record_event(%s, 'file.deleted', 'docs', %s, %s, jsonb_build_object('fileId', %s::text))",
            (tenant, file_id, file_id, file_id),
        )


def unpublished(owner_url: str, tenant: str) -> int:
    with psycopg.connect(owner_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM events WHERE tenant_id = %s AND published_at IS NULL", (tenant,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def received(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message on the queue (the relay publishes every tenant's pending events: other tests' too)."""
    bodies: list[dict[str, Any]] = []
    while True:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
        if not messages:
            return bodies
        for message in messages:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            bodies.append(json.loads(message["Body"]))


def a_webhook(store: PostgresWebhookStore, tenant: str, url: str) -> NewWebhook:
    new = NewWebhook(
        tenant_id=tenant,
        webhook_id=uuid.uuid4(),
        url=url,
        event_types=["*"],
        collection_ids=["docs"],
        description="",
        secret=new_secret(),
        created_by="ann",
    )
    assert store.create(new, at_most=50) is not None
    return new


def test_the_relay_publishes_to_the_bus_and_wakes_the_deliverer(
    aws: Aws, database: Database, migrated_database: MigratedDatabase
) -> None:
    tenant, file_id = f"relay{secrets.token_hex(4)}", str(uuid.uuid4())
    store = PostgresWebhookStore(database)
    # Never sent to here (only woken for); loopback, so that no sweep of the session's stack sends anywhere else.
    webhook = a_webhook(store, tenant, "https://127.0.0.1:9/quire")
    record_event(migrated_database.owner_url, tenant, file_id)
    relay = EventRelay(
        PostgresEventOutbox(database),
        EventBridgeBus(aws.events, aws.bus_name),
        SqsDeliveryQueue(aws.sqs, aws.wake_up_url),
    )

    # 29 s left: below the relay's margin, so one pass and done.
    with overridden(SimpleNamespace(event_relay=relay)):
        totals = relay_handler(load_event("scheduled_relay.json"), LocalLambdaContext())

    assert totals["passes"] == 1 and totals["published"] >= 1 and totals["deliveries"] >= 1
    assert unpublished(migrated_database.owner_url, tenant) == 0
    mine = [e for e in received(aws.sqs, aws.consumer_url) if e["detail"]["tenantId"] == tenant]
    assert [(e["source"], e["detail-type"], e["detail"]["data"]) for e in mine] == [
        (SOURCE, "file.deleted", {"fileId": file_id})
    ]
    (wake_up,) = [w for w in received(aws.sqs, aws.wake_up_url) if w["tenantId"] == tenant]
    (delivery,) = store.deliveries(tenant, webhook.webhook_id, limit=10, before=None)
    assert wake_up == {"tenantId": tenant, "deliveryIds": [str(delivery.delivery_id)]}
    assert delivery.message_id == mine[0]["detail"]["eventId"]


def test_a_failed_entry_rolls_the_batch_back_and_the_next_run_publishes_it_under_the_same_id(
    aws: Aws, database: Database, migrated_database: MigratedDatabase
) -> None:
    tenant = f"refused{secrets.token_hex(4)}"
    for _ in range(2):
        record_event(migrated_database.owner_url, tenant, str(uuid.uuid4()))
    events = boto3.client("events", region_name=REGION)
    outbox = PostgresEventOutbox(database)
    relay = EventRelay(outbox, EventBridgeBus(events, aws.bus_name), SqsDeliveryQueue(aws.sqs, aws.wake_up_url))
    with Stubber(events) as stubber:
        stubber.add_response(
            "put_events",
            {
                "FailedEntryCount": 1,
                "Entries": [{"EventId": "a"}, {"ErrorCode": "InternalFailure", "ErrorMessage": "try again"}],
            },
        )
        with pytest.raises(Exception, match=r"1 of 2 events were not published: InternalFailure"):
            relay.relay_tenant(tenant)
        stubber.assert_no_pending_responses()
    assert unpublished(migrated_database.owner_url, tenant) == 2
    # The bus answers again: the same two events, published once each.
    assert relay.relay_tenant(tenant) == (2, 0)
    assert unpublished(migrated_database.owner_url, tenant) == 0


def test_the_deliverer_sends_a_woken_delivery_and_reports_a_malformed_message_alone(
    aws: Aws, database: Database
) -> None:
    tenant = f"deliver{secrets.token_hex(4)}"
    store = PostgresWebhookStore(database)
    with http_receiver() as receiver:
        webhook = a_webhook(store, tenant, receiver.url())
        delivery = store.add_delivery(
            tenant, webhook.webhook_id, message_id="msg_1", event_type="file.deleted", body={"type": "file.deleted"}
        )
        # Local rules (loopback allowed): the receiver is on 127.0.0.1, the only address a test sends to.
        deliverer = WebhookDeliverer(
            store, PinnedHttpSender(allow_loopback=True), queue=SqsDeliveryQueue(aws.sqs, aws.wake_up_url)
        )
        event = load_event("sqs_webhook_wake.json")
        good = event["Records"][0]
        good["body"] = json.dumps({"tenantId": tenant, "deliveryIds": [str(delivery.delivery_id)]})
        bad = {**good, "messageId": "a-malformed-one", "body": '{"tenantId": "acme"}'}
        event["Records"].append(bad)

        with overridden(SimpleNamespace(webhook_deliverer=deliverer)):
            answer = deliver_handler(event, LocalLambdaContext())

        assert answer == {"batchItemFailures": [{"itemIdentifier": "a-malformed-one"}]}
        (got,) = receiver.received
    verify(webhook.secret, got.headers, got.body, now=int(got.headers["webhook-timestamp"]))
    assert json.loads(got.body) == {"type": "file.deleted"}
    stored = store.delivery(tenant, webhook.webhook_id, delivery.delivery_id)
    assert stored is not None and stored.state is DeliveryState.DELIVERED


class FakeDeliverer:
    """The deliverer as the schedule's path calls it: every tenant's due deliveries (not run here: the session's
    database holds other tests' deliveries)."""

    def __init__(self) -> None:
        self.sweeps = 0

    def deliver_all(self, *, deadline: float | None = None) -> int:
        self.sweeps += 1
        return 3


def test_the_deliverers_schedule_sends_whatever_is_due() -> None:
    deliverer = FakeDeliverer()
    with overridden(SimpleNamespace(webhook_deliverer=deliverer)):
        answer = deliver_handler(load_event("scheduled_deliver_webhooks.json"), LocalLambdaContext())
    assert answer == {"tried": 3} and deliverer.sweeps == 1
