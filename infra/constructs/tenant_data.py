"""Tenant-scoped data access: the role a function's code assumes, once per tenant, to touch that tenant's objects.

A function's own role holds no grant on any tenant's objects (reconcile's excepted: the sweep walks every
tenant). Its code calls sts:AssumeRole on its companion role with the session tag `tenant=<id>`
(shared/adapters/aws/tenant_credentials.py), and that role's policies name objects only through
`${aws:PrincipalTag/tenant}`: a session for tenant A is refused tenant B's keys by IAM itself, whatever key the
code built. One companion role per function keeps each function's own least privilege (the extract step still
cannot write originals; the API deletes only originals, the versions a deletion withdraws in the request).

What this does not bound: the function's own credentials may assume its companion role for any tenant, so
code that runs with them (rather than with a tenant session) can still pick a tenant. It does bound code that
is handed only a tenant's session.
"""

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.constructs.storage import Storage

# The session tag that names the tenant (shared/adapters/aws/tenant_credentials.py's TENANT_TAG).
TENANT_TAG = "tenant"
TENANT = f"${{aws:PrincipalTag/{TENANT_TAG}}}"
# Where the function learns which role to assume (shared/config.py's tenant_data_role_arn).
ROLE_ARN_VARIABLE = "QUIRE_TENANT_DATA_ROLE_ARN"
# Role chaining (a Lambda role assuming another) caps a session at one hour, whatever the role allows.
SESSION_HOURS = 1


def tenant_scoped(prefix: str) -> str:
    """A prefix of the originals bucket narrowed to the session's tenant: every tenant key is
    `tenants/{tenant}/…` (shared/domain/uploads.storage_key), `derived/tenants/{tenant}/…` (documents, work,
    artifacts, replacements) or, for the pages Textract reads, `ocr-staging/tenants/{tenant}/…` (a staged copy
    lives under its original's key, so deleting the original finds it: shared/domain/uploads.ocr_staging_prefix)."""
    for wildcard in ("tenants/*/", "tenants/"):
        head, found, tail = prefix.partition(wildcard)
        if found:
            return f"{head}tenants/{TENANT}/{tail}"
    if prefix == "derived/":
        return f"derived/tenants/{TENANT}/"
    if prefix == "ocr-staging/":
        return f"ocr-staging/tenants/{TENANT}/"
    raise ValueError(f"{prefix!r} names no tenant's objects: only tenants/, derived/ and ocr-staging/ do")


class TenantDataAccess(Construct):
    """`function`'s companion role: assumable by that function's role only, only with a `tenant` session tag
    (and no other tag), granting objects under the tagged tenant's prefixes only."""

    def __init__(self, scope: Construct, construct_id: str, *, storage: Storage, function: lambda_.Function) -> None:
        super().__init__(scope, construct_id)
        self._storage = storage
        function_role = function.role
        assert function_role is not None, "every Quire function has its own role (LambdaPackage.function)"
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.PrincipalWithConditions(
                iam.SessionTagsPrincipal(iam.ArnPrincipal(function_role.role_arn)),
                {
                    # A session names its tenant, and a tenant id never holds a slash (uploads._KEY): a tag value
                    # like "a/files" cannot stretch the prefix.
                    "StringLike": {f"aws:RequestTag/{TENANT_TAG}": "?*"},
                    "StringNotLike": {f"aws:RequestTag/{TENANT_TAG}": "*/*"},
                    "ForAllValues:StringEquals": {"aws:TagKeys": [TENANT_TAG]},
                },
            ),
            max_session_duration=cdk.Duration.hours(SESSION_HOURS),
            # "Api/Function", "Pipeline/ExtractFunction": the function this role serves.
            description=f"Quire: {'/'.join(function.node.path.split('/')[1:])}'s access to one tenant's objects "
            f"(session tag {TENANT_TAG})",
        )
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["sts:AssumeRole", "sts:TagSession"], resources=[self.role.role_arn])
        )
        function.add_environment(ROLE_ARN_VARIABLE, self.role.role_arn)

    def grant_objects(self, actions: Sequence[str], prefixes: Sequence[str]) -> None:
        """`actions` on the objects under `prefixes`, each narrowed to the session's tenant."""
        self._storage.grant_objects(self.role, actions, [tenant_scoped(prefix) for prefix in prefixes])

    def grant_listing(self, prefixes: Sequence[str]) -> None:
        self._storage.grant_listing(self.role, [tenant_scoped(prefix) for prefix in prefixes])

    def grant_missing_is_not_found(self) -> None:
        self._storage.grant_missing_is_not_found(self.role)

    def grant(self, statement: iam.PolicyStatement) -> None:
        """Something else the tenant's session calls (Textract, which reads S3 as its caller)."""
        self.role.add_to_policy(statement)
