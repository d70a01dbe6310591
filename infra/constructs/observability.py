"""Observability: alarms on what needs a person (failed executions, dead letters, function errors and
throttles, stuck files) sent to one encrypted SNS topic, and one dashboard per environment.

Count alarms treat missing data as fine: no executions, no messages, no invocations is not a problem. The
stuck-files alarm is the exception: its number comes only from reconciliation, so when reconciliation
stops reporting (its schedule disabled, the function failing or timing out on every run) nobody is
looking for stuck files any more, and that silence alarms too.
"""

import re
from collections.abc import Mapping, Sequence

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.environments import EnvironmentSettings

# What the reconcile function publishes (powertools EMF): the namespace and service infra/constructs/functions.py
# sets as POWERTOOLS_METRICS_NAMESPACE and POWERTOOLS_SERVICE_NAME, plus the environment dimension. Infra never
# imports runtime code, so functions/reconcile/handler.py names the same metrics and a test checks they agree.
METRICS_NAMESPACE = "Quire"
METRICS_SERVICE = "quire"
STUCK_VERSIONS = "stuckVersions"
RECONCILE_METRICS = (
    "deletedVersions",
    "completedUploads",
    "pendingWithoutBytes",
    "processingRequested",
    "bytesWithoutRow",
    "rowsWithoutBytes",
    "objectsScanned",
    STUCK_VERSIONS,
    "staleWorkRemoved",
    "rendersResubmitted",
    # Upload sessions past their day ended, and (locally) multipart uploads no session names aborted.
    "sessionsExpired",
    "uploadsAborted",
)
# Gauges (how many there are at the end of a run), graphed by their maximum; the rest are actions taken, summed.
_RECONCILE_GAUGES = frozenset({"objectsScanned", STUCK_VERSIONS, "rowsWithoutBytes"})

PERIOD = cdk.Duration.minutes(5)
# A function error that a retry absorbed is not worth a page (a failed execution alarms on its own); errors
# or throttles in 2 of 3 consecutive five-minute periods are something persisting.
FUNCTION_DATAPOINTS_TO_ALARM = 2
FUNCTION_EVALUATION_PERIODS = 3
# Reconciliation must report at least this often however often it is scheduled, and at most once a day
# (an alarm's window cannot exceed a day).
_SILENCE_FLOOR = cdk.Duration.hours(1)
_SILENCE_CEILING_MINUTES = 24 * 60
_RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")
_MINUTES_PER_UNIT = {"minute": 1, "hour": 60, "day": 24 * 60}


def reconcile_window(schedule: str) -> cdk.Duration:
    """How long reconciliation may go without reporting: two of its intervals, never less than an hour.

    Two intervals tolerate one late or failed run without an alarm, and a period of at least an hour is not
    left empty by a run landing on its boundary.
    """
    match = _RATE.fullmatch(schedule.strip())
    if match is None:
        raise ValueError(
            f"reconcile_schedule {schedule!r}: observability needs a rate(...) expression to know how long "
            "reconciliation may stay silent before the stuck-files alarm fires"
        )
    interval = int(match.group(1)) * _MINUTES_PER_UNIT[match.group(2).removesuffix("s")]
    minutes = min(max(2 * interval, int(_SILENCE_FLOOR.to_minutes())), _SILENCE_CEILING_MINUTES)
    return cdk.Duration.minutes(minutes)


def describe(window: cdk.Duration) -> str:
    minutes = int(window.to_minutes())
    if minutes % 60:
        return f"{minutes} minutes"
    return "1 hour" if minutes == 60 else f"{minutes // 60} hours"


class Observability(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        state_machine: sfn.IStateMachine,
        queues: Sequence[sqs.IQueue],
        functions: Sequence[lambda_.IFunction],
        logged_errors: Mapping[str, cloudwatch.IMetric] | None = None,
    ) -> None:
        """`logged_errors`: per alarm id, the errors a function logged and carried on past (a count per period),
        for a function whose failures do not fail its invocation (infra/constructs/events.py)."""
        super().__init__(scope, construct_id)
        self.settings = settings
        self.topic = self._alarm_topic(settings)
        self.alarms: list[cloudwatch.Alarm] = []

        for metric_of, construct, what in (
            (state_machine.metric_failed, "ExecutionsFailed", "an ingestion execution failed"),
            (state_machine.metric_timed_out, "ExecutionsTimedOut", "an ingestion execution timed out"),
            (state_machine.metric_throttled, "ExecutionsThrottled", "Step Functions throttled an ingestion execution"),
        ):
            self._alarm(
                construct,
                metric_of(period=PERIOD, statistic="Sum"),
                description=f"Quire {settings.name}: {what} in the last 5 minutes. A document problem completes "
                "its execution with a recorded failure; this is an infrastructure error that exhausted its retries.",
            )

        for queue in queues:
            self._alarm(
                f"{queue.node.id}Depth",
                queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
                description=f"Quire {settings.name}: messages are waiting in the dead-letter queue {queue.node.id}: "
                "events or invocations that failed every retry. Inspect them, fix the cause, then redrive.",
            )

        names = self._unique_ids(functions)
        for function, name in zip(functions, names, strict=True):
            for kind, metric in (
                ("Errors", function.metric_errors(period=PERIOD, statistic="Sum")),
                ("Throttles", function.metric_throttles(period=PERIOD, statistic="Sum")),
            ):
                self._alarm(
                    f"{name}{kind}",
                    metric,
                    description=f"Quire {settings.name}: function {name} reported {kind.lower()} in "
                    f"{FUNCTION_DATAPOINTS_TO_ALARM} of the last {FUNCTION_EVALUATION_PERIODS} five-minute periods.",
                    datapoints_to_alarm=FUNCTION_DATAPOINTS_TO_ALARM,
                    evaluation_periods=FUNCTION_EVALUATION_PERIODS,
                )

        for alarm_id, logged in (logged_errors or {}).items():
            self._alarm(
                alarm_id,
                logged,
                description=f"Quire {settings.name}: {alarm_id.removesuffix('LoggedErrors')} logged errors in "
                f"{FUNCTION_DATAPOINTS_TO_ALARM} of the last {FUNCTION_EVALUATION_PERIODS} five-minute periods "
                "(its invocations may still succeed): read its log group for the entries at level ERROR.",
                datapoints_to_alarm=FUNCTION_DATAPOINTS_TO_ALARM,
                evaluation_periods=FUNCTION_EVALUATION_PERIODS,
            )

        window = reconcile_window(settings.reconcile_schedule)
        self.stuck_files = self._alarm(
            "StuckFiles",
            self.reconcile_metric(STUCK_VERSIONS, window),
            description=f"Quire {settings.name}: reconciliation gave up on processing at least one file version, "
            f"or has not reported for {describe(window)} (so nobody is looking for stuck files): "
            "check the reconcile function's logs and schedule.",
            treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
        )

        self.dashboard = self._dashboard(
            settings=settings,
            state_machine=state_machine,
            queues=queues,
            functions=functions,
            names=names,
            window=window,
        )

    def reconcile_metric(self, name: str, period: cdk.Duration, *, label: str | None = None) -> cloudwatch.Metric:
        """One of the reconcile function's metrics (a label only for graphs: an alarm on a labelled metric is
        rendered as a metric query)."""
        return cloudwatch.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=name,
            dimensions_map={"service": METRICS_SERVICE, "environment": self.settings.name},
            statistic="Maximum" if name in _RECONCILE_GAUGES else "Sum",
            period=period,
            label=label,
        )

    def _alarm_topic(self, settings: EnvironmentSettings) -> sns.Topic:
        removal = cdk.RemovalPolicy.RETAIN if settings.retain_data else cdk.RemovalPolicy.DESTROY
        # CloudWatch cannot publish to a topic encrypted with the AWS-managed SNS key: only a customer-managed
        # key whose policy lets CloudWatch generate and use data keys.
        key = kms.Key(
            self,
            "AlarmsKey",
            description=f"Quire {settings.name}: encrypts the alarm topic",
            enable_key_rotation=True,
            removal_policy=removal,
        )
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublishToTheEncryptedTopic",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                # As AWS documents it, without conditions: whether CloudWatch's KMS calls carry the source
                # ARN and account is not documented, and a condition that does not match drops every alarm.
                resources=["*"],
            )
        )
        topic = sns.Topic(
            self,
            "Alarms",
            display_name=f"Quire {settings.name} alarms",
            master_key=key,
            enforce_ssl=True,
        )
        # The TLS-only statement makes this an explicit topic policy, which replaces SNS's default one: CloudWatch
        # alarms of this account must be let in by name.
        stack = cdk.Stack.of(self)
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsOfThisAccountPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions={
                    "ArnLike": {
                        "aws:SourceArn": f"arn:{stack.partition}:cloudwatch:{stack.region}:{stack.account}:alarm:*"
                    },
                    "StringEquals": {"aws:SourceAccount": stack.account},
                },
            )
        )
        if settings.alarm_email:
            topic.add_subscription(subscriptions.EmailSubscription(settings.alarm_email))
        return topic

    def _alarm(
        self,
        construct_id: str,
        metric: cloudwatch.IMetric,
        *,
        description: str,
        datapoints_to_alarm: int = 1,
        evaluation_periods: int = 1,
        treat_missing_data: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            datapoints_to_alarm=datapoints_to_alarm,
            evaluation_periods=evaluation_periods,
            treat_missing_data=treat_missing_data,
            alarm_description=description,
        )
        action = cloudwatch_actions.SnsAction(self.topic)
        alarm.add_alarm_action(action)
        # Whoever was told about the problem is told when it is over.
        alarm.add_ok_action(action)
        self.alarms.append(alarm)
        return alarm

    @staticmethod
    def _unique_ids(functions: Sequence[lambda_.IFunction]) -> list[str]:
        """A readable id per function: its construct id, prefixed with its parent's where two share one."""
        seen: dict[str, int] = {}
        for function in functions:
            seen[function.node.id] = seen.get(function.node.id, 0) + 1
        names = []
        for function in functions:
            parent = function.node.scope
            prefix = parent.node.id if parent is not None and seen[function.node.id] > 1 else ""
            names.append(f"{prefix}{function.node.id}")
        return names

    def _dashboard(
        self,
        *,
        settings: EnvironmentSettings,
        state_machine: sfn.IStateMachine,
        queues: Sequence[sqs.IQueue],
        functions: Sequence[lambda_.IFunction],
        names: Sequence[str],
        window: cdk.Duration,
    ) -> cloudwatch.Dashboard:
        def per_function(kind: str, statistic: str) -> list[cloudwatch.IMetric]:
            return [
                function.metric(kind, period=PERIOD, statistic=statistic, label=name)
                for function, name in zip(functions, names, strict=True)
            ]

        executions = cloudwatch.GraphWidget(
            title="Ingestion executions (per 5 minutes)",
            left=[
                state_machine.metric_started(period=PERIOD, statistic="Sum", label="started"),
                state_machine.metric_succeeded(period=PERIOD, statistic="Sum", label="succeeded"),
                state_machine.metric_failed(period=PERIOD, statistic="Sum", label="failed"),
                state_machine.metric_timed_out(period=PERIOD, statistic="Sum", label="timed out"),
                state_machine.metric_throttled(period=PERIOD, statistic="Sum", label="throttled"),
            ],
            width=8,
        )
        execution_time = cloudwatch.GraphWidget(
            title="Ingestion execution time (ms)",
            left=[
                state_machine.metric_time(period=PERIOD, statistic=statistic, label=statistic)
                for statistic in ("p50", "p90", "Maximum")
            ],
            width=8,
        )
        alarm_states = cloudwatch.AlarmStatusWidget(
            title="Alarms",
            alarms=self.alarms,
            sort_by=cloudwatch.AlarmStatusWidgetSortBy.STATE_UPDATED_TIMESTAMP,
            width=8,
            height=6,
        )
        dead_letters = cloudwatch.GraphWidget(
            title="Dead-letter queue depth (messages visible, max per 5 minutes)",
            left=[
                queue.metric_approximate_number_of_messages_visible(
                    period=PERIOD, statistic="Maximum", label=queue.node.id
                )
                for queue in queues
            ],
            width=24,
        )
        function_widgets = [
            cloudwatch.GraphWidget(title=title, left=per_function(metric, statistic), width=8)
            for title, metric, statistic in (
                ("Function errors (per 5 minutes)", "Errors", "Sum"),
                ("Function duration p90 (ms)", "Duration", "p90"),
                ("Function throttles (per 5 minutes)", "Throttles", "Sum"),
            )
        ]
        per = describe(window)
        reconciliation = [
            cloudwatch.GraphWidget(
                title=f"Reconciliation: actions taken and orphans found (sum per {per})",
                left=[
                    self.reconcile_metric(name, window, label=name)
                    for name in RECONCILE_METRICS
                    if name not in _RECONCILE_GAUGES
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title=f"Reconciliation: stuck versions and rows without bytes (max per {per})",
                left=[self.reconcile_metric(name, window, label=name) for name in (STUCK_VERSIONS, "rowsWithoutBytes")],
                width=6,
            ),
            cloudwatch.GraphWidget(
                title=f"Reconciliation: objects scanned (max per {per})",
                left=[self.reconcile_metric("objectsScanned", window, label="objectsScanned")],
                width=6,
            ),
        ]
        stack = cdk.Stack.of(self)
        return cloudwatch.Dashboard(
            self,
            "Dashboard",
            # Dashboard names are unique per account, across regions.
            dashboard_name=f"Quire-{settings.name}-{stack.region}",
            default_interval=cdk.Duration.hours(24),
            widgets=[
                [
                    cloudwatch.TextWidget(
                        markdown=f"# Quire {settings.name}\nIngestion pipeline, dead letters, functions and "
                        "reconciliation. Every alarm notifies the environment's alarm topic (SNS).",
                        width=24,
                        height=2,
                    )
                ],
                [executions, execution_time, alarm_states],
                [dead_letters],
                function_widgets,
                reconciliation,
            ],
        )
