"""Lambda functions built one way: one code asset, one dependency layer, arm64, Python 3.12, each with its
own role, its own log group (retention per environment), active tracing and the environment's log level."""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from infra.environments import EnvironmentSettings

RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64
# The embedding vectors' dimension, which both embedding models (infra/environments.py's EMBEDDING_MODELS) give:
# what every function embeds with (the indexing pipeline and the API's queries must agree, with the environment's
# embedding_model_id), and the `vector(N)` column the migrations create.
EMBEDDING_DIMENSION = 1024


class DatabaseAccess(Protocol):
    """What a function that queries the database as the application role needs of infra/constructs/database.py."""

    @property
    def vpc(self) -> ec2.IVpc: ...

    @property
    def functions_security_group(self) -> ec2.ISecurityGroup: ...

    def connection_environment(self) -> dict[str, str]: ...

    def grant_connect(self, grantee: iam.IGrantable) -> None: ...


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding on `scope` and what it contains, with the reason written down."""
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=f"AwsSolutions::AwsSolutions-{rule}", reason=reason))


class LambdaPackage(Construct):
    """The code asset and the dependency layer every Quire function runs from."""

    def __init__(
        self, scope: Construct, construct_id: str, *, settings: EnvironmentSettings, code_dir: Path, layer_dir: Path
    ) -> None:
        super().__init__(scope, construct_id)
        self.settings = settings
        self.code = lambda_.Code.from_asset(str(code_dir))
        self.layer = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=lambda_.Code.from_asset(str(layer_dir), exclude=[".requirements-sha256"]),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="Quire's runtime dependencies (pyproject.toml [project.dependencies]) for arm64 Python 3.12",
            removal_policy=cdk.RemovalPolicy.RETAIN if settings.retain_data else cdk.RemovalPolicy.DESTROY,
        )

    def function(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: str,
        description: str,
        timeout: cdk.Duration,
        memory_size: int = 1024,
        environment: Mapping[str, str] | None = None,
        database: DatabaseAccess | None = None,
        vpc: ec2.IVpc | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        dead_letter_queue: sqs.IQueue | None = None,
        ephemeral_storage_mib: int = 512,
        reserved_concurrency: int | None = None,
        subnet_type: ec2.SubnetType = ec2.SubnetType.PRIVATE_ISOLATED,
    ) -> lambda_.Function:
        """A function running `handler` (a dotted path: infra names handlers by string, never imports them).
        With `database`, it runs in the database's network and connects as the application role: in its isolated
        subnets with the functions' group, unless `subnet_type` and `security_groups` say otherwise (the webhook
        deliverer's way out, infra/constructs/events.py)."""
        settings = self.settings
        if database is not None:
            vpc, security_groups = database.vpc, security_groups or [database.functions_security_group]
            environment = {**database.connection_environment(), **(environment or {})}
        log_group = logs.LogGroup(
            scope,
            f"{construct_id}Logs",
            retention=log_retention(settings.log_retention_days),
            removal_policy=cdk.RemovalPolicy.RETAIN if settings.retain_data else cdk.RemovalPolicy.DESTROY,
        )
        role = iam.Role(
            scope,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Quire {settings.name}: {description}",
        )
        # Its own log group only: no account-wide logs permission from the managed basic execution policy.
        log_group.grant_write(role)
        function = lambda_.Function(
            scope,
            construct_id,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            code=self.code,
            layers=[self.layer],
            handler=handler,
            description=description,
            timeout=timeout,
            memory_size=memory_size,
            ephemeral_storage_size=cdk.Size.mebibytes(ephemeral_storage_mib),
            role=role,
            log_group=log_group,
            tracing=lambda_.Tracing.ACTIVE,
            environment={
                "QUIRE_RUNTIME": "aws",
                "POWERTOOLS_SERVICE_NAME": "quire",
                "POWERTOOLS_LOG_LEVEL": settings.log_level,
                "POWERTOOLS_METRICS_NAMESPACE": "Quire",
                "QUIRE_ENVIRONMENT": settings.name,
                "QUIRE_BEDROCK_EMBEDDING_MODEL_ID": settings.embedding_model_id,
                "QUIRE_EMBEDDING_DIMENSION": str(EMBEDDING_DIMENSION),
                # Every function, not only the upload's: processing is asked for from the upload event, the
                # verdict, the sweeps and the API, and each must hold it back until the scanner says clean.
                "QUIRE_MALWARE_SCANNING": settings.malware_scanning,
                # Every function: the chunk step sends the document's head when a model situates chunks, the embed
                # step calls it (the only one granted it), the re-index work list counts versions it has not situated.
                **(
                    {"QUIRE_CHUNK_CONTEXT_MODEL_ID": settings.chunk_context_model_id}
                    if settings.chunk_context_model_id
                    else {}
                ),
                **(environment or {}),
            },
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=subnet_type) if vpc else None,
            security_groups=list(security_groups) if security_groups else None,
            dead_letter_queue=dead_letter_queue,
            reserved_concurrent_executions=reserved_concurrency,
        )
        acknowledge(
            role,
            "IAM5[Resource::*]",
            "X-Ray's PutTraceSegments/PutTelemetryRecords (active tracing) and, in a VPC, the ENI actions "
            "Lambda needs have no resource-level permissions.",
        )
        if vpc is not None:
            # A role passed in gets nothing automatically: without this, Lambda refuses to create a function in
            # the VPC (it cannot attach network interfaces).
            # The network-interface actions alone (AWSLambdaVPCAccessExecutionRole would add account-wide logs).
            role.add_managed_policy(
                iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AWSLambdaENIManagementAccess")
            )
            acknowledge(
                role,
                "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaENIManagementAccess]",
                "The AWS-managed policy with the network-interface actions Lambda needs to attach the function "
                "to the VPC (and nothing else); those EC2 actions cannot be scoped to resources.",
            )
        if database is not None:
            database.grant_connect(function)
        acknowledge(
            function,
            "L1",
            "docs/deployment.md pins Lambda to Python 3.12: the dependency layer is built for CPython 3.12 wheels.",
        )
        return function


_RETENTIONS = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    731: logs.RetentionDays.TWO_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
}


def log_retention(days: int) -> logs.RetentionDays:
    try:
        return _RETENTIONS[days]
    except KeyError:
        raise ValueError(f"log retention must be one of {sorted(_RETENTIONS)} days, not {days}") from None
