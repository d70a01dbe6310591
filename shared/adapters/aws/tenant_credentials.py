"""Credentials scoped to one tenant: an STS session on the function's tenant data role, tagged `tenant=<id>`.

The role's policies (infra/constructs/tenant_data.py) name objects only as `tenants/${aws:PrincipalTag/tenant}/*`
and the like, so a client on tenant A's session is refused tenant B's keys by IAM, whatever key the code built.
`TenantRoutedClient` is what the adapters hold: a stand-in for a boto3 client that makes each call with the
acting tenant's client, and refuses to make one when no tenant is acting (code that forgot whose data it
touches fails, rather than falling back to the function's own credentials).

A presigned URL signed with temporary credentials stops working when they expire, whatever its own expiry
says: a session is handed out only while it has at least `keep_for` left (by default the longest URL lifetime,
15 minutes, and a minute more), so a URL signed with it lives as long as it claims.
"""

import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from shared.ports import MAX_SIGNED_READ_LIFETIME

# boto3's STS client (its stubs are not among the dev dependencies; one call, assume_role, is made).
STSClient = Any
Client = TypeVar("Client")

# The session tag the tenant data role's trust policy requires, and its policies read.
TENANT_TAG = "tenant"
# shared/domain/uploads.py's tenant id: no slash, so a tag value cannot reach into another tenant's prefix.
_TENANT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# Role chaining (a Lambda role assuming another) allows at most an hour.
SESSION_DURATION = timedelta(hours=1)
# How long a session must still be good for when handed out: a URL signed with it must outlive its lifetime.
KEEP_FOR = MAX_SIGNED_READ_LIFETIME + timedelta(minutes=1)
# Tenants whose clients one process keeps (a warm function serves few; each client holds a connection pool).
CACHED_TENANTS = 32


class NoActingTenant(RuntimeError):
    """Tenant data was reached without naming whose: a bug in the caller, never retried."""


@dataclass(frozen=True)
class TenantSession:
    tenant_id: str
    access_key_id: str
    secret_access_key: str
    session_token: str
    expires_at: datetime

    def client_credentials(self) -> dict[str, str]:
        """As boto3.client takes them."""
        return {
            "aws_access_key_id": self.access_key_id,
            "aws_secret_access_key": self.secret_access_key,
            "aws_session_token": self.session_token,
        }


class TenantCredentials:
    """One STS session per tenant, assumed on first use and again once it has less than `keep_for` left."""

    def __init__(
        self,
        sts: Callable[[], STSClient],
        role_arn: str,
        *,
        session_name: str = "quire",
        duration: timedelta = SESSION_DURATION,
        keep_for: timedelta = KEEP_FOR,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if keep_for >= duration:
            raise ValueError(f"a session of {duration} can never have {keep_for} left: shorten keep_for")
        self._sts = sts
        self._sts_client: STSClient | None = None
        self._role_arn = role_arn
        self._session_name = session_name
        self._duration = duration
        self._keep_for = keep_for
        self._clock = clock
        self._sessions: dict[str, TenantSession] = {}
        self._lock = threading.Lock()

    def session(self, tenant_id: str) -> TenantSession:
        if not _TENANT_ID.fullmatch(tenant_id):
            raise ValueError(f"{tenant_id!r} is not a tenant id: no session is made for it")
        with self._lock:
            cached = self._sessions.get(tenant_id)
            if cached is not None and cached.expires_at - self._clock() >= self._keep_for:
                return cached
            fresh = self._assume(tenant_id)
            self._sessions[tenant_id] = fresh
            return fresh

    def _assume(self, tenant_id: str) -> TenantSession:
        if self._sts_client is None:
            self._sts_client = self._sts()
        response = self._sts_client.assume_role(
            RoleArn=self._role_arn,
            # CloudTrail shows whose data each call touched.
            RoleSessionName=f"{self._session_name}-{tenant_id}"[:64],
            DurationSeconds=int(self._duration.total_seconds()),
            Tags=[{"Key": TENANT_TAG, "Value": tenant_id}],
        )
        credentials = response["Credentials"]
        return TenantSession(
            tenant_id=tenant_id,
            access_key_id=credentials["AccessKeyId"],
            secret_access_key=credentials["SecretAccessKey"],
            session_token=credentials["SessionToken"],
            expires_at=credentials["Expiration"],
        )


class TenantClients(Generic[Client]):
    """A client per tenant, built by `build(session)` on that tenant's session and rebuilt with its next one."""

    def __init__(
        self,
        credentials: TenantCredentials,
        build: Callable[[TenantSession], Client],
        acting_tenant: Callable[[], str | None],
    ) -> None:
        self._credentials = credentials
        self._build = build
        self._acting_tenant = acting_tenant
        self._clients: OrderedDict[str, tuple[TenantSession, Client]] = OrderedDict()
        self._lock = threading.Lock()

    def for_acting_tenant(self) -> Client:
        tenant_id = self._acting_tenant()
        if tenant_id is None:
            raise NoActingTenant(
                "tenant data was reached with no tenant acting: run the call inside "
                "shared.bootstrap.acting_for_tenant(<the tenant whose data it is>)"
            )
        return self.for_tenant(tenant_id)

    def for_tenant(self, tenant_id: str) -> Client:
        session = self._credentials.session(tenant_id)
        with self._lock:
            cached = self._clients.get(tenant_id)
            if cached is not None and cached[0] is session:
                self._clients.move_to_end(tenant_id)
                return cached[1]
            client = self._build(session)
            self._clients[tenant_id] = (session, client)
            self._clients.move_to_end(tenant_id)
            while len(self._clients) > CACHED_TENANTS:
                self._clients.popitem(last=False)
            return client


class TenantRoutedClient:
    """Stands in for a boto3 client: every attribute (an operation, `generate_presigned_url`, `get_paginator`)
    is the acting tenant's client's. Not callable, so `LazyClient` takes it for a client, not a factory."""

    def __init__(self, clients: TenantClients[Any]) -> None:
        self._clients = clients

    def __getattr__(self, name: str) -> Any:
        return getattr(self._clients.for_acting_tenant(), name)
