"""Storage: the versioned originals bucket, private, encrypted, TLS-only, announcing uploads to EventBridge."""

from collections.abc import Sequence

import aws_cdk as cdk
import jsii
from aws_cdk import aws_guardduty as guardduty
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
TAG_OBJECTS = ("s3:PutObjectTagging", "s3:PutObjectVersionTagging")
# Upload sessions (shared/adapters/aws/s3_multipart.py): s3:PutObject covers beginning, each part and completing;
# what S3 holds (to resume) and aborting are their own actions.
MULTIPART_OBJECTS = ("s3:ListMultipartUploadParts", "s3:AbortMultipartUpload")
# A deletion tags the exact version it deletes with this before it returns; from then on nobody reads it, even
# with a presigned URL issued earlier (the bucket policy below).
DELETED_TAG_KEY = "quire:deleted"
DELETED_TAG_VALUE = "true"
# Where GuardDuty Malware Protection writes the test object it checks its role with.
MALWARE_VALIDATION_OBJECT = "malware-protection-resource-validation-object"


class Storage(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: EnvironmentSettings) -> None:
        super().__init__(scope, construct_id)
        removal = cdk.RemovalPolicy.RETAIN if settings.retain_data else cdk.RemovalPolicy.DESTROY
        # The environment's origins, and any added by allow_browser_origin (the console's, whose distribution
        # logs into the access logs bucket below, so it can only be known after this construct).
        self._browser_origins = list(settings.cors_allowed_origins)
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
                    # POST: the single presigned POST; PUT: each part of an upload session, whose ETag the
                    # browser must read to complete it.
                    allowed_methods=[s3.HttpMethods.POST, s3.HttpMethods.PUT],
                    allowed_origins=cdk.Lazy.list(_Listed(self._browser_origins)),
                    allowed_headers=["*"],
                    exposed_headers=["ETag"],
                    max_age=3000,
                )
            ],
            lifecycle_rules=[
                s3.LifecycleRule(
                    # An upload session lasts a day (shared/domain/upload_sessions.SESSION_LIFETIME).
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
        self._deleted_versions_stay_deleted()
        self.malware_protection = self._malware_protection() if settings.malware_scanning == "guardduty" else None

    def allow_browser_origin(self, origin: str) -> None:
        """Admit browser POSTs (the presigned upload) from `origin` too, in the one CORS rule."""
        self._browser_origins.append(origin)

    def _deleted_versions_stay_deleted(self) -> None:
        """Every principal, this account's roles included, is refused a version tagged deleted, and that tag
        cannot be taken off again (a retagging that drops it, or removing the tags)."""
        deleted = {f"s3:ExistingObjectTag/{DELETED_TAG_KEY}": DELETED_TAG_VALUE}
        for actions, conditions in (
            (READ_OBJECTS, {"StringEquals": deleted}),
            (
                TAG_OBJECTS,
                {
                    "StringEquals": deleted,
                    "StringNotEquals": {f"s3:RequestObjectTag/{DELETED_TAG_KEY}": DELETED_TAG_VALUE},
                },
            ),
            (("s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging"), {"StringEquals": deleted}),
        ):
            self.originals.add_to_resource_policy(
                iam.PolicyStatement(
                    effect=iam.Effect.DENY,
                    principals=[iam.AnyPrincipal()],
                    actions=list(actions),
                    resources=[self.originals.arn_for_objects("*")],
                    conditions=conditions,
                )
            )

    def _malware_protection(self) -> guardduty.CfnMalwareProtectionPlan:
        """GuardDuty Malware Protection for S3 on the originals: each upload under tenants/ is scanned, tagged
        GuardDutyMalwareScanStatus, and its result published to EventBridge (the verdict rule in pipeline.py).
        The service role is what GuardDuty's documentation asks for, on this bucket and prefix only."""
        stack = cdk.Stack.of(self)
        managed_rules = stack.format_arn(
            service="events", resource="rule", resource_name="DO-NOT-DELETE-AmazonGuardDutyMalwareProtectionS3*"
        )
        role = iam.Role(
            self,
            "MalwareProtectionRole",
            assumed_by=iam.ServicePrincipal(
                "malware-protection-plan.guardduty.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
            ),
            description="GuardDuty Malware Protection: scans and tags uploads to the originals bucket",
        )
        for actions, resources, conditions in (
            # The EventBridge rule GuardDuty manages to hear of uploads.
            (
                ("events:PutRule", "events:DeleteRule", "events:PutTargets", "events:RemoveTargets"),
                [managed_rules],
                {"StringLike": {"events:ManagedBy": "malware-protection-plan.guardduty.amazonaws.com"}},
            ),
            (("events:DescribeRule", "events:ListTargetsByRule"), [managed_rules], None),
            (
                ("s3:PutBucketNotification", "s3:GetBucketNotification", "s3:ListBucket"),
                [self.originals.bucket_arn],
                None,
            ),
            (
                (
                    "s3:GetObject",
                    "s3:GetObjectVersion",
                    "s3:GetObjectTagging",
                    "s3:GetObjectVersionTagging",
                    *TAG_OBJECTS,
                ),
                [self.originals.arn_for_objects(f"{ORIGINALS_PREFIX}*")],
                None,
            ),
            (("s3:PutObject",), [self.originals.arn_for_objects(MALWARE_VALIDATION_OBJECT)], None),
        ):
            role.add_to_policy(iam.PolicyStatement(actions=list(actions), resources=resources, conditions=conditions))
        _acknowledge_prefixes(role, self.originals, (ORIGINALS_PREFIX,))
        cdk.Validations.of(role).acknowledge(
            cdk.Acknowledgment(
                id="AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:events:<AWS::Region>:"
                "<AWS::AccountId>:rule/DO-NOT-DELETE-AmazonGuardDutyMalwareProtectionS3*]",
                reason="GuardDuty names the EventBridge rule it manages with this prefix and a generated suffix; "
                "changes to it are further limited to rules GuardDuty manages (events:ManagedBy).",
            )
        )
        plan = guardduty.CfnMalwareProtectionPlan(
            self,
            "MalwareProtection",
            role=role.role_arn,
            protected_resource=guardduty.CfnMalwareProtectionPlan.CFNProtectedResourceProperty(
                s3_bucket=guardduty.CfnMalwareProtectionPlan.S3BucketProperty(
                    bucket_name=self.originals.bucket_name, object_prefixes=[ORIGINALS_PREFIX]
                )
            ),
            # The verdict as a tag too: a read can be checked against it, and reconciliation can find it.
            actions=guardduty.CfnMalwareProtectionPlan.CFNActionsProperty(
                tagging=guardduty.CfnMalwareProtectionPlan.CFNTaggingProperty(status="ENABLED")
            ),
        )
        # GuardDuty validates the role when the plan is created: its policy must exist by then.
        plan.node.add_dependency(role)
        return plan

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


@jsii.implements(cdk.IStableListProducer)
class _Listed:
    """cdk.IStableListProducer: the list as it stands when the template is rendered."""

    def __init__(self, items: list[str]) -> None:
        self._items = items

    def produce(self) -> list[str]:
        return list(self._items)


def _acknowledge_prefixes(grantee: iam.IGrantable, bucket: s3.IBucket, prefixes: Sequence[str]) -> None:
    """Objects under a prefix can only be named with a wildcard: acknowledged per prefix, on the role only."""
    role = grantee.grant_principal
    if not isinstance(role, iam.Role):
        return
    stack = cdk.Stack.of(role)
    bucket_id = stack.get_logical_id(bucket.node.default_child)  # type: ignore[arg-type]
    for prefix in prefixes:
        # cdk-nag names a policy variable ${aws:PrincipalTag/tenant} as <aws:PrincipalTag/tenant>.
        named = prefix.replace("${", "<").replace("}", ">")
        cdk.Validations.of(role).acknowledge(
            cdk.Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/{named}*]",
                reason=f"Keys under {prefix} are generated per tenant, file and version: the prefix is the narrowest "
                "name for them, and the actions are listed one by one.",
            )
        )
