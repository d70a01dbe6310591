"""Events and webhooks on the synthesized template (infra/constructs/events.py): the bus and its archive, the queue
and its dead-letter queue, the schedules, and what each function's role may do, exactly."""

import json
from collections.abc import Mapping
from typing import Any

from aws_cdk.assertions import Template

from infra.constructs.events import (
    ARCHIVE_RETENTION_DAYS,
    DELIVER_HANDLER,
    DELIVER_TIMEOUT_SECONDS,
    MAX_RECEIVE_COUNT,
    RELAY_HANDLER,
    RELAY_TIMEOUT,
    SCHEDULE_SECONDS,
    WEBHOOK_POLLERS,
)
from infra.environments import settings_for
from shared.adapters.aws.eventbridge_bus import SOURCE
from shared.domain.events import RETENTION_DAYS
from tests.infra.template import API_HANDLER, as_list, function_with_handler, only, role_statements

# What every function's role has (infra/constructs/functions.py): its own log group, X-Ray, the database.
COMMON_ACTIONS = {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}
CONSUME = {
    "sqs:ReceiveMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueUrl",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
}


def get_att(logical_id: str, attribute: str = "Arn") -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, attribute]}


def bus(template: Template) -> str:
    return only(template.find_resources("AWS::Events::EventBus"))[0]


def wake_up_queue(template: Template) -> tuple[str, Mapping[str, Any]]:
    return only(
        {
            logical_id: queue
            for logical_id, queue in template.find_resources("AWS::SQS::Queue").items()
            if "RedrivePolicy" in queue["Properties"]
        }
    )


def grants(template: Template, function: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each action the function's role allows (but the ones every function's has), with its resources."""
    granted: dict[str, list[str]] = {}
    for statement in role_statements(template, function):
        assert statement["Effect"] == "Allow" and "Condition" not in statement
        for action in as_list(statement["Action"]):
            if action in COMMON_ACTIONS:
                continue
            granted.setdefault(action, []).extend(json.dumps(r, sort_keys=True) for r in as_list(statement["Resource"]))
    return granted


def environment(function: Mapping[str, Any]) -> dict[str, Any]:
    variables: dict[str, Any] = function["Properties"]["Environment"]["Variables"]
    return variables


def test_the_bus_is_named_after_the_stack_and_archived_as_long_as_events_are_listed(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    bus_id = bus(template)
    bus_resource = template.find_resources("AWS::Events::EventBus")[bus_id]
    assert bus_resource["Properties"]["Name"] == {"Fn::Join": ["", [{"Ref": "AWS::StackName"}, "-events"]]}
    _, archive = only(template.find_resources("AWS::Events::Archive"))
    properties = archive["Properties"]
    assert properties["SourceArn"] == get_att(bus_id)
    assert properties["ArchiveName"] == bus_resource["Properties"]["Name"]
    assert ARCHIVE_RETENTION_DAYS == RETENTION_DAYS
    assert properties["RetentionDays"] == RETENTION_DAYS
    # Exactly what the relay publishes (shared/adapters/aws/eventbridge_bus.py's source).
    assert properties["EventPattern"] == {"source": [SOURCE]}
    # Nothing else publishes to the bus, and no rule forwards its events anywhere yet: consumers add their own.
    assert template.find_resources("AWS::Events::Rule", {"Properties": {"EventBusName": {"Ref": bus_id}}}) == {}


def test_wake_ups_are_encrypted_tls_only_and_go_to_a_dead_letter_queue_after_repeated_failures(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    queue_id, queue = wake_up_queue(template)
    properties = queue["Properties"]
    assert properties["SqsManagedSseEnabled"] is True
    redrive = properties["RedrivePolicy"]
    assert redrive["maxReceiveCount"] == MAX_RECEIVE_COUNT
    dead_letters_id = redrive["deadLetterTargetArn"]["Fn::GetAtt"][0]
    dead_letters = template.find_resources("AWS::SQS::Queue")[dead_letters_id]["Properties"]
    assert dead_letters["SqsManagedSseEnabled"] is True and dead_letters["MessageRetentionPeriod"] == 14 * 24 * 3600
    # Lambda's advice for an SQS event source: six times the function's timeout, so a running batch is not
    # received again.
    assert properties["VisibilityTimeout"] == 6 * DELIVER_TIMEOUT_SECONDS
    refused_plain_http = {
        queue_ref["Ref"]
        for policy in template.find_resources("AWS::SQS::QueuePolicy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Effect"] == "Deny" and statement.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
        for queue_ref in policy["Properties"]["Queues"]
    }
    assert {queue_id, dead_letters_id} <= refused_plain_http


def test_the_deliverer_is_fed_by_the_queue_with_partial_batch_failures(synthesized: tuple[str, Template]) -> None:
    env, template = synthesized
    queue_id, _ = wake_up_queue(template)
    deliverer_id, deliverer = function_with_handler(template, DELIVER_HANDLER)
    _, mapping = only(template.find_resources("AWS::Lambda::EventSourceMapping"))
    properties = mapping["Properties"]
    assert properties["EventSourceArn"] == get_att(queue_id)
    assert properties["FunctionName"] == {"Ref": deliverer_id}
    # One bad wake-up is retried (then set aside) alone; the others of its batch are not sent again.
    assert properties["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert properties["ScalingConfig"] == {"MaximumConcurrency": WEBHOOK_POLLERS}
    assert deliverer["Properties"]["Timeout"] == DELIVER_TIMEOUT_SECONDS
    reserved = settings_for(env).reserved_concurrency
    if reserved is not None:
        # The pollers leave room for the minute's sweep within the deliverer's reservation.
        assert deliverer["Properties"]["ReservedConcurrentExecutions"] == reserved.deliver_webhooks > WEBHOOK_POLLERS


def test_the_relay_and_the_deliverer_run_every_minute_and_a_missed_run_is_the_next_ones(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    targets = {}
    for schedule in template.find_resources("AWS::Scheduler::Schedule").values():
        properties = schedule["Properties"]
        targets[properties["Target"]["Arn"]["Fn::GetAtt"][0]] = properties
    for handler in (RELAY_HANDLER, DELIVER_HANDLER):
        function_id, _ = function_with_handler(template, handler)
        properties = targets[function_id]
        assert properties["ScheduleExpression"] == "rate(1 minute)"
        assert properties["Target"]["RetryPolicy"] == {"MaximumEventAgeInSeconds": 60, "MaximumRetryAttempts": 0}
        assert "Arn" in properties["Target"]["DeadLetterConfig"]
        (config,) = [
            c
            for c in template.find_resources("AWS::Lambda::EventInvokeConfig").values()
            if c["Properties"]["FunctionName"] == {"Ref": function_id}
        ]
        assert config["Properties"]["MaximumRetryAttempts"] == 0


def test_the_relay_loops_for_the_schedules_minute_and_has_its_margin_to_finish() -> None:
    from functions.relay.handler import STOP_MARGIN_SECONDS

    assert RELAY_TIMEOUT.to_seconds() - STOP_MARGIN_SECONDS == SCHEDULE_SECONDS


def test_the_relay_may_publish_to_this_bus_and_wake_the_deliverer_and_nothing_more(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    queue_id, _ = wake_up_queue(template)
    _, relay = function_with_handler(template, RELAY_HANDLER)
    granted = grants(template, relay)
    assert set(granted) == {"events:PutEvents", "sqs:SendMessage", "rds-db:connect"}
    assert granted["events:PutEvents"] == [json.dumps(get_att(bus(template)))]
    assert granted["sqs:SendMessage"] == [json.dumps(get_att(queue_id))]
    bus_name = template.find_resources("AWS::Events::EventBus")[bus(template)]["Properties"]["Name"]
    assert environment(relay)["QUIRE_EVENT_BUS_NAME"] == bus_name
    assert environment(relay)["QUIRE_WEBHOOK_QUEUE_URL"] == {"Ref": queue_id}
    assert environment(relay)["QUIRE_DATABASE_IAM_AUTH"] == "true"


def test_the_deliverer_may_consume_and_wake_the_queue_and_nothing_more(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    queue_id, _ = wake_up_queue(template)
    _, deliverer = function_with_handler(template, DELIVER_HANDLER)
    granted = grants(template, deliverer)
    assert set(granted) == {*CONSUME, "sqs:SendMessage", "rds-db:connect"}
    for action in (*CONSUME, "sqs:SendMessage"):
        assert granted[action] == [json.dumps(get_att(queue_id))], action
    assert environment(deliverer)["QUIRE_WEBHOOK_QUEUE_URL"] == {"Ref": queue_id}
    assert "QUIRE_EVENT_BUS_NAME" not in environment(deliverer)


def test_only_the_relay_publishes_and_only_the_api_the_relay_and_the_deliverer_wake_deliveries(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    queue_id, _ = wake_up_queue(template)
    publishers, wakers = [], []
    for function in template.find_resources("AWS::Lambda::Function").values():
        statements = role_statements(template, function)
        actions = {action for statement in statements for action in as_list(statement["Action"])}
        if any(action.startswith("events:") for action in actions):
            publishers.append(function["Properties"]["Handler"])
        if "sqs:SendMessage" in actions and any(
            json.dumps(get_att(queue_id)) in json.dumps(statement["Resource"])
            for statement in statements
            if "sqs:SendMessage" in as_list(statement["Action"])
        ):
            wakers.append(function["Properties"]["Handler"])
            assert environment(function)["QUIRE_WEBHOOK_QUEUE_URL"] == {"Ref": queue_id}
    assert publishers == [RELAY_HANDLER]
    assert sorted(wakers) == sorted([API_HANDLER, RELAY_HANDLER, DELIVER_HANDLER])


def test_errors_the_relay_and_the_deliverer_log_and_carry_on_past_alarm(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    filters = template.find_resources("AWS::Logs::MetricFilter")
    watched = {}
    for handler in (RELAY_HANDLER, DELIVER_HANDLER):
        _, function = function_with_handler(template, handler)
        log_group = function["Properties"]["LoggingConfig"]["LogGroup"]
        (metric_filter,) = [f for f in filters.values() if f["Properties"]["LogGroupName"] == log_group]
        assert metric_filter["Properties"]["FilterPattern"] == '{ $.level = "ERROR" }'
        (transformation,) = metric_filter["Properties"]["MetricTransformations"]
        watched[transformation["MetricName"]] = transformation["MetricNamespace"]
    alarmed = {
        alarm["Properties"]["MetricName"]: alarm["Properties"]
        for alarm in template.find_resources("AWS::CloudWatch::Alarm").values()
        if alarm["Properties"].get("MetricName") in watched
    }
    assert set(alarmed) == set(watched)
    for name, alarm in alarmed.items():
        assert alarm["Namespace"] == watched[name] and alarm["Statistic"] == "Sum" and alarm["Threshold"] == 1
        assert alarm["AlarmActions"], name
