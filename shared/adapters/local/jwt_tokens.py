"""Locally signed bearer tokens with the claim shape Cognito + API Gateway's JWT authorizer produce.

HS256 with a per-stack secret kept under .quire/ (mode 0600). The claims handed on are strings, as the
AWS authorizer hands them to the Lambda, so the API handler cannot tell the two apart.
"""

import time
from collections.abc import Mapping

import jwt

from shared.domain.auth import ADMIN_CLAIM, COLLECTIONS_CLAIM, SUBJECT_CLAIM, TENANT_CLAIM, WRITE_CLAIM, Principal
from shared.domain.errors import Unauthenticated
from shared.ports import TokenVerifier

LOCAL_ISSUER = "quire-local"
LOCAL_AUDIENCE = "quire-api"
_ALGORITHM = "HS256"


class LocalTokenIssuer:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def issue(self, principal: Principal, *, lifetime_seconds: int = 3600) -> str:
        now = int(time.time())
        claims = {
            "iss": LOCAL_ISSUER,
            "aud": LOCAL_AUDIENCE,
            "iat": now,
            "exp": now + lifetime_seconds,
            "token_use": "id",
            SUBJECT_CLAIM: principal.subject,
            TENANT_CLAIM: principal.tenant_id,
            COLLECTIONS_CLAIM: ",".join(sorted(principal.collections)),
        }
        # Role claims only where there are roles: a read-only token looks as it did before roles existed.
        if principal.writable:
            claims[WRITE_CLAIM] = ",".join(sorted(principal.writable))
        if principal.administered:
            claims[ADMIN_CLAIM] = ",".join(sorted(principal.administered))
        return jwt.encode(claims, self._secret, algorithm=_ALGORITHM)


class LocalTokenVerifier(TokenVerifier):
    """TokenVerifier for the local HTTP adapter."""

    # An HMAC over the token with a secret in memory: no key to fetch, so a caller on an event loop may verify
    # inline rather than in a worker thread (functions/mcp/server.py:ClaimsTokenVerifier).
    verifies_offline = True

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def verify(self, token: str) -> Mapping[str, object]:
        try:
            claims: dict[str, object] = jwt.decode(
                token,
                self._secret,
                algorithms=[_ALGORITHM],
                audience=LOCAL_AUDIENCE,
                issuer=LOCAL_ISSUER,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as error:
            raise Unauthenticated(f"invalid token: {error}") from error
        # API Gateway hands every claim to the Lambda as a string.
        return {name: value if isinstance(value, str) else str(value) for name, value in claims.items()}
