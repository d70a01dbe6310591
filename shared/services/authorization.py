"""Entitlement from the caller's verified claims: a collection is readable iff the token lists it."""

from shared.domain.auth import Principal
from shared.domain.errors import NotFound


class ClaimsAuthorizationPolicy:
    """AuthorizationPolicy where the token's collections claim is the whole truth (no membership rows)."""

    def readable_collections(self, principal: Principal) -> frozenset[str]:
        return principal.collections

    def ensure_can_read(self, principal: Principal, collection_id: str) -> None:
        if not principal.may_read(collection_id):
            # Same error as a missing resource: a refusal must not confirm that the id exists.
            raise NotFound("not found")

    def ensure_can_write(self, principal: Principal, collection_id: str) -> None:
        # The claims carry no roles yet: whoever may read a collection may write to it. Callers ask for
        # the write decision all the same, so roles change this method and nothing else.
        self.ensure_can_read(principal, collection_id)
