"""Migrations: a deploy-time custom resource that brings the schema up to date before anything uses it.

Its Lambda (functions/migrate/handler.py) runs migrations.runner.apply_migrations as the owner, directly
against the cluster writer over TLS, with the owner's credentials read from the one secret it may read.
The resource carries a digest of migrations/*.sql, so a changed or added migration runs on the next
deploy; a MigrationError fails the deployment with its message. Deleting the resource drops nothing.
"""

import hashlib
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.constructs.database import Database
from infra.constructs.functions import EMBEDDING_DIMENSION, LambdaPackage, acknowledge, log_retention
from infra.environments import EnvironmentSettings

# Read as files: infra never imports runtime code (tests/unit/test_layering.py).
MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def migrations_digest(directory: Path = MIGRATIONS_DIR) -> str:
    """SHA-256 over every migration's file name and bytes (its SQL and any Python step beside it), in order: it changes
    whenever one does."""
    digest = hashlib.sha256()
    for path in sorted([*directory.glob("*.sql"), *directory.glob("[0-9][0-9][0-9][0-9]_*.py")]):
        digest.update(path.name.encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


class Migrations(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        database: Database,
        package: LambdaPackage,
    ) -> None:
        super().__init__(scope, construct_id)
        removal = cdk.RemovalPolicy.RETAIN if settings.retain_data else cdk.RemovalPolicy.DESTROY
        self.function = package.function(
            self,
            "Migrate",
            handler="functions.migrate.handler.handler",
            description="Applies the SQL migrations as the schema owner at deploy time",
            # An auto-paused dev cluster takes a while to resume before the first statement runs.
            timeout=cdk.Duration.minutes(15),
            memory_size=512,
            vpc=database.vpc,
            security_groups=[database.owner_security_group],
            environment=database.owner_connection_environment(),
        )
        database.grant_owner_secret_read(self.function)

        # The framework only invokes the function above and answers CloudFormation: it stays outside the VPC
        # (it needs neither the database nor anything the endpoints serve), with its own role and log group.
        framework_role = iam.Role(
            self,
            "ProviderRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Quire {settings.name}: CDK provider framework for the migrations custom resource",
        )
        framework_logs = logs.LogGroup(
            self, "ProviderLogs", retention=log_retention(settings.log_retention_days), removal_policy=removal
        )
        framework_logs.grant_write(framework_role)
        self.provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=self.function,
            framework_on_event_role=framework_role,
            log_group=framework_logs,
        )
        self.resource = cdk.CustomResource(
            self,
            "Schema",
            service_token=self.provider.service_token,
            resource_type="Custom::QuireMigrations",
            properties={
                # Any change here makes CloudFormation send an Update, which migrates again.
                "MigrationsDigest": migrations_digest(),
                # A changed dimension must reach the runner, which refuses it with a clear message.
                "EmbeddingDimension": str(EMBEDDING_DIMENSION),
            },
        )
        # The writer must be up, and the network open to it and to Secrets Manager, before the first run.
        self.resource.node.add_dependency(database)

        stack = cdk.Stack.of(self)
        function_logical_id = stack.resolve(stack.get_logical_id(self.function.node.default_child))  # type: ignore[arg-type]
        acknowledge(
            framework_role,
            f"IAM5[Resource::<{function_logical_id}.Arn>:*]",
            "Added by the CDK provider framework: invoke any version or alias of the migrations function, "
            "and only that function.",
        )
