"""Pipeline: the ingestion state machine, the functions its tasks run, and what starts it.

S3 "Object Created" (EventBridge) → on_object_created → one Standard execution per file version, named after
it (a duplicate start is `ExecutionAlreadyExists`: success). The execution runs

    inspect → extract → (pages without text, images) recognize ⟲ wait → chunk → embed (Map) → index → publish

passing references (ids, batch numbers), never content. A document problem is recorded by the step and the
execution SUCCEEDS; an infrastructure error is retried with back-off, and once retries are spent a Catch
records the interruption on the version and the execution FAILS (reconciliation starts a new attempt).
EventBridge Scheduler runs reconcile on the environment's schedule.
"""

from collections.abc import Callable, Sequence

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_guardduty as guardduty
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from infra.constructs.api import grant_invoke_model
from infra.constructs.database import Database
from infra.constructs.functions import LambdaPackage, acknowledge, log_retention
from infra.constructs.pipeline_steps import (
    OCR_POLL_SECONDS,
    RETRIED_ERRORS,
    STEPS,
    TIMEOUT_ERRORS,
    Step,
    grant_recognition_engines,
)
from infra.constructs.storage import (
    DELETE_OBJECTS,
    DERIVED_PREFIX,
    OCR_STAGING_PREFIX,
    ORIGINALS_PREFIX,
    READ_OBJECTS,
    TAG_OBJECTS,
    WRITE_OBJECTS,
    Storage,
)
from infra.constructs.tenant_data import TenantDataAccess
from infra.environments import EnvironmentSettings
from shared.domain.steps import (
    DONE,
    PIPELINE,
    CaughtError,
    CaughtFailure,
    ForEach,
    Graph,
    StepName,
    StepOutcome,
    Target,
    WaitThen,
    When,
    wire_name,
)

# GuardDuty Malware Protection for S3's result event (events/guardduty_malware_scan_result.json).
MALWARE_SCAN_RESULT = "GuardDuty Malware Protection Object Scan Result"
# Where a Catch puts the error it caught: the record-failure step reads it there.
_CAUGHT_ERROR = f"$.{wire_name(CaughtFailure, 'error')}"


def _condition(model: type[StepOutcome], when: When) -> sfn.Condition:
    path = f"$.{wire_name(model, when.field)}"
    if when.test == "present":
        return sfn.Condition.is_present(path)
    is_true = sfn.Condition.boolean_equals(path, True)
    return is_true if when.test == "true" else sfn.Condition.not_(is_true)


class Pipeline(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        package: LambdaPackage,
        storage: Storage,
        database: Database,
    ) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self._package = package
        self._storage = storage
        self._database = database
        self.tenant_data: dict[str, TenantDataAccess] = {}
        self.step_functions: dict[str, lambda_.Function] = {step.name: self._step_function(step) for step in STEPS}
        recognize = self.step_functions["Recognize"]
        grant_recognition_engines(self.tenant_data["Recognize"], bucket_name=storage.originals.bucket_name)
        if settings.vision_model_id:
            recognize.add_environment("QUIRE_VISION_MODEL_ID", settings.vision_model_id)
            recognize.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["bedrock:InvokeModel"],
                    resources=[_foundation_model(settings.vision_model_id)],
                )
            )
        # The environment's embedding model, the one QUIRE_BEDROCK_EMBEDDING_MODEL_ID names (functions.py).
        embed = self.step_functions["Embed"]
        embed.add_to_role_policy(
            iam.PolicyStatement(
                actions=["bedrock:InvokeModel"],
                resources=[_foundation_model(settings.embedding_model_id)],
            )
        )
        if settings.chunk_context_model_id:
            # Chunks' situating sentences: every function knows the model (functions.py), the embed step alone may
            # invoke it.
            grant_invoke_model(embed, settings.chunk_context_model_id)
        self.state_machine = self._state_machine()
        self.dead_letter_queues: list[sqs.Queue] = []
        self.on_object_created = self._event_wiring()
        plan = storage.malware_protection
        self.malware_verdict = self._malware_verdicts(plan) if plan is not None else None
        self.reconcile = self._reconcile_schedule()
        self.functions: list[lambda_.IFunction] = [
            *self.step_functions.values(),
            self.on_object_created,
            *([self.malware_verdict] if self.malware_verdict else []),
            self.reconcile,
        ]

    # --- functions ---------------------------------------------------------------------------------------

    def _function(
        self,
        construct_id: str,
        *,
        handler: str,
        description: str,
        timeout_seconds: int,
        memory_mb: int,
        ephemeral_mib: int = 512,
        environment: dict[str, str] | None = None,
        reserved_concurrency: int | None = None,
    ) -> lambda_.Function:
        function = self._package.function(
            self,
            construct_id,
            handler=handler,
            description=description,
            timeout=cdk.Duration.seconds(timeout_seconds),
            memory_size=memory_mb,
            ephemeral_storage_mib=ephemeral_mib,
            environment={"QUIRE_BUCKET": self._storage.originals.bucket_name, **(environment or {})},
            database=self._database,
            reserved_concurrency=reserved_concurrency,
        )
        return function

    def _step_function(self, step: Step) -> lambda_.Function:
        function = self._function(
            f"{step.name}Function",
            handler=step.handler,
            description=f"Quire {self._settings.name} pipeline step: {step.description}",
            timeout_seconds=step.timeout_seconds,
            memory_mb=step.memory_mb,
            ephemeral_mib=step.ephemeral_mib,
            reserved_concurrency=self._reserved("pipeline_step"),
        )
        self._grant_tenant_storage(
            function,
            read=step.read,
            write=step.write,
            delete=step.delete,
            listing=step.listing,
            missing_is_not_found=step.missing_is_not_found,
        )
        return function

    def _reserved(self, share: str) -> int | None:
        reserved = self._settings.reserved_concurrency
        return None if reserved is None else int(getattr(reserved, share))

    def _grant_tenant_storage(
        self,
        function: lambda_.Function,
        *,
        read: Sequence[str] = (),
        write: Sequence[str] = (),
        delete: Sequence[str] = (),
        listing: Sequence[str] = (),
        missing_is_not_found: bool = False,
    ) -> None:
        """The storage grants on the function's tenant data role (one tenant's objects per session), never on
        the function's own role."""
        if not (read or write or delete or listing):
            return
        access = TenantDataAccess(self, f"{function.node.id}TenantData", storage=self._storage, function=function)
        self.tenant_data[function.node.id.removesuffix("Function")] = access
        _grant_storage(
            access.grant_objects, access.grant_listing, read=read, write=write, delete=delete, listing=listing
        )
        if missing_is_not_found:
            access.grant_missing_is_not_found()

    # --- the state machine --------------------------------------------------------------------------------

    def _task(self, step_name: StepName, *, failed: sfn.IChainable, catch: bool = True) -> tasks.LambdaInvoke:
        """A Lambda task with a timeout above its function's, retries on infrastructure errors only, and a
        Catch that records which step failed before the failure is recorded on the version (a task inside a
        Map has none of its own: the Map's Catch records it)."""
        step = next(step for step in STEPS if step.name == step_name)
        task = tasks.LambdaInvoke(
            self,
            step_name,
            lambda_function=self.step_functions[step_name],
            payload_response_only=True,
            retry_on_service_exceptions=False,
            task_timeout=sfn.Timeout.duration(cdk.Duration.seconds(step.timeout_seconds + 30)),
        )
        self._retry(task)
        if catch:
            task.add_catch(self._caught(step_name, failed), errors=["States.ALL"], result_path=_CAUGHT_ERROR)
        return task

    def _wait(self, target: WaitThen) -> sfn.Wait:
        return sfn.Wait(self, target.name, time=sfn.WaitTime.duration(cdk.Duration.seconds(OCR_POLL_SECONDS)))

    def _each(
        self, graph: Graph, target: ForEach, states: dict[StepName, tasks.LambdaInvoke], failed: sfn.IChainable
    ) -> sfn.Map:
        """A Map over the output's `target.items`: each item task gets the references and its item."""
        state_model = next(spec.returns for spec in graph.steps for _, to in spec.routes if to == target)
        item_model = graph.spec(target.step).reads
        selector = {
            f"{wire_name(item_model, name)}.$": (
                f"$.{wire_name(state_model, name)}" if name in state_model.model_fields else "$$.Map.Item.Value"
            )
            for name in item_model.model_fields
        }
        each = sfn.Map(
            self,
            target.name,
            items_path=f"$.{wire_name(state_model, target.items)}",
            item_selector=selector,
            # Bedrock's per-account quota is shared by every execution: a few batches at a time per document.
            max_concurrency=4,
            result_path=sfn.JsonPath.DISCARD,
        )
        each.item_processor(states[target.step])
        each.add_catch(self._caught(target.step, failed), errors=["States.ALL"], result_path=_CAUGHT_ERROR)
        return each

    @staticmethod
    def _retry(task: tasks.LambdaInvoke) -> None:
        # Aurora resuming from a pause takes some seconds: 2, 4, 8, 16, 32, 60 s with full jitter covers it.
        task.add_retry(
            errors=list(RETRIED_ERRORS),
            interval=cdk.Duration.seconds(2),
            backoff_rate=2,
            max_attempts=6,
            max_delay=cdk.Duration.seconds(60),
            jitter_strategy=sfn.JitterType.FULL,
        )
        task.add_retry(errors=list(TIMEOUT_ERRORS), interval=cdk.Duration.seconds(5), max_attempts=1)

    def _caught(self, step_name: StepName, failed: sfn.IChainable) -> sfn.IChainable:
        return sfn.Pass(
            self,
            f"{step_name} failed",
            result=sfn.Result.from_string(step_name.lower()),
            result_path=f"$.{wire_name(CaughtFailure, 'failed_step')}",
        ).next(failed)

    def _state_machine(self) -> sfn.StateMachine:
        done = sfn.Succeed(self, "Done", comment="processed, or a document problem recorded on the version")
        error_path = f"$.{wire_name(CaughtFailure, 'error')}"
        infrastructure_failure = sfn.Fail(
            self,
            "Infrastructure failure",
            comment="a step failed after its retries; the version is `interrupted` and reconciliation retries it",
            error_path=f"{error_path}.{wire_name(CaughtError, 'error')}",
            cause_path=f"{error_path}.{wire_name(CaughtError, 'cause')}",
        )
        record_failure = tasks.LambdaInvoke(
            self,
            "Record failure",
            lambda_function=self.step_functions[PIPELINE.on_failure.name],
            payload_response_only=True,
            retry_on_service_exceptions=False,
            result_path=sfn.JsonPath.DISCARD,
            task_timeout=sfn.Timeout.duration(cdk.Duration.seconds(90)),
        )
        self._retry(record_failure)
        record_failure.add_catch(infrastructure_failure, errors=["States.ALL"], result_path="$.recordFailureError")
        return self._definition_of(PIPELINE, done=done, failed=record_failure.next(infrastructure_failure))

    def _definition_of(self, graph: Graph, *, done: sfn.Succeed, failed: sfn.IChainable) -> sfn.StateMachine:
        """The state machine `graph` describes: one task per step, a Choice per step that has routes, a Wait
        and a Map where the graph says so. The local runner walks the same graph."""
        mapped = {target.step for spec in graph.steps for _, target in spec.routes if isinstance(target, ForEach)}
        states: dict[StepName, tasks.LambdaInvoke] = {
            spec.name: self._task(spec.name, failed=failed, catch=spec.name not in mapped) for spec in graph.steps
        }
        built: dict[str, sfn.IChainable] = {}

        def state_for(target: Target) -> sfn.IChainable:
            if isinstance(target, StepName):
                return states[target]
            if target == DONE:
                return done
            assert isinstance(target, WaitThen | ForEach)
            if target.name not in built:
                built[target.name] = (
                    self._wait(target) if isinstance(target, WaitThen) else self._each(graph, target, states, failed)
                ).next(states[target.step if isinstance(target, WaitThen) else target.then])
            return built[target.name]

        for spec in graph.steps:
            if spec.name in mapped:
                continue
            if spec.choice is None:
                states[spec.name].next(state_for(spec.otherwise))
                continue
            choice = sfn.Choice(self, spec.choice)
            for when, target in spec.routes:
                choice.when(_condition(spec.returns, when), state_for(target))
            states[spec.name].next(choice.otherwise(state_for(spec.otherwise)))
        definition = states[graph.first]

        log_group = logs.LogGroup(
            self,
            "ExecutionLogs",
            retention=log_retention(self._settings.log_retention_days),
            removal_policy=cdk.RemovalPolicy.RETAIN if self._settings.retain_data else cdk.RemovalPolicy.DESTROY,
        )
        state_machine = sfn.StateMachine(
            self,
            "Ingestion",
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            comment="Quire ingestion: one execution per file version and attempt",
            # An OCR job is given up after MAX_OCR_POLLS polls (about an hour); the rest takes minutes.
            timeout=cdk.Duration.hours(6),
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
        )
        acknowledge(
            state_machine.role,
            "IAM5[Resource::*]",
            "Step Functions' log delivery and X-Ray actions have no resource-level permissions.",
        )
        for function in self.step_functions.values():
            acknowledge(
                state_machine.role,
                f"IAM5[Resource::<{cdk.Stack.of(self).get_logical_id(function.node.default_child)}.Arn>:*]",  # type: ignore[arg-type]
                "Invoking any version or alias of the pipeline's own functions.",
            )
        return state_machine

    # --- what starts it -----------------------------------------------------------------------------------

    def _dead_letter_queue(self, construct_id: str, purpose: str) -> sqs.Queue:
        queue = sqs.Queue(
            self,
            construct_id,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=cdk.Duration.days(14),
            removal_policy=cdk.RemovalPolicy.RETAIN if self._settings.retain_data else cdk.RemovalPolicy.DESTROY,
        )
        acknowledge(queue, "SQS3", f"This queue is itself a dead-letter queue: {purpose}.")
        self.dead_letter_queues.append(queue)
        return queue

    def _asynchronous_function(
        self,
        name: str,
        *,
        handler: str,
        description: str,
        timeout_seconds: int,
        memory_mb: int,
        retry_attempts: int,
        failures: str,
        max_event_age: cdk.Duration | None = None,
        reserved_concurrency: int | None = None,
    ) -> lambda_.Function:
        """A function invoked asynchronously (by EventBridge or Scheduler) that may start executions; its
        invocations that fail after Lambda's retries land in a dead-letter queue of their own."""
        function = self._function(
            f"{name}Function",
            handler=handler,
            description=f"Quire {self._settings.name}: {description}",
            timeout_seconds=timeout_seconds,
            memory_mb=memory_mb,
            environment={"QUIRE_STATE_MACHINE_ARN": self.state_machine.state_machine_arn},
            reserved_concurrency=reserved_concurrency,
        )
        self.state_machine.grant_start_execution(function)
        function.configure_async_invoke(
            retry_attempts=retry_attempts,
            max_event_age=max_event_age,
            on_failure=destinations.SqsDestination(self._dead_letter_queue(f"{name}Failures", failures)),
        )
        return function

    def _event_wiring(self) -> lambda_.Function:
        function = self._asynchronous_function(
            "OnObjectCreated",
            handler="functions.on_object_created.handler.handler",
            description="records an upload as stored and starts its processing",
            timeout_seconds=60,
            memory_mb=512,
            retry_attempts=2,
            max_event_age=cdk.Duration.hours(6),
            failures="uploads whose handler failed after Lambda's own retries",
            reserved_concurrency=self._reserved("on_object_created"),
        )
        # Sniffing reads the original; a rejected upload's bytes are removed; an event that outran its object
        # (or came after its removal) finds it missing, not forbidden.
        self._grant_tenant_storage(
            function, read=(ORIGINALS_PREFIX,), delete=(ORIGINALS_PREFIX,), missing_is_not_found=True
        )
        # With malware scanning on (QUIRE_MALWARE_SCANNING, on every function: infra/constructs/functions.py),
        # the scan's verdict starts processing (functions/malware_verdict), not the upload itself.
        self._deliver_events(
            function,
            "ObjectCreated",
            description="An upload landed in the originals bucket: record it and start processing",
            pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={
                    "bucket": {"name": [self._storage.originals.bucket_name]},
                    "object": {"key": [{"prefix": ORIGINALS_PREFIX}]},
                },
            ),
            undelivered=("ObjectCreatedUndelivered", "events EventBridge could not deliver"),
        )
        return function

    def _deliver_events(
        self,
        function: lambda_.Function,
        rule_id: str,
        *,
        description: str,
        pattern: events.EventPattern,
        undelivered: tuple[str, str],
    ) -> None:
        """An EventBridge rule for `pattern` to `function`, retried for two hours, then kept in a dead-letter
        queue (named `undelivered`: its id and what it holds) for the operator."""
        events.Rule(
            self,
            rule_id,
            description=description,
            event_pattern=pattern,
            targets=[
                events_targets.LambdaFunction(
                    function,
                    dead_letter_queue=self._dead_letter_queue(*undelivered),
                    retry_attempts=8,
                    max_event_age=cdk.Duration.hours(2),
                )
            ],
        )

    def _malware_verdicts(self, plan: guardduty.CfnMalwareProtectionPlan) -> lambda_.Function:
        """GuardDuty's scan result for an upload moves its version on: to processing when no threat was found,
        to rejected (malware) otherwise. Filtered on this stack's plan and bucket: another bucket's results
        never reach the function."""
        function = self._asynchronous_function(
            "MalwareVerdict",
            handler="functions.malware_verdict.handler.handler",
            description="records GuardDuty's scan result for an upload and starts or refuses its processing",
            timeout_seconds=60,
            memory_mb=512,
            retry_attempts=2,
            max_event_age=cdk.Duration.hours(6),
            failures="scan results whose handler failed after Lambda's own retries",
            reserved_concurrency=self._reserved("pipeline_step"),
        )
        # An infected upload's bytes are removed, as a refused upload's are.
        self._grant_tenant_storage(
            function, read=(ORIGINALS_PREFIX,), delete=(ORIGINALS_PREFIX,), missing_is_not_found=True
        )
        self._deliver_events(
            function,
            "MalwareScanResult",
            description="GuardDuty scanned an upload: record the verdict, then process or refuse it",
            pattern=events.EventPattern(
                source=["aws.guardduty"],
                detail_type=[MALWARE_SCAN_RESULT],
                resources=[plan.attr_arn],
                detail={"s3ObjectDetails": {"bucketName": [self._storage.originals.bucket_name]}},
            ),
            undelivered=("MalwareVerdictUndelivered", "scan results EventBridge could not deliver"),
        )
        return function

    def _reconcile_schedule(self) -> lambda_.Function:
        function = self._asynchronous_function(
            "Reconcile",
            handler="functions.reconcile.handler.handler",
            description="sweeps deletions, lost events and stalled work; reports orphans",
            timeout_seconds=900,
            memory_mb=1024,
            retry_attempts=0,
            failures="reconciliation runs that failed",
            reserved_concurrency=self._reserved("reconcile"),
        )
        # Deleting a file removes its bytes and what was derived from them; orphans are found by listing both.
        # The one function whose own role reaches every tenant's objects: the sweep walks all of them.
        _grant_storage(
            lambda actions, prefixes: self._storage.grant_objects(function, actions, prefixes),
            lambda prefixes: self._storage.grant_listing(function, prefixes),
            # The bytes sweep asks whether each stored version's original and derived document are still there.
            read=(ORIGINALS_PREFIX, DERIVED_PREFIX),
            # OCR staging copies of a deleted original are removed with it, not left to the lifecycle rule.
            delete=(ORIGINALS_PREFIX, DERIVED_PREFIX, OCR_STAGING_PREFIX),
            listing=(ORIGINALS_PREFIX, DERIVED_PREFIX, OCR_STAGING_PREFIX),
        )
        # An upload session past its day is aborted with its version (the lifecycle rule aborts it too).
        self._storage.grant_objects(function, ("s3:AbortMultipartUpload",), (ORIGINALS_PREFIX,))
        # A pending upload whose bytes never came is found missing, and rejected, rather than failing the sweep.
        self._storage.grant_missing_is_not_found(function)
        undelivered = self._dead_letter_queue("ReconcileUndelivered", "schedules Scheduler could not deliver")
        schedule_role = iam.Role(
            self,
            "ReconcileScheduleRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": cdk.Stack.of(self).account}},
            ),
            description=f"Quire {self._settings.name}: EventBridge Scheduler invokes reconcile",
        )
        acknowledge(
            schedule_role,
            f"IAM5[Resource::<{cdk.Stack.of(self).get_logical_id(function.node.default_child)}.Arn>:*]",  # type: ignore[arg-type]
            "The CDK grants invoking the reconcile function and its versions; nothing else.",
        )
        scheduler.Schedule(
            self,
            "Reconcile",
            description="Quire reconciliation: storage against the index, stalled and interrupted processing",
            schedule=scheduler.ScheduleExpression.expression(self._settings.reconcile_schedule),
            target=scheduler_targets.LambdaInvoke(
                function,
                role=schedule_role,
                dead_letter_queue=undelivered,
                retry_attempts=2,
                max_event_age=cdk.Duration.hours(1),
            ),
        )
        return function


def _grant_storage(
    grant_objects: Callable[[Sequence[str], Sequence[str]], None],
    grant_listing: Callable[[Sequence[str]], None],
    *,
    read: Sequence[str] = (),
    write: Sequence[str] = (),
    delete: Sequence[str] = (),
    listing: Sequence[str] = (),
) -> None:
    if read:
        grant_objects(READ_OBJECTS, read)
    if write:
        grant_objects(WRITE_OBJECTS, write)
    if delete:
        # A deletion tags the version deleted before removing it (storage.DELETED_TAG_KEY); removing every
        # version of a key means listing its versions first.
        grant_objects((*DELETE_OBJECTS, *TAG_OBJECTS), delete)
        listing = tuple(dict.fromkeys([*listing, *delete]))
    if listing:
        grant_listing(listing)


def _foundation_model(model_id: str) -> str:
    return f"arn:{cdk.Aws.PARTITION}:bedrock:{cdk.Aws.REGION}::foundation-model/{model_id}"
