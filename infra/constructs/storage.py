"""Storage: the versioned originals bucket, private, encrypted, TLS-only, announcing uploads to EventBridge."""

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.environments import EnvironmentSettings

# Where the Textract adapter stages copies of the pages a job reads (its `staging_prefix`).
OCR_STAGING_PREFIX = "ocr-staging/"
# Tenants' originals (shared/domain/uploads.storage_key) and what is derived from them (documents, work).
ORIGINALS_PREFIX = "tenants/"
DERIVED_PREFIX = "derived/"

READ_OBJECTS = ("s3:GetObject", "s3:GetObjectVersion")
WRITE_OBJECTS = ("s3:PutObject",)
DELETE_OBJECTS = ("s3:DeleteObject", "s3:DeleteObjectVersion")


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

    def grant_objects(self, grantee: iam.IGrantable, actions: Sequence[str], prefixes: Sequence[str]) -> None:
        """Exactly `actions` (named, never wildcards) on the objects under `prefixes` of the originals bucket."""
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=list(actions),
            resource_arns=[self.originals.arn_for_objects(f"{prefix}*") for prefix in prefixes],
        )
        _acknowledge_prefixes(grantee, self.originals, prefixes)

    def grant_missing_is_not_found(self, grantee: iam.IGrantable) -> None:
        """S3 answers a read of a missing key with 404 only to a caller that may list the bucket, and 403 to
        anyone else, so "the object is not there" (which uploads, reconciliation and reads act on) would look
        like a permission error. Without a prefix condition: a HEAD carries no prefix for one to match. It
        lists key names only (ids, never content)."""
        iam.Grant.add_to_principal(
            grantee=grantee, actions=["s3:ListBucket"], resource_arns=[self.originals.bucket_arn]
        )

    def grant_listing(self, grantee: iam.IGrantable, prefixes: Sequence[str]) -> None:
        """Listing (object versions included) of the keys under `prefixes` only."""
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["s3:ListBucket", "s3:ListBucketVersions"],
            resource_arns=[self.originals.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{prefix}*" for prefix in prefixes]}},
        )


def _acknowledge_prefixes(grantee: iam.IGrantable, bucket: s3.IBucket, prefixes: Sequence[str]) -> None:
    """Objects under a prefix can only be named with a wildcard: acknowledged per prefix, on the role only."""
    role = grantee.grant_principal
    if not isinstance(role, iam.Role):
        return
    stack = cdk.Stack.of(role)
    bucket_id = stack.get_logical_id(bucket.node.default_child)  # type: ignore[arg-type]
    for prefix in prefixes:
        cdk.Validations.of(role).acknowledge(
            cdk.Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/{prefix}*]",
                reason=f"Keys under {prefix} are generated per tenant, file and version: the prefix is the narrowest "
                "name for them, and the actions are listed one by one.",
            )
        )
