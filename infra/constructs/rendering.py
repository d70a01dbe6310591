"""The render function: exports, conversions and PDF tools, rendered off the request path.

The API (and the reconcile sweep) hand it one export at a time with an asynchronous invocation: Lambda queues
the event, retries a failed run twice, and sends what still fails to a dead-letter queue; the sweep hands
anything left pending to it again. It renders in a child process bounded in time and memory (the function's
timeout is above the render's own), in the fonts the layer carries.

Its grants are what a render reads and writes, and nothing else: artifact content and extracted documents (to
render), stored originals (the PDF tools' inputs), and the rendered file's own key under tenants/ (written once,
as a new file version). It cannot delete anything, call a model, or start a workflow.
"""

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.constructs.database import Database
from infra.constructs.functions import LambdaPackage, acknowledge
from infra.constructs.storage import ORIGINALS_PREFIX, READ_OBJECTS, WRITE_OBJECTS, Storage
from infra.constructs.tenant_data import TenantDataAccess
from infra.environments import EnvironmentSettings

RENDER_HANDLER = "functions.render.handler.handler"
# shared/domain/artifacts.py's artifact_content_key and shared/domain/uploads.py's document_key.
ARTIFACT_CONTENT_PREFIX = "derived/tenants/*/artifacts/"
DOCUMENTS_PREFIX = "derived/tenants/*/files/"
# A rendered file is a file version: tenants/{tenant}/files/{file}/versions/{version}.
OUTPUT_PREFIX = "tenants/*/files/"
# The render's own wall-clock bound (QUIRE_RENDER_TIMEOUT_SECONDS); the function stops a minute later.
RENDER_TIMEOUT_SECONDS = 120
# A render child may use 2 GiB of its own: the function has room for it and for the parent.
RENDER_MEMORY_MB = 3008


class Rendering(Construct):
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
        removal = cdk.RemovalPolicy.RETAIN if settings.retain_data else cdk.RemovalPolicy.DESTROY
        self.failures = sqs.Queue(
            self,
            "RenderFailures",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=cdk.Duration.days(14),
            removal_policy=removal,
        )
        acknowledge(self.failures, "SQS3", "This queue is itself a dead-letter queue: renders that failed twice.")
        self.function = package.function(
            self,
            "Function",
            handler=RENDER_HANDLER,
            description="renders exports, conversions and PDF tools into new files",
            timeout=cdk.Duration.seconds(RENDER_TIMEOUT_SECONDS + 60),
            memory_size=RENDER_MEMORY_MB,
            reserved_concurrency=settings.reserved_concurrency.render if settings.reserved_concurrency else None,
            environment={
                "QUIRE_BUCKET": storage.originals.bucket_name,
                "QUIRE_RENDER_TIMEOUT_SECONDS": str(RENDER_TIMEOUT_SECONDS),
            },
            database=database,
        )
        self.function.configure_async_invoke(
            retry_attempts=2,
            max_event_age=cdk.Duration.hours(1),
            on_failure=destinations.SqsDestination(self.failures),
        )
        # On its tenant data role: a render reads and writes one tenant's objects, the job's.
        data = TenantDataAccess(self, "TenantData", storage=storage, function=self.function)
        data.grant_objects(("s3:GetObject",), (ARTIFACT_CONTENT_PREFIX, DOCUMENTS_PREFIX))
        data.grant_objects(READ_OBJECTS, (ORIGINALS_PREFIX,))
        data.grant_objects(WRITE_OBJECTS, (OUTPUT_PREFIX,))
        # "The input was deleted" must read as a 404, not a 403.
        data.grant_missing_is_not_found()

    def grant_submit(self, function: lambda_.Function) -> None:
        """`function` may hand renders to this one (and knows its name): this function only, no version of it."""
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.function.function_arn])
        )
        function.add_environment("QUIRE_RENDER_FUNCTION_NAME", self.function.function_name)
