"""Whose data the current call touches: a request's caller, a step's version, an event's key. On AWS, S3 and
Textract calls are made with that tenant's session (QUIRE_TENANT_DATA_ROLE_ARN), and refused without one."""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from shared.domain.uploads import parse_storage_key

_acting_tenant: ContextVar[str | None] = ContextVar("quire_acting_tenant", default=None)


@contextmanager
def acting_for_tenant(tenant_id: str) -> Iterator[None]:
    """Within this block, tenant data is touched on behalf of `tenant_id` only."""
    token = _acting_tenant.set(tenant_id)
    try:
        yield
    finally:
        _acting_tenant.reset(token)


def acting_tenant() -> str | None:
    return _acting_tenant.get()


@contextmanager
def acting_for_owner_of(storage_key: str) -> Iterator[None]:
    """For an event that names an object: act for the tenant its key claims (the service then checks the claim
    against its row). A key Quire never hands out names no tenant, and nothing is read for it."""
    parts = parse_storage_key(storage_key)
    if parts is None:
        yield
        return
    with acting_for_tenant(parts.tenant_id):
        yield
