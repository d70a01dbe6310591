"""Events and webhooks on AWS (issue 34): the environment's EventBridge bus and its archive, the relay that
publishes the outbox to it, and the webhook deliverer with its queue.

    outbox (the database's triggers) ─ relay (Scheduler, every minute, ~1 pass a second) ─┬─ PutEvents → bus → archive
                                                                                        └─ SendMessage → queue
    queue ─ SQS event source (partial batch failures) ─ deliverer ─ POST https://customer ...   (DLQ after 5 receives)
    Scheduler, every minute ─ deliverer's sweep (lost wake-ups, retries due later than SQS can delay)

The bus is named after the stack (`<stack>-events`); the archive keeps what the relay published (source `quire`)
for ARCHIVE_RETENTION_DAYS, as long as GET /v1/events lists them, so a consumer of the bus can be replayed to
(docs/deployment.md, "Events and webhooks"). Each function's role grants what it calls, on these resources only: the
relay events:PutEvents on this bus and sqs:SendMessage on this queue; the deliverer consumes the queue and sends to
it (a retry's wake-up); both connect to the database as the application role. The relay runs in the isolated
subnets (EventBridge and SQS through VPC endpoints); the deliverer alone runs in the egress subnets, behind the NAT
gateway (infra/constructs/database.py).
"""

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.constructs.database import WEBHOOK_EGRESS, Database
from infra.constructs.functions import LambdaPackage, acknowledge
from infra.environments import EnvironmentSettings
from shared.domain.events import EVENT_SOURCE, RETENTION_DAYS

RELAY_HANDLER = "functions.relay.handler.handler"
DELIVER_HANDLER = "functions.deliver_webhooks.handler.handler"
# A replay reaches as far back as GET /v1/events does.
ARCHIVE_RETENTION_DAYS = RETENTION_DAYS
SCHEDULE = "rate(1 minute)"
SCHEDULE_SECONDS = 60
# functions/relay/handler.py's STOP_MARGIN_SECONDS: the relay loops for the schedule's minute, then has this long
# to finish its last pass (a test checks the two agree).
RELAY_STOP_MARGIN_SECONDS = 60
RELAY_TIMEOUT = cdk.Duration.seconds(SCHEDULE_SECONDS + RELAY_STOP_MARGIN_SECONDS)
# A wake-up may send up to shared/services/webhook_delivery.py's rounds of sends, each at most 10 s.
DELIVER_TIMEOUT_SECONDS = 300
# Lambda's advice for an SQS event source: a visibility timeout of six times the function's.
QUEUE_VISIBILITY = cdk.Duration.seconds(6 * DELIVER_TIMEOUT_SECONDS)
# A wake-up the deliverer failed on this many times (its body unreadable, the database down) is set aside.
MAX_RECEIVE_COUNT = 5
WAKE_UPS_PER_BATCH = 10
# Concurrent pollers of the queue: below the deliverer's reservation, which the minute's sweep shares.
WEBHOOK_POLLERS = 8
# Every function logs through powertools (JSON, `level`): an error a function logged and carried on past (the
# relay logs a tenant whose events could not be published, and goes on with the others) is counted here.
LOGGED_ERRORS_NAMESPACE = "Quire"


class Events(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        package: LambdaPackage,
        database: Database,
    ) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        removal = cdk.RemovalPolicy.RETAIN if settings.retain_data else cdk.RemovalPolicy.DESTROY
        # Named after the stack, so that two stacks (or two test deployments) in one account and region never
        # collide; the archive too (a name CloudFormation would generate can pass its 48 characters).
        name = f"{cdk.Aws.STACK_NAME}-events"
        self.bus = events.EventBus(self, "Bus", event_bus_name=name)
        self.archive = self.bus.archive(
            "Archive",
            archive_name=name,
            description=f"Quire {settings.name}: every event the relay published, for replay",
            event_pattern=events.EventPattern(source=[EVENT_SOURCE]),
            retention=cdk.Duration.days(ARCHIVE_RETENTION_DAYS),
        )

        self.dead_letters = sqs.Queue(
            self,
            "WebhookWakeUpsFailed",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=cdk.Duration.days(14),
            removal_policy=removal,
        )
        acknowledge(
            self.dead_letters, "SQS3", "This queue is itself a dead-letter queue: webhook wake-ups that kept failing."
        )
        self.queue = sqs.Queue(
            self,
            "WebhookWakeUps",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=QUEUE_VISIBILITY,
            # A wake-up is a hint: the deliveries themselves are rows, and the minute's sweep finds any left due.
            retention_period=cdk.Duration.days(1),
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=MAX_RECEIVE_COUNT, queue=self.dead_letters),
            removal_policy=removal,
        )

        reserved = settings.reserved_concurrency
        self.relay = package.function(
            self,
            "RelayFunction",
            handler=RELAY_HANDLER,
            description="publishes the events outbox to the environment's bus and wakes webhook deliveries",
            timeout=RELAY_TIMEOUT,
            memory_size=512,
            # The name as the bus declares it (its Ref is the same name, but moto's CloudFormation cannot resolve it).
            environment={"QUIRE_EVENT_BUS_NAME": name},
            database=database,
            reserved_concurrency=reserved.relay if reserved else None,
        )
        self.relay.add_to_role_policy(
            iam.PolicyStatement(actions=["events:PutEvents"], resources=[self.bus.event_bus_arn])
        )
        self.grant_wake(self.relay)

        self.deliverer = package.function(
            self,
            "DeliverWebhooksFunction",
            handler=DELIVER_HANDLER,
            description="sends webhook deliveries to customers' https endpoints",
            timeout=cdk.Duration.seconds(DELIVER_TIMEOUT_SECONDS),
            memory_size=512,
            database=database,
            security_groups=[database.webhook_egress_security_group],
            subnet_type=WEBHOOK_EGRESS,
            reserved_concurrency=reserved.deliver_webhooks if reserved else None,
        )
        # ReceiveMessage, DeleteMessage, ChangeMessageVisibility, GetQueueAttributes, GetQueueUrl on this queue.
        self.deliverer.add_event_source(
            event_sources.SqsEventSource(
                self.queue,
                batch_size=WAKE_UPS_PER_BATCH,
                report_batch_item_failures=True,
                max_concurrency=WEBHOOK_POLLERS,
            )
        )
        self.grant_wake(self.deliverer)

        for function in (self.relay, self.deliverer):
            # Every run is the next minute's to retry: no retry of a failed one, no run older than a minute.
            function.configure_async_invoke(retry_attempts=0, max_event_age=cdk.Duration.minutes(1))
        self.undelivered = self._schedules()
        self.logged_errors = {
            "RelayLoggedErrors": self._logged_errors(self.relay, "relayLoggedErrors"),
            "DeliverWebhooksLoggedErrors": self._logged_errors(self.deliverer, "deliverWebhooksLoggedErrors"),
        }

    @property
    def functions(self) -> list[lambda_.IFunction]:
        return [self.relay, self.deliverer]

    @property
    def queues(self) -> list[sqs.IQueue]:
        """The dead-letter queues, for the alarms."""
        return [self.dead_letters, self.undelivered]

    def grant_wake(self, function: lambda_.Function) -> None:
        """`function` may wake the deliverer (and knows the queue): SendMessage on this queue, nothing else."""
        function.add_to_role_policy(iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[self.queue.queue_arn]))
        function.add_environment("QUIRE_WEBHOOK_QUEUE_URL", self.queue.queue_url)

    def _schedules(self) -> sqs.Queue:
        stack = cdk.Stack.of(self)
        undelivered = sqs.Queue(
            self,
            "SchedulesUndelivered",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=cdk.Duration.days(14),
            removal_policy=cdk.RemovalPolicy.RETAIN if self._settings.retain_data else cdk.RemovalPolicy.DESTROY,
        )
        acknowledge(
            undelivered, "SQS3", "This queue is itself a dead-letter queue: schedules Scheduler could not deliver."
        )
        role = iam.Role(
            self,
            "SchedulesRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": stack.account}}
            ),
            description=f"Quire {self._settings.name}: EventBridge Scheduler invokes the relay and the deliverer",
        )
        for construct_id, function, description in (
            ("Relay", self.relay, "Quire events: publish the outbox, about once a second for a minute"),
            ("DeliverWebhooks", self.deliverer, "Quire webhooks: send deliveries that are due and were not woken"),
        ):
            acknowledge(
                role,
                f"IAM5[Resource::<{stack.get_logical_id(function.node.default_child)}.Arn>:*]",  # type: ignore[arg-type]
                "The CDK grants invoking the relay and the deliverer and their versions; nothing else.",
            )
            scheduler.Schedule(
                self,
                f"{construct_id}Schedule",
                description=description,
                schedule=scheduler.ScheduleExpression.expression(SCHEDULE),
                target=scheduler_targets.LambdaInvoke(
                    function,
                    role=role,
                    dead_letter_queue=undelivered,
                    # The next minute's run is the retry.
                    retry_attempts=0,
                    max_event_age=cdk.Duration.minutes(1),
                ),
            )
        return undelivered

    def _logged_errors(self, function: lambda_.Function, metric_name: str) -> cloudwatch.Metric:
        """Errors `function` logged (powertools' `level`), as a metric an alarm can watch."""
        filtered = logs.MetricFilter(
            self,
            f"{metric_name[0].upper()}{metric_name[1:]}",
            log_group=function.log_group,
            filter_pattern=logs.FilterPattern.string_value("$.level", "=", "ERROR"),
            metric_namespace=LOGGED_ERRORS_NAMESPACE,
            metric_name=metric_name,
            metric_value="1",
            default_value=0,
        )
        return filtered.metric(statistic="Sum", period=cdk.Duration.minutes(5))
