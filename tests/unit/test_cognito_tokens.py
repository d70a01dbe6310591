"""Cognito access tokens verified in the function as API Gateway's JWT authorizer verifies them, against a JWKS
of a locally generated RSA key handed to PyJWKClient directly (no network)."""

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt import PyJWKClient
from jwt.algorithms import RSAAlgorithm
from jwt.exceptions import PyJWKClientConnectionError

from functions.token_claims.handler import access_token_claims
from shared.adapters.aws.cognito_tokens import (
    JWKS_REFRESH_COOLDOWN_SECONDS,
    CognitoTokenVerifier,
    SnapshotJwksClient,
    authorizer_string,
    jwks_url,
    live_jwks_client,
    public_signing_keys,
)
from shared.adapters.local.jwt_tokens import LocalTokenIssuer
from shared.bootstrap import ConfigurationError, Container
from shared.config import Settings
from shared.domain.auth import Principal, principal_from_claims
from shared.domain.errors import InfrastructureUnavailable, Unauthenticated

ISSUER = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Quire1234"
CLIENT = "4hq8s7browserclient0000000"
SCOPE = "quire/api"
KID = "key-1"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
# What the pre-token-generation trigger adds to the access token of this user.
USER = {"custom:tenant_id": "acme", "custom:collections": "hr,legal", "custom:write_collections": "legal"}


def jwk(key: rsa.RSAPrivateKey, kid: str = KID) -> dict[str, Any]:
    public: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    return {**public, "kid": kid, "alg": "RS256", "use": "sig"}


JWKS = {"keys": [jwk(KEY)]}


def access_token(*, key: rsa.RSAPrivateKey = KEY, headers: Mapping[str, Any] | None = None, **overrides: Any) -> str:
    """An access token as Cognito issues one to the browser client, after the trigger ran; None drops a claim."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "sub": "6b1f0f0e-0000-4000-8000-000000000001",
        "iss": ISSUER,
        "client_id": CLIENT,
        "token_use": "access",
        "scope": f"openid email {SCOPE}",
        "auth_time": now,
        "iat": now,
        "exp": now + 900,
        "jti": "b0c1d2e3",
        "username": "ann@example.com",
        **access_token_claims(USER),
    }
    claims.update(overrides)
    claims = {name: value for name, value in claims.items() if value is not None}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID, **(headers or {})})


def hs256_token(claims: Mapping[str, Any], secret: bytes) -> str:
    def part(data: bytes) -> bytes:
        return base64.urlsafe_b64encode(data).rstrip(b"=")

    signed = (
        part(json.dumps({"alg": "HS256", "typ": "JWT", "kid": KID}).encode()) + b"." + part(json.dumps(claims).encode())
    )
    return (signed + b"." + part(hmac.new(secret, signed, hashlib.sha256).digest())).decode()


def verifier(keys: PyJWKClient | None = None) -> CognitoTokenVerifier:
    return CognitoTokenVerifier(
        issuer_url=ISSUER, client_ids=[CLIENT], required_scope=SCOPE, keys=keys or SnapshotJwksClient(JWKS)
    )


def test_an_access_token_yields_the_claims_the_gateway_authorizer_would_hand_the_function() -> None:
    claims = verifier().verify(access_token())
    # Strings only, as API Gateway hands them over; the principal is the one the REST routes would see.
    assert all(isinstance(value, str) for value in claims.values())
    assert claims["client_id"] == CLIENT and str(claims["exp"]).isdigit()
    assert principal_from_claims(claims) == Principal(
        tenant_id="acme",
        subject="6b1f0f0e-0000-4000-8000-000000000001",
        collections=frozenset({"hr", "legal"}),
        writable=frozenset({"legal"}),
    )


def test_a_token_from_another_issuer_is_refused() -> None:
    other_pool = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Other999"
    with pytest.raises(Unauthenticated, match="issuer"):
        verifier().verify(access_token(iss=other_pool))


def test_a_token_issued_to_another_app_client_is_refused() -> None:
    with pytest.raises(Unauthenticated, match="app client"):
        verifier().verify(access_token(client_id="someotherclient"))


def test_an_audience_is_checked_before_client_id_as_the_gateway_does() -> None:
    """API Gateway evaluates aud when a token has one, and client_id only when it has none."""
    with pytest.raises(Unauthenticated, match="app client"):
        verifier().verify(access_token(aud="someotherclient"))
    assert verifier().verify(access_token(aud=[CLIENT, "x"], client_id=None))["aud"] == f"[{CLIENT} x]"


def test_an_id_token_is_refused_although_its_audience_is_the_client() -> None:
    id_token = access_token(token_use="id", aud=CLIENT, client_id=None, scope=None)
    with pytest.raises(Unauthenticated, match="access tokens"):
        verifier().verify(id_token)


def test_a_token_without_the_apis_scope_is_refused() -> None:
    with pytest.raises(Unauthenticated, match="scope"):
        verifier().verify(access_token(scope="openid email"))
    with pytest.raises(Unauthenticated, match="scope"):
        verifier().verify(access_token(scope="quire/api-admin"))


def test_an_expired_token_is_refused_beyond_a_few_seconds_of_leeway() -> None:
    now = int(time.time())
    with pytest.raises(Unauthenticated, match="expired"):
        verifier().verify(access_token(iat=now - 1000, exp=now - 30))
    assert verifier().verify(access_token(iat=now - 1000, exp=now - 2))


def test_a_token_issued_in_the_future_or_not_yet_valid_is_refused() -> None:
    now = int(time.time())
    with pytest.raises(Unauthenticated):
        verifier().verify(access_token(iat=now + 600, exp=now + 1200))
    with pytest.raises(Unauthenticated):
        verifier().verify(access_token(nbf=now + 600))


@pytest.mark.parametrize("claim", ["exp", "iat", "iss", "sub", "token_use"])
def test_a_token_missing_a_required_claim_is_refused(claim: str) -> None:
    with pytest.raises(Unauthenticated):
        dropped: dict[str, Any] = {claim: None}
        verifier().verify(access_token(**dropped))


def test_an_unsigned_token_is_refused() -> None:
    claims = jwt.decode(access_token(), options={"verify_signature": False})
    unsigned = jwt.encode(claims, key=None, algorithm="none", headers={"kid": KID})  # type: ignore[arg-type]
    with pytest.raises(Unauthenticated, match="RS256"):
        verifier().verify(unsigned)


def test_a_token_signed_with_hs256_keyed_by_the_public_key_is_refused() -> None:
    """The classic confusion: HMAC keyed with the RSA public key's bytes, which anyone can read."""
    claims = jwt.decode(access_token(), options={"verify_signature": False})
    pem = KEY.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    # PyJWT refuses a PEM as an HMAC key, so the forgery is built by hand.
    forged = hs256_token(claims, pem)
    with pytest.raises(Unauthenticated, match="RS256"):
        verifier().verify(forged)


def test_a_token_naming_an_unknown_key_or_none_is_refused() -> None:
    with pytest.raises(Unauthenticated, match="signing key"):
        verifier().verify(access_token(headers={"kid": "key-2"}))
    no_kid = jwt.encode(jwt.decode(access_token(), options={"verify_signature": False}), KEY, algorithm="RS256")
    with pytest.raises(Unauthenticated, match="kid"):
        verifier().verify(no_kid)


def test_a_token_signed_by_another_key_under_a_known_kid_is_refused() -> None:
    with pytest.raises(Unauthenticated, match="Signature"):
        verifier().verify(access_token(key=OTHER_KEY))


def test_garbage_is_refused() -> None:
    for token in ("", "not-a-jwt", "a.b.c"):
        with pytest.raises(Unauthenticated):
            verifier().verify(token)


class Unreachable(PyJWKClient):
    def __init__(self) -> None:
        super().__init__(jwks_url(ISSUER))

    def fetch_data(self) -> Any:
        raise PyJWKClientConnectionError("timed out")


def test_keys_that_cannot_be_fetched_are_an_infrastructure_failure_not_the_callers() -> None:
    with pytest.raises(InfrastructureUnavailable, match="signing keys"):
        verifier(Unreachable()).verify(access_token())


def test_the_live_client_reads_the_pools_jwks_and_refetches_for_an_unknown_kid_at_most_once_a_minute() -> None:
    client = live_jwks_client(ISSUER)
    assert client.uri == f"{ISSUER}/.well-known/jwks.json"
    assert client.cooldown_duration == JWKS_REFRESH_COOLDOWN_SECONDS >= 60


@pytest.mark.parametrize(
    "issuer",
    [
        "https://evil.example.com/eu-west-1_Quire1234",
        "http://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Quire1234",
        "https://cognito-idp.eu-west-1.amazonaws.com.evil.example/eu-west-1_Quire1234",
        f"{ISSUER}/",
    ],
)
def test_keys_are_read_from_a_cognito_user_pool_only(issuer: str) -> None:
    with pytest.raises(ValueError, match="user pool issuer"):
        jwks_url(issuer)


def test_a_snapshot_keeps_the_public_rsa_signing_keys_only() -> None:
    private: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(KEY))
    document = {"keys": [{**private, "kid": KID, "use": "sig"}, {"kty": "oct", "k": "c2VjcmV0", "kid": "h"}]}
    (kept,) = public_signing_keys(document)["keys"]
    assert set(kept) == {"kid", "kty", "use", "n", "e"} and "d" not in kept
    with pytest.raises(ValueError, match="no RS256 signing key"):
        public_signing_keys({"keys": [{"kty": "RSA", "kid": "e", "use": "enc", "n": "x", "e": "AQAB"}]})
    with pytest.raises(ValueError, match="not JSON"):
        SnapshotJwksClient.from_json("{")


def test_a_snapshot_client_never_fetches() -> None:
    client = SnapshotJwksClient.from_json(json.dumps(JWKS))
    assert client.get_signing_key(KID).key_id == KID
    with pytest.raises(jwt.PyJWKClientError):
        client.get_signing_key("key-2")


def test_claims_are_strings_the_way_the_gateway_writes_them() -> None:
    assert [authorizer_string(value) for value in (1700000000, True, ["a", "b"], "x")] == [
        "1700000000",
        "true",
        "[a b]",
        "x",
    ]


def test_on_aws_the_container_verifies_cognito_tokens_with_the_deploy_time_keys() -> None:
    settings = Settings(
        runtime="aws",
        cognito_issuer_url=ISSUER,
        cognito_client_ids=f" {CLIENT}, ",  # as the environment spells it
        cognito_jwks=json.dumps(JWKS),
    )
    assert settings.cognito_client_ids == (CLIENT,)
    claims = Container(settings).token_verifier.verify(access_token())
    assert claims["custom:tenant_id"] == "acme"


def test_on_aws_a_verifier_without_its_settings_says_which_are_missing() -> None:
    with pytest.raises(ConfigurationError, match="QUIRE_COGNITO_CLIENT_IDS"):
        _ = Container(Settings(runtime="aws", cognito_issuer_url=ISSUER)).token_verifier
    with pytest.raises(ConfigurationError, match="user pool issuer"):
        _ = Container(
            Settings(runtime="aws", cognito_issuer_url="https://example.com", cognito_client_ids=(CLIENT,))
        ).token_verifier


def test_locally_the_container_verifies_the_local_stacks_tokens(tmp_path: Path) -> None:
    secret = tmp_path / "jwt.key"
    secret.write_bytes(b"k" * 32)
    alice = Principal(tenant_id="acme", subject="alice", collections=frozenset({"hr"}))
    container = Container(Settings(runtime="local", jwt_secret_file=secret))
    claims = container.token_verifier.verify(LocalTokenIssuer(b"k" * 32).issue(alice))
    assert principal_from_claims(claims) == alice
    with pytest.raises(ConfigurationError, match="QUIRE_JWT_SECRET_FILE"):
        _ = Container(Settings(runtime="local")).token_verifier
