"""Cognito access tokens verified in the function, exactly as API Gateway's JWT authorizer verifies them.

The MCP function's routes have no gateway authorizer: an OAuth resource server must answer a missing or bad
token with 401 and `WWW-Authenticate: Bearer resource_metadata=...` (RFC 9728), which the gateway's own 401
cannot carry. So this adapter does what the authorizer does for every other route (infra/constructs/api.py),
following API Gateway's documented checks:

- the signature: RS256 only (the gateway takes RSA algorithms only; Cognito signs with RS256), by the key of
  the user pool's JWKS that the token's `kid` names; `none`, HS256 and every other algorithm are refused;
- `iss`: exactly the user pool's issuer, `https://cognito-idp.<region>.amazonaws.com/<pool id>`;
- the audience: `aud` when the token has one, otherwise `client_id` (the gateway "validates client_id only if
  aud is not present"), one of the app clients the authorizer names;
- `exp` after now, `nbf` and `iat` before it, with a few seconds of leeway;
- the route's scope (`quire/api`), which only access tokens carry: ID tokens have `aud` and no `scope`, and
  the routes' `authorization_scopes` turn them away. So, as on the gateway, access tokens only; this adapter
  also requires `token_use` to say `access`, and the claims exp, iat, iss, sub and token_use to be there.

The claims come back as the authorizer hands them to a Lambda: every value a string (numbers as their digits,
an array flattened to "[a b]"), so shared.domain.auth.principal_from_claims reads the tenant and collections
the pre-token-generation trigger (functions/token_claims) put into the access token, as it does on the REST
routes. The keys come from a `jwt.PyJWKClient`: fetched from the pool's JWKS endpoint and cached, or (in the
MCP function, whose subnets have no route to Cognito's public endpoint) a snapshot taken at deploy time.
"""

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

import jwt
from jwt import PyJWK, PyJWKClient, PyJWKSet
from jwt.exceptions import PyJWKClientConnectionError

from shared.domain.errors import InfrastructureUnavailable, Unauthenticated
from shared.ports import TokenVerifier

ALGORITHM = "RS256"
REQUIRED_CLAIMS = ("exp", "iat", "iss", "sub", "token_use")
ACCESS_USE = "access"
# Cognito's clock and Lambda's are both NTP-synchronised: a few seconds absorb a token used the moment it is
# issued, and let an expired one live no longer than that.
LEEWAY_SECONDS = 5
JWKS_PATH = "/.well-known/jwks.json"
# Keys fetched from the pool are kept an hour (API Gateway keeps them up to two); a token naming a key the
# cache lacks refetches at most once a minute, so made-up kids cannot make every request a fetch.
JWKS_LIFESPAN_SECONDS = 3600
JWKS_REFRESH_COOLDOWN_SECONDS = 60
JWKS_TIMEOUT_SECONDS = 3
# A snapshot travels in a custom resource's answer (CloudFormation allows 4 KB) and then in a Lambda environment
# (4 KB for all its variables together: tests/infra/test_mcp_function.py sums them); a pool's two RSA-2048 keys
# take about 900 bytes, three (a rotation under way) about 1,350.
MAX_SNAPSHOT_BYTES = 1536
# A user pool's issuer: what the authorizer is configured with, and the only place its keys are read from.
_ISSUER = re.compile(r"https://cognito-idp\.[a-z]{2}(-[a-z]+)+-\d\.amazonaws\.com/[a-z]{2}(-[a-z]+)+-\d_[0-9A-Za-z]+")


def jwks_url(issuer_url: str) -> str:
    """Where a user pool publishes its signing keys."""
    if not _ISSUER.fullmatch(issuer_url):
        raise ValueError(f"{issuer_url!r} is not a Cognito user pool issuer (https://cognito-idp.<region>...)")
    return issuer_url + JWKS_PATH


def public_signing_keys(document: Mapping[str, Any]) -> dict[str, list[dict[str, str]]]:
    """The RSA signing keys of a JWKS document, their public members only; ValueError if there are none."""
    keys = document.get("keys")
    if not isinstance(keys, list):
        raise ValueError("a JWKS document holds a list of keys")
    public = [
        {member: key[member] for member in ("kid", "kty", "alg", "use", "n", "e") if isinstance(key.get(member), str)}
        for key in keys
        if isinstance(key, dict) and key.get("kty") == "RSA" and key.get("use", "sig") == "sig"
    ]
    public = [key for key in public if {"kid", "n", "e"} <= set(key) and key.get("alg", ALGORITHM) == ALGORITHM]
    if not public:
        raise ValueError("the JWKS document holds no RS256 signing key")
    # Parsed once here so a snapshot that PyJWT would refuse fails where it is taken, not at the first request.
    try:
        PyJWKSet.from_dict({"keys": public})
    except jwt.PyJWTError as error:
        raise ValueError(f"the JWKS document's keys are unusable: {error}") from None
    return {"keys": public}


class SnapshotJwksClient(PyJWKClient):
    """A PyJWKClient over a JWKS taken earlier (at deploy time): it never touches the network, so a token
    naming a key the snapshot lacks is refused at once."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        # The URI is never fetched (fetch_data is this class's own); PyJWKClient requires one.
        super().__init__("https://jwks.snapshot.invalid/", cache_jwk_set=True, cooldown_duration=0)
        self._document = public_signing_keys(document)

    @classmethod
    def from_json(cls, text: str) -> "SnapshotJwksClient":
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"the JWKS snapshot is not JSON: {error}") from None
        if not isinstance(document, dict):
            raise ValueError("the JWKS snapshot is not a JSON object")
        return cls(document)

    def fetch_data(self) -> Any:
        return self._document


def live_jwks_client(issuer_url: str) -> PyJWKClient:
    """The pool's JWKS endpoint, cached (for a runtime with a route to it)."""
    return PyJWKClient(
        jwks_url(issuer_url),
        cache_jwk_set=True,
        lifespan=JWKS_LIFESPAN_SECONDS,
        timeout=JWKS_TIMEOUT_SECONDS,
        cooldown_duration=JWKS_REFRESH_COOLDOWN_SECONDS,
    )


def snapshot_signing_keys(issuer_url: str) -> str:
    """The pool's public signing keys, read from its JWKS endpoint now, as compact JSON for SnapshotJwksClient."""
    document = live_jwks_client(issuer_url).fetch_data()
    snapshot = json.dumps(public_signing_keys(document), separators=(",", ":"), sort_keys=True)
    if len(snapshot.encode()) > MAX_SNAPSHOT_BYTES:
        raise ValueError(f"the pool's signing keys take {len(snapshot)} bytes, more than a snapshot may carry")
    return snapshot


class CognitoTokenVerifier(TokenVerifier):
    """TokenVerifier for a Cognito user pool's access tokens, with API Gateway's JWT authorizer's checks."""

    def __init__(
        self,
        *,
        issuer_url: str,
        client_ids: Collection[str],
        required_scope: str,
        keys: PyJWKClient,
        leeway_seconds: float = LEEWAY_SECONDS,
    ) -> None:
        if not client_ids:
            raise ValueError("a Cognito token verifier needs the app client ids its tokens may be issued to")
        if not required_scope or " " in required_scope:
            raise ValueError(f"the required scope must be one scope, not {required_scope!r}")
        self._issuer = issuer_url
        self._client_ids = frozenset(client_ids)
        self._scope = required_scope
        self._keys = keys
        self._leeway = leeway_seconds

    @classmethod
    def for_user_pool(
        cls, issuer_url: str, client_ids: Collection[str], required_scope: str, *, jwks_snapshot: str | None = None
    ) -> "CognitoTokenVerifier":
        """The pool's keys from `jwks_snapshot` (a JWKS document as JSON) when given, else from its endpoint."""
        jwks_url(issuer_url)  # a pool's issuer, or refused here rather than at the first request
        keys = SnapshotJwksClient.from_json(jwks_snapshot) if jwks_snapshot else live_jwks_client(issuer_url)
        return cls(issuer_url=issuer_url, client_ids=client_ids, required_scope=required_scope, keys=keys)

    def verify(self, token: str) -> Mapping[str, object]:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self._signing_key(token).key,
                algorithms=[ALGORITHM],
                issuer=self._issuer,
                leeway=self._leeway,
                # The audience is checked below, the gateway's way (aud, else client_id).
                options={"require": list(REQUIRED_CLAIMS), "verify_aud": False},
            )
        except PyJWKClientConnectionError as error:
            # The keys could not be fetched: no fault of the caller's, and worth a retry.
            raise InfrastructureUnavailable(f"the user pool's signing keys are unreachable: {error}") from error
        except jwt.PyJWTError as error:
            raise Unauthenticated(f"invalid token: {error}") from error
        self._check_audience(claims)
        if claims["token_use"] != ACCESS_USE:
            raise Unauthenticated("invalid token: only access tokens are accepted")
        scope = claims.get("scope")
        if not isinstance(scope, str) or self._scope not in scope.split():
            raise Unauthenticated(f"invalid token: it lacks the scope {self._scope}")
        return {name: authorizer_string(value) for name, value in claims.items()}

    def _signing_key(self, token: str) -> PyJWK:
        header = jwt.get_unverified_header(token)
        # Refused before any key is looked up: `none`, an HMAC algorithm keyed with the public key, and the rest.
        if header.get("alg") != ALGORITHM:
            raise jwt.InvalidAlgorithmError(f"the token is signed with {header.get('alg')!r}, not {ALGORITHM}")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise jwt.InvalidTokenError("the token names no signing key (kid)")
        return self._keys.get_signing_key(kid)

    def _check_audience(self, claims: Mapping[str, Any]) -> None:
        audience = claims.get("aud")
        if audience is None:
            audience = claims.get("client_id")
        named = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
        if not any(isinstance(client, str) and client in self._client_ids for client in named):
            raise Unauthenticated("invalid token: it was not issued to this API's app client")


def authorizer_string(value: object) -> str:
    """A claim as API Gateway's JWT authorizer hands it to a Lambda: a string, an array as "[a b]"."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + " ".join(authorizer_string(item) for item in value) + "]"
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)
