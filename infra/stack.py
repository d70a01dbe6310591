"""One Quire stack per environment, composed of one construct per capability."""

from pathlib import Path

import aws_cdk as cdk
from constructs import Construct

from infra.constructs.api import Api
from infra.constructs.console import CONSOLE_DIR, Console
from infra.constructs.database import Database
from infra.constructs.events import Events
from infra.constructs.functions import LambdaPackage
from infra.constructs.mcp import McpServer
from infra.constructs.migrations import Migrations
from infra.constructs.observability import Observability
from infra.constructs.pipeline import Pipeline
from infra.constructs.rendering import Rendering
from infra.constructs.storage import Storage
from infra.environments import EnvironmentSettings


class QuireStack(cdk.Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        code_dir: Path,
        layer_dir: Path,
        console_dir: Path = CONSOLE_DIR,
        **kwargs: object,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        # CloudFormation's schema has no Tags on a proxy's target group (the CDK would add them anyway).
        untaggable = ["AWS::RDS::DBProxyTargetGroup"]
        cdk.Tags.of(self).add("project", "quire", exclude_resource_types=untaggable)
        cdk.Tags.of(self).add("environment", settings.name, exclude_resource_types=untaggable)
        self.storage = Storage(self, "Storage", settings=settings)
        # The console's distribution before what admits its origin (its files and config.json come last).
        self.console = Console(
            self, "Console", settings=settings, access_logs=self.storage.access_logs, source_dir=console_dir
        )
        self.storage.allow_browser_origin(self.console.origin)
        self.package = LambdaPackage(self, "Package", settings=settings, code_dir=code_dir, layer_dir=layer_dir)
        self.database = Database(self, "Database", settings=settings)
        self.migrations = Migrations(
            self, "Migrations", settings=settings, database=self.database, package=self.package
        )
        self.rendering = Rendering(
            self, "Rendering", settings=settings, package=self.package, storage=self.storage, database=self.database
        )
        self.rendering.node.add_dependency(self.migrations)
        self.pipeline = Pipeline(
            self, "Pipeline", settings=settings, package=self.package, storage=self.storage, database=self.database
        )
        # Nothing runs against a schema that is not there yet.
        self.pipeline.node.add_dependency(self.migrations)
        self.api = Api(
            self,
            "Api",
            settings=settings,
            package=self.package,
            storage=self.storage,
            database=self.database,
            state_machine=self.pipeline.state_machine,
            console_origin=self.console.origin,
        )
        self.api.node.add_dependency(self.migrations)
        self.mcp = McpServer(
            self,
            "Mcp",
            settings=settings,
            package=self.package,
            storage=self.storage,
            database=self.database,
            state_machine=self.pipeline.state_machine,
            api=self.api,
        )
        self.mcp.node.add_dependency(self.migrations)
        self.events = Events(self, "Events", settings=settings, package=self.package, database=self.database)
        self.events.node.add_dependency(self.migrations)
        # The API's replays and tests wake the deliverer.
        self.events.grant_wake(self.api.function)
        # The API and the MCP server's tools hand exports to the render function; the sweep hands it what was
        # left pending.
        self.rendering.grant_submit(self.api.function)
        self.rendering.grant_submit(self.mcp.function)
        self.rendering.grant_submit(self.pipeline.reconcile)
        self.console.publish(
            api_base=self.api.http_api.api_endpoint,
            uploads_bucket=self.storage.originals,
            sign_in_domain=self.api.domain.base_url(),
            client_id=self.api.user_pool_client.user_pool_client_id,
            scopes=["openid", "email", self.api.api_scope],
        )
        self.observability = Observability(
            self,
            "Observability",
            settings=settings,
            state_machine=self.pipeline.state_machine,
            queues=[*self.pipeline.dead_letter_queues, self.rendering.failures, *self.events.queues],
            functions=[
                *self.pipeline.functions,
                self.api.function,
                self.api.token_claims_function,
                self.mcp.function,
                self.mcp.signing_keys_function,
                self.migrations.function,
                self.rendering.function,
                *self.events.functions,
            ],
            logged_errors=self.events.logged_errors,
        )
        self._acknowledge_cdk_internal_handlers()
        cdk.CfnOutput(self, "OriginalsBucketName", value=self.storage.originals.bucket_name)
        cdk.CfnOutput(self, "StateMachineArn", value=self.pipeline.state_machine.state_machine_arn)

    def _acknowledge_cdk_internal_handlers(self) -> None:
        """Findings on Lambda functions the CDK itself adds, acknowledged there and only there."""
        for child in self.node.children:
            if child.node.id.startswith("BucketNotificationsHandler"):
                cdk.Validations.of(child).acknowledge(
                    cdk.Acknowledgment(
                        id="AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
                        "service-role/AWSLambdaBasicExecutionRole]",
                        reason="The CDK's own deploy-time handler that switches on S3 -> EventBridge notifications; "
                        "the managed policy only lets it write its logs.",
                    )
                )
