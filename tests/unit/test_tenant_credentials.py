"""Tenant-scoped credentials: one STS session per tenant (moto's STS), tagged with it, kept while it can still
carry a presigned URL's whole lifetime; every S3 call made with the acting tenant's session (moto's S3), and
none made when no tenant is acting.

moto does not resolve `${aws:PrincipalTag/tenant}` in policies (tests/infra/policy_evaluation.py says how that
was measured), so that a tenant's session is refused another tenant's keys is shown on the synthesized policies
in tests/infra/test_tenant_isolation.py; here, that each call carries the right tenant's session.
"""

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import boto3
import pytest
from moto import mock_aws

from shared.adapters.aws.s3_content_store import S3ContentStore
from shared.adapters.aws.tenant_credentials import (
    KEEP_FOR,
    SESSION_DURATION,
    NoActingTenant,
    TenantClients,
    TenantCredentials,
    TenantRoutedClient,
)
from shared.bootstrap import Container, acting_for_owner_of, acting_for_tenant, acting_tenant, workflow_step
from shared.config import Settings
from shared.domain.steps import Claimed, StepInput
from shared.domain.uploads import storage_key
from shared.ports import MAX_SIGNED_READ_LIFETIME
from tests.conftest import load_event

REGION = "us-east-1"
ROLE_ARN = "arn:aws:iam::123456789012:role/QuireTenantData"
BUCKET = "quire-tenant-scoping"


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def aws() -> Iterator[None]:
    """moto's STS and S3, with its stand-in keys as the process's own credentials (the function's role)."""
    with mock_aws():
        yield


class AssumeRoleCalls:
    """The AssumeRole requests an STS client sends, as their parameters."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.client = boto3.client("sts", region_name=REGION)
        self.client.meta.events.register(
            "provide-client-params.sts.AssumeRole", lambda params, **_: self.calls.append(dict(params))
        )


def credentials(calls: AssumeRoleCalls, clock: Clock) -> TenantCredentials:
    return TenantCredentials(lambda: calls.client, ROLE_ARN, session_name="quire-test", clock=clock)


def test_a_session_is_assumed_per_tenant_tagged_with_it_and_named_for_it(aws: None) -> None:
    calls = AssumeRoleCalls()
    sessions = credentials(calls, Clock())

    acme, globex = sessions.session("acme"), sessions.session("globex")

    assert [call["Tags"] for call in calls.calls] == [
        [{"Key": "tenant", "Value": "acme"}],
        [{"Key": "tenant", "Value": "globex"}],
    ]
    assert {call["RoleArn"] for call in calls.calls} == {ROLE_ARN}
    assert [call["RoleSessionName"] for call in calls.calls] == ["quire-test-acme", "quire-test-globex"]
    assert {call["DurationSeconds"] for call in calls.calls} == {3600}
    assert (acme.tenant_id, globex.tenant_id) == ("acme", "globex")
    assert acme.access_key_id != globex.access_key_id and acme.session_token != globex.session_token


def test_a_tenants_session_is_reused_while_it_can_outlive_any_presigned_url_and_renewed_after(aws: None) -> None:
    calls = AssumeRoleCalls()
    clock = Clock()
    sessions = credentials(calls, clock)
    first = sessions.session("acme")
    # moto's sessions end DurationSeconds after they start, as STS's do.
    assert first.expires_at - clock.now == pytest.approx(SESSION_DURATION, abs=timedelta(seconds=5))

    clock.now = first.expires_at - KEEP_FOR - timedelta(seconds=1)
    assert sessions.session("acme") is first and len(calls.calls) == 1

    # Now a URL signed with it could die before its own 15 minutes are up: a new session.
    clock.now = first.expires_at - KEEP_FOR + timedelta(seconds=1)
    renewed = sessions.session("acme")
    assert renewed is not first and len(calls.calls) == 2
    assert KEEP_FOR > MAX_SIGNED_READ_LIFETIME


@pytest.mark.parametrize("tenant", ["acme/files", "", "acme*", "../globex", "a" * 65])
def test_no_session_is_made_for_what_is_not_a_tenant_id(aws: None, tenant: str) -> None:
    calls = AssumeRoleCalls()
    with pytest.raises(ValueError, match="not a tenant id"):
        credentials(calls, Clock()).session(tenant)
    assert calls.calls == []


def test_a_session_that_can_never_carry_a_url_is_refused_when_configured() -> None:
    with pytest.raises(ValueError, match="shorten keep_for"):
        TenantCredentials(lambda: None, ROLE_ARN, duration=timedelta(minutes=15))


def test_the_routed_client_calls_with_the_acting_tenants_client_and_refuses_with_none(aws: None) -> None:
    calls = AssumeRoleCalls()
    sessions = credentials(calls, Clock())
    clients = TenantClients(
        sessions,
        lambda session: boto3.client(
            "s3",
            region_name=REGION,
            aws_access_key_id=session.access_key_id,
            aws_secret_access_key=session.secret_access_key,
            aws_session_token=session.session_token,
        ),
        acting_tenant,
    )
    routed: Any = TenantRoutedClient(clients)

    with pytest.raises(NoActingTenant, match="acting_for_tenant"):
        routed.list_buckets()
    with acting_for_tenant("acme"):
        acme_key = routed._request_signer._credentials.access_key
        assert clients.for_acting_tenant() is clients.for_tenant("acme")
    with acting_for_tenant("globex"):
        globex_key = routed._request_signer._credentials.access_key
    assert acme_key == sessions.session("acme").access_key_id
    assert globex_key == sessions.session("globex").access_key_id != acme_key
    assert acting_tenant() is None


def aws_container() -> Container:
    return Container(Settings(runtime="aws", bucket=BUCKET, region=REGION, tenant_data_role_arn=ROLE_ARN))


def signing_key(container: Container) -> str:
    """The access key the container's S3 content store signs its requests with (for the acting tenant)."""
    store = container.content
    assert isinstance(store, S3ContentStore)
    client: Any = store.client
    return str(client._request_signer._credentials.access_key)


def test_on_aws_the_content_store_reads_and_writes_with_the_acting_tenants_session(aws: None) -> None:
    boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
    container = aws_container()
    key = storage_key("acme", uuid4(), uuid4())
    signed_with: list[str] = []

    with acting_for_tenant("acme"):
        stored = container.content.put(key, b"acme's bytes", content_type="text/plain")
        assert container.content.get(key, version_id=stored.version_id, max_bytes=100) == b"acme's bytes"
        signed_with.append(signing_key(container))
        url = container.content.signed_read(
            key, version_id=stored.version_id, filename="a.txt", lifetime=timedelta(minutes=15)
        )
    acme = container.adapters.clients._tenant_credentials.session("acme")
    assert signed_with == [acme.access_key_id]
    # The presigned GET carries the tenant's session, so IAM judges it as that tenant's request.
    assert url is not None and acme.access_key_id in url.url and "X-Amz-Security-Token" in url.url
    assert os.environ["AWS_ACCESS_KEY_ID"] not in url.url


def test_on_aws_code_that_forgets_whose_data_it_touches_is_refused_rather_than_using_the_functions_role(
    aws: None,
) -> None:
    container = aws_container()
    with pytest.raises(NoActingTenant):
        container.content.head(storage_key("acme", uuid4(), uuid4()))
    with pytest.raises(NoActingTenant):
        container.content.signed_upload(
            storage_key("acme", uuid4(), uuid4()),
            content_type="text/plain",
            max_bytes=10,
            lifetime=timedelta(minutes=5),
        )


def test_locally_and_without_a_tenant_data_role_the_process_credentials_are_used_as_before(aws: None) -> None:
    boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
    unscoped = Container(Settings(runtime="aws", bucket=BUCKET, region=REGION))
    key = storage_key("acme", uuid4(), uuid4())
    unscoped.content.put(key, b"x", content_type="text/plain")
    # The process's own (moto puts its stand-in keys in the environment).
    assert signing_key(unscoped) == os.environ["AWS_ACCESS_KEY_ID"]


def test_a_pipeline_step_acts_for_its_versions_tenant_and_for_nobody_after(aws: None) -> None:
    seen: list[str | None] = []

    @workflow_step(StepInput)
    def step(request: StepInput, context: Any) -> Claimed:
        seen.append(acting_tenant())
        return Claimed.halted(request, None)

    event = load_event("pipeline_step.json")
    step(event, None)

    assert seen == [event["tenantId"]] and acting_tenant() is None


def test_an_event_naming_a_key_acts_for_the_tenant_the_key_names_and_a_stray_key_for_nobody() -> None:
    with acting_for_owner_of(storage_key("acme", uuid4(), uuid4())):
        assert acting_tenant() == "acme"
    with acting_for_owner_of("uploads/not-a-quire-key"):
        assert acting_tenant() is None
    assert acting_tenant() is None
