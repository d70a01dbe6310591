"""The AWS SDK clients the adapters are built with, each built when first asked for, and the tenant-scoped
routing: on AWS with a tenant data role, a client whose every call is made with the acting tenant's session."""

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar, cast

from shared.config import Settings
from shared.tenancy import acting_tenant

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from shared.adapters.aws.tenant_credentials import TenantCredentials

AwsClient = TypeVar("AwsClient")


class AwsClients:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def rds(self) -> object:
        import boto3

        # Only signs IAM authentication tokens (locally, no request is sent).
        return boto3.client("rds", region_name=self.settings.region)

    def sts(self) -> object:
        import boto3

        # The regional endpoint, which the VPC's STS interface endpoint answers.
        region = self.settings.region
        return boto3.client("sts", region_name=region, endpoint_url=f"https://sts.{region}.amazonaws.com")

    def lambda_(self) -> object:
        import boto3

        return boto3.client("lambda", region_name=self.settings.region)

    def events(self) -> object:
        import boto3

        return boto3.client("events", region_name=self.settings.region)

    def sqs(self) -> object:
        import boto3

        return boto3.client("sqs", region_name=self.settings.region)

    def stepfunctions(self) -> object:
        import boto3

        return boto3.client("stepfunctions", region_name=self.settings.region)

    def s3(
        self,
        aws_access_key_id: str | None = None,
        aws_secret_access_key: str | None = None,
        aws_session_token: str | None = None,
    ) -> "S3Client":
        import boto3
        from botocore.config import Config

        local = self.settings.s3_endpoint_url
        return boto3.client(
            "s3",
            region_name=self.settings.region,
            # The acting tenant's session when tenant-scoped; else (all None) the process's own credentials.
            aws_access_key_id=aws_access_key_id,
            aws_secret_access_key=aws_secret_access_key,
            aws_session_token=aws_session_token,
            # On AWS the regional endpoint, named: left to itself botocore signs presigned POSTs and GETs for
            # the global `bucket.s3.amazonaws.com`, which newer regions refuse and others answer with a
            # redirect a browser's upload (and a signature over the host) does not survive.
            endpoint_url=local or f"https://s3.{self.settings.region}.amazonaws.com",
            # SigV4 presigned URLs (X-Amz-Expires); path style so a local endpoint needs no DNS per bucket.
            config=Config(
                signature_version="s3v4",
                retries={"mode": "standard"},
                s3={"addressing_style": "path" if local else "virtual"},
            ),
        )

    def tenant_scoped(self, build: Callable[..., AwsClient]) -> Callable[[], AwsClient]:
        """`build` itself, or on AWS with a tenant data role, a factory of a client that makes each call with
        the acting tenant's session (`build` given that session's credentials)."""
        if self.settings.runtime == "local" or self.settings.tenant_data_role_arn is None:
            return build
        from shared.adapters.aws.tenant_credentials import TenantClients, TenantRoutedClient

        clients = TenantClients(
            self._tenant_credentials, lambda session: build(**session.client_credentials()), acting_tenant
        )
        # It answers every attribute the client would, with the acting tenant's client's.
        return lambda: cast(AwsClient, TenantRoutedClient(clients))

    @cached_property
    def _tenant_credentials(self) -> "TenantCredentials":
        from shared.adapters.aws.tenant_credentials import TenantCredentials

        assert self.settings.tenant_data_role_arn is not None
        return TenantCredentials(
            self.sts, self.settings.tenant_data_role_arn, session_name=f"quire-{self.settings.environment}"
        )
