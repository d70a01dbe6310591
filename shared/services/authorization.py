"""Entitlement from the caller's verified claims: per collection, the role the token names."""

from shared.domain.auth import Principal, Role
from shared.domain.errors import Forbidden, NotFound


class ClaimsAuthorizationPolicy:
    """AuthorizationPolicy where the token's claims are the whole truth (no membership rows)."""

    def readable_collections(self, principal: Principal) -> frozenset[str]:
        return principal.collections

    def administered_collections(self, principal: Principal) -> frozenset[str]:
        return principal.administered

    def ensure_can_read(self, principal: Principal, collection_id: str) -> None:
        if not principal.may_read(collection_id):
            # Same error as a missing resource: a refusal must not confirm that the id exists.
            raise NotFound("not found")

    def ensure_can_write(self, principal: Principal, collection_id: str) -> None:
        self.ensure_can_read(principal, collection_id)
        if not principal.may_write(collection_id):
            raise Forbidden(_needs(Role.WRITE, collection_id, principal))

    def ensure_can_administer(self, principal: Principal, collection_id: str) -> None:
        self.ensure_can_read(principal, collection_id)
        if not principal.may_administer(collection_id):
            raise Forbidden(_needs(Role.ADMIN, collection_id, principal))


def _needs(role: Role, collection_id: str, principal: Principal) -> str:
    held = principal.role_in(collection_id) or Role.READ
    return (
        f"this needs the {role.value} role in collection {collection_id!r}; the token grants {held.value}:"
        f" ask the tenant's administrator for the {role.value} role there"
    )
