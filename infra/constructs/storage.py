"""Storage: the versioned originals bucket, private, encrypted, TLS-only, announcing uploads to EventBridge."""

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.environments import EnvironmentSettings

# Where the Textract adapter stages copies of the pages a job reads (its `staging_prefix`).
OCR_STAGING_PREFIX = "ocr-staging/"


class Storage(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: EnvironmentSettings) -> None:
        super().__init__(scope, construct_id)
        removal = cdk.RemovalPolicy.RETAIN if settings.retain_data else cdk.RemovalPolicy.DESTROY
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[s3.LifecycleRule(expiration=cdk.Duration.days(settings.log_retention_days))],
            removal_policy=removal,
            auto_delete_objects=not settings.retain_data,
        )
        self.originals = s3.Bucket(
            self,
            "Originals",
            # Originals are immutable: every upload is a new version, older ones stay readable by id.
            versioned=True,
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            # "Object Created" goes to EventBridge, which starts the pipeline.
            event_bridge_enabled=True,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="originals/",
            cors=[
                s3.CorsRule(
                    allowed_methods=[s3.HttpMethods.POST],
                    allowed_origins=list(settings.cors_allowed_origins),
                    allowed_headers=["*"],
                    max_age=3000,
                )
            ],
            lifecycle_rules=[
                s3.LifecycleRule(
                    abort_incomplete_multipart_upload_after=cdk.Duration.days(1),
                    noncurrent_version_expiration=cdk.Duration.days(settings.noncurrent_version_retention_days),
                ),
                # Copies of the pages a Textract job reads: removed when the job is collected or abandoned,
                # and by this rule within a day whatever happened to the job.
                s3.LifecycleRule(
                    prefix=OCR_STAGING_PREFIX,
                    expiration=cdk.Duration.days(1),
                    noncurrent_version_expiration=cdk.Duration.days(1),
                ),
            ],
            removal_policy=removal,
            auto_delete_objects=not settings.retain_data,
        )
