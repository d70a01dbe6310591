import time

import jwt
import pytest

from shared.adapters.local.jwt_tokens import LocalTokenIssuer, LocalTokenVerifier
from shared.domain.auth import Principal, principal_from_claims
from shared.domain.errors import Unauthenticated

SECRET = b"k" * 32
ALICE = Principal(tenant_id="acme", subject="alice", collections=frozenset({"hr", "legal"}))


def test_a_local_token_yields_the_claims_the_aws_authorizer_would() -> None:
    token = LocalTokenIssuer(SECRET).issue(ALICE)
    claims = LocalTokenVerifier(SECRET).verify(token)
    # API Gateway hands every claim over as a string; so does the local adapter.
    assert all(isinstance(value, str) for value in claims.values())
    assert principal_from_claims(claims) == ALICE


def test_a_token_signed_with_another_secret_is_refused() -> None:
    token = LocalTokenIssuer(b"x" * 32).issue(ALICE)
    with pytest.raises(Unauthenticated):
        LocalTokenVerifier(SECRET).verify(token)


def test_an_expired_token_is_refused() -> None:
    token = LocalTokenIssuer(SECRET).issue(ALICE, lifetime_seconds=-10)
    with pytest.raises(Unauthenticated):
        LocalTokenVerifier(SECRET).verify(token)


def test_an_unsigned_token_is_refused() -> None:
    now = int(time.time())
    forged = jwt.encode(
        {
            "sub": "eve",
            "custom:tenant_id": "acme",
            "iss": "quire-local",
            "aud": "quire-api",
            "iat": now,
            "exp": now + 60,
        },
        key=None,  # type: ignore[arg-type]  # PyJWT's types want a key, even for alg none
        algorithm="none",
    )
    with pytest.raises(Unauthenticated):
        LocalTokenVerifier(SECRET).verify(forged)
