"""TokenVerifier for the MCP function: a Cognito user pool's access tokens, checked as API Gateway's JWT authorizer
checks them for the HTTP API (infra/constructs/api.py), and handed on in the shape that authorizer hands the API
function (every claim a string, an array flattened to "[a b]").

The MCP route has no gateway authorizer: an MCP client needs a 401 whose WWW-Authenticate names the resource
metadata, which API Gateway's authorizer cannot send. So the function checks the token itself: RS256 with a key of
the pool's JWKS (fetched once and cached, again when a token names a key it does not know), the issuer, the expiry,
`token_use` access, `client_id` one of the app clients, and the API's scope (which an ID token never carries).
"""

from collections.abc import Callable, Mapping
from typing import Any

import jwt

from shared.domain.errors import Unauthenticated
from shared.ports import TokenVerifier

_ALGORITHMS = ["RS256"]
_JWKS_TIMEOUT_SECONDS = 5
# The JWKS document is re-read at most this often (a key rotation is picked up by the unknown key's `kid`).
_JWKS_LIFESPAN_SECONDS = 3600


class CognitoTokenVerifier(TokenVerifier):
    def __init__(
        self,
        issuer: str,
        client_ids: frozenset[str],
        *,
        required_scope: str | None,
        signing_key: Callable[[str], Any] | None = None,
    ) -> None:
        if not client_ids:
            raise ValueError("no app client is named: every token would be refused")
        self._issuer = issuer.rstrip("/")
        self._client_ids = client_ids
        self._required_scope = required_scope
        if signing_key is None:
            keys = jwt.PyJWKClient(
                f"{self._issuer}/.well-known/jwks.json",
                cache_keys=True,
                lifespan=_JWKS_LIFESPAN_SECONDS,
                timeout=_JWKS_TIMEOUT_SECONDS,
            )
            signing_key = keys.get_signing_key_from_jwt
        self._signing_key = signing_key

    def verify(self, token: str) -> Mapping[str, object]:
        try:
            key = self._signing_key(token)
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=_ALGORITHMS,
                issuer=self._issuer,
                # An access token has no `aud`; its app client is `client_id`, checked below.
                options={"require": ["exp", "iat", "iss", "sub", "token_use", "client_id"], "verify_aud": False},
            )
        except jwt.PyJWTError as error:
            # A JWKS that cannot be fetched lands here too: no token is accepted without its key.
            raise Unauthenticated(f"invalid token: {error}") from error
        if claims["token_use"] != "access":  # noqa: S105 - a claim's value, not a secret
            raise Unauthenticated("invalid token: not an access token")
        if claims["client_id"] not in self._client_ids:
            raise Unauthenticated("invalid token: issued to another app client")
        if self._required_scope is not None and self._required_scope not in str(claims.get("scope", "")).split():
            raise Unauthenticated(f"invalid token: it lacks the {self._required_scope} scope")
        return {name: _as_authorizer_hands_it(value) for name, value in claims.items()}


def _as_authorizer_hands_it(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + " ".join(str(item) for item in value) + "]"
    return str(value)
