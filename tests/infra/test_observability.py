"""Observability: alarms on failed executions, dead letters, function errors and stuck files, sent to an encrypted,
TLS-only topic (e-mailed where the environment names an address), and a dashboard.

The tests read the whole stack as each environment synthesizes it (tests/infra/conftest.py), cdk-nag included.
"""

import json
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.constructs.observability import METRICS_NAMESPACE, RECONCILE_METRICS, reconcile_window
from infra.environments import settings_for
from shared.local.http_api import LocalLambdaContext
from tests.infra.template import is_quire_handler


def alarms(template: Template) -> list[dict[str, Any]]:
    return [resource["Properties"] for resource in template.find_resources("AWS::CloudWatch::Alarm").values()]


def alarm_on(template: Template, namespace: str, metric: str) -> list[dict[str, Any]]:
    return [a for a in alarms(template) if a.get("Namespace") == namespace and a.get("MetricName") == metric]


def topic_id(template: Template) -> str:
    (topic,) = template.find_resources("AWS::SNS::Topic")
    return topic


def quire_functions(template: Template) -> dict[str, Any]:
    """Quire's own functions (named by a `functions.` handler, or the MCP server's script), not the CDK's helper
    functions; without the migration runner, which runs only while a deployment waits on it (its failure fails
    the deployment)."""
    return {
        logical_id: function
        for logical_id, function in template.find_resources("AWS::Lambda::Function").items()
        if is_quire_handler(function["Properties"].get("Handler"))
        and not function["Properties"]["Handler"].startswith("functions.migrate.")
    }


def notifies_the_topic(alarm: dict[str, Any], topic: str) -> bool:
    return bool(alarm["AlarmActions"] == [{"Ref": topic}] and alarm["OKActions"] == [{"Ref": topic}])


def test_the_alarm_topic_is_encrypted_with_a_rotated_key_cloudwatch_may_use(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    (topic,) = template.find_resources("AWS::SNS::Topic").values()
    key_ref = topic["Properties"]["KmsMasterKeyId"]
    (key_id,) = key_ref["Fn::GetAtt"][:1]
    key = template.find_resources("AWS::KMS::Key")[key_id]
    assert key["Properties"]["EnableKeyRotation"] is True
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    cloudwatch = [s for s in statements if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}]
    assert len(cloudwatch) == 1
    assert set(cloudwatch[0]["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}


def test_the_topic_refuses_plain_http_and_admits_only_this_accounts_alarms(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    topic = topic_id(template)
    (policy,) = template.find_resources("AWS::SNS::TopicPolicy").values()
    assert policy["Properties"]["Topics"] == [{"Ref": topic}]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements
    )
    (publish,) = [s for s in statements if s["Effect"] == "Allow"]
    assert publish["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert publish["Action"] == "sns:Publish"
    assert publish["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert "aws:SourceArn" in publish["Condition"]["ArnLike"]


def test_alarms_are_e_mailed_only_where_the_environment_names_an_address(synthesized: tuple[str, Template]) -> None:
    env, template = synthesized
    email = settings_for(env).alarm_email
    subscriptions = template.find_resources("AWS::SNS::Subscription")
    if email is None:
        assert subscriptions == {}
    else:
        (subscription,) = subscriptions.values()
        assert subscription["Properties"]["Protocol"] == "email"
        assert subscription["Properties"]["Endpoint"] == email
        assert subscription["Properties"]["TopicArn"] == {"Ref": topic_id(template)}


@pytest.mark.parametrize("metric", ["ExecutionsFailed", "ExecutionsTimedOut", "ExecutionThrottled"])
def test_a_single_failed_timed_out_or_throttled_execution_alarms(
    synthesized: tuple[str, Template], metric: str
) -> None:
    _, template = synthesized
    (state_machine,) = template.find_resources("AWS::StepFunctions::StateMachine")
    (alarm,) = alarm_on(template, "AWS/States", metric)
    assert alarm["Dimensions"] == [{"Name": "StateMachineArn", "Value": {"Ref": state_machine}}]
    assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == ("Sum", 300, 1)
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanOrEqualToThreshold", 1)
    assert alarm["TreatMissingData"] == "notBreaching"
    assert notifies_the_topic(alarm, topic_id(template))


def test_every_dead_letter_queue_alarms_on_its_first_message(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    # Every queue is a dead-letter queue but the ones that have one (the webhook wake-ups: a message there is work).
    queues = {
        logical_id: queue
        for logical_id, queue in template.find_resources("AWS::SQS::Queue").items()
        if "RedrivePolicy" not in queue["Properties"]
    }
    depth = alarm_on(template, "AWS/SQS", "ApproximateNumberOfMessagesVisible")
    watched = set()
    for alarm in depth:
        (dimension,) = alarm["Dimensions"]
        assert dimension["Name"] == "QueueName"
        watched.add(dimension["Value"]["Fn::GetAtt"][0])
        assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == (
            "Maximum",
            1,
            "GreaterThanOrEqualToThreshold",
        )
        assert alarm["TreatMissingData"] == "notBreaching"
        assert notifies_the_topic(alarm, topic_id(template))
    assert queues and watched == set(queues)


@pytest.mark.parametrize("metric", ["Errors", "Throttles"])
def test_every_function_alarms_on_errors_and_throttles_that_persist(
    synthesized: tuple[str, Template], metric: str
) -> None:
    _, template = synthesized
    watched = {}
    for alarm in alarm_on(template, "AWS/Lambda", metric):
        (dimension,) = alarm["Dimensions"]
        watched[dimension["Value"]["Ref"]] = alarm
    functions = quire_functions(template)
    unwatched = set(functions) - set(watched)
    assert functions and not unwatched, f"functions with no {metric} alarm: {sorted(unwatched)}"
    for function in functions:
        alarm = watched[function]
        # 2 of 3 five-minute periods: one error a retry absorbed does not page anyone
        assert (alarm["Statistic"], alarm["Period"], alarm["Threshold"]) == ("Sum", 300, 1)
        assert (alarm["DatapointsToAlarm"], alarm["EvaluationPeriods"]) == (2, 3)
        assert alarm["TreatMissingData"] == "notBreaching"
        assert notifies_the_topic(alarm, topic_id(template))


def test_stuck_files_alarm_and_so_does_reconciliation_falling_silent(synthesized: tuple[str, Template]) -> None:
    env, template = synthesized
    (alarm,) = alarm_on(template, METRICS_NAMESPACE, "stuckVersions")
    window = reconcile_window(settings_for(env).reconcile_schedule).to_seconds()
    assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == ("Maximum", window, 1)
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanOrEqualToThreshold", 1)
    # No datapoint in a whole window means reconciliation did not run to its end: nobody is finding stuck files.
    assert alarm["TreatMissingData"] == "breaching"
    assert notifies_the_topic(alarm, topic_id(template))


def test_the_stuck_files_alarm_selects_exactly_the_metric_the_reconcile_handler_publishes(
    synthesized: tuple[str, Template], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the environment's reconcile function, as deployed (the environment variable functions.py sets)
    env, template = synthesized
    (function,) = [
        f
        for f in quire_functions(template).values()
        if f["Properties"]["Handler"] == "functions.reconcile.handler.handler"
    ]
    variables = function["Properties"]["Environment"]["Variables"]
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    from functions.reconcile import handler
    from shared.bootstrap import overridden
    from shared.services.reconciliation import ReconcileReport

    class Reconciler:
        def run(self, now: object) -> ReconcileReport:
            return ReconcileReport()

    class Wired:
        reconciler = Reconciler()

    monkeypatch.setattr(handler, "ENVIRONMENT", variables["QUIRE_ENVIRONMENT"])
    # When it runs
    with overridden(Wired()):
        handler.handler({}, LocalLambdaContext())
    (document,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    # Then the alarm names its namespace, metric and every dimension with the value it publishes
    (alarm,) = alarm_on(template, directive["Namespace"], "stuckVersions")
    (dimension_names,) = directive["Dimensions"]
    assert sorted(alarm["Dimensions"], key=lambda d: d["Name"]) == [
        {"Name": name, "Value": document[name]} for name in sorted(dimension_names)
    ]
    assert document["environment"] == env
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == directive["Namespace"] == METRICS_NAMESPACE
    # and the construct graphs every metric the handler publishes, no more
    assert {metric["Name"] for metric in directive["Metrics"]} == set(RECONCILE_METRICS) == set(handler.REPORTED_COUNTS)


def test_the_dashboard_shows_executions_dead_letters_functions_and_reconciliation(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    (dashboard,) = template.find_resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for metric in [
        "ExecutionsStarted",
        "ExecutionsSucceeded",
        "ExecutionsFailed",
        "ExecutionTime",
        "ApproximateNumberOfMessagesVisible",
        "Errors",
        "Duration",
        "Throttles",
        *RECONCILE_METRICS,
    ]:
        assert f'\\"{metric}\\"' in body, metric
    # Named per environment and region (dashboard names are unique per account, across regions).
    name = dashboard["Properties"]["DashboardName"]
    parts = [name] if isinstance(name, str) else name["Fn::Join"][1]
    assert isinstance(parts[0], str) and parts[0].startswith(f"Quire-{env}-")


@pytest.mark.parametrize(
    ("schedule", "minutes"),
    [
        ("rate(15 minutes)", 60),
        ("rate(1 minute)", 60),
        ("rate(2 hours)", 240),
        ("rate(1 day)", 1440),
        ("rate(7 days)", 1440),
    ],
)
def test_reconciliation_may_miss_one_run_before_its_silence_alarms(schedule: str, minutes: int) -> None:
    assert reconcile_window(schedule).to_minutes() == minutes


def test_a_cron_reconcile_schedule_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match=r"needs a rate\(\.\.\.\) expression"):
        reconcile_window("cron(0 * * * ? *)")
