"""One Quire stack per environment, composed of one construct per capability."""

import aws_cdk as cdk
from constructs import Construct

from infra.constructs.storage import Storage
from infra.environments import EnvironmentSettings


class QuireStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: EnvironmentSettings, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        cdk.Tags.of(self).add("project", "quire")
        cdk.Tags.of(self).add("environment", settings.name)
        self.storage = Storage(self, "Storage", settings=settings)
        self._acknowledge_cdk_internal_handlers()
        cdk.CfnOutput(self, "OriginalsBucketName", value=self.storage.originals.bucket_name)

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
