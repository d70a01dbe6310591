import time

import jwt
import pytest

from shared.adapters.local.jwt_tokens import LocalTokenIssuer, LocalTokenVerifier
from shared.domain.auth import ADMIN_CLAIM, WRITE_CLAIM, Principal, Role, principal_from_claims
from shared.domain.errors import Unauthenticated

SECRET = b"k" * 32
ALICE = Principal(tenant_id="acme", subject="alice", collections=frozenset({"hr", "legal"}))


def test_a_local_token_yields_the_claims_the_aws_authorizer_would() -> None:
    token = LocalTokenIssuer(SECRET).issue(ALICE)
    claims = LocalTokenVerifier(SECRET).verify(token)
    # API Gateway hands every claim over as a string; so does the local adapter.
    assert all(isinstance(value, str) for value in claims.values())
    assert principal_from_claims(claims) == ALICE


def test_the_roles_travel_in_the_token_and_a_token_without_them_only_reads() -> None:
    editor = Principal(
        tenant_id="acme", subject="ed", collections=frozenset({"hr"}), writable={"legal"}, administered={"ops"}
    )
    claims = LocalTokenVerifier(SECRET).verify(LocalTokenIssuer(SECRET).issue(editor))
    assert claims[WRITE_CLAIM] == "legal,ops" and claims[ADMIN_CLAIM] == "ops"
    assert principal_from_claims(claims).roles() == {"hr": Role.READ, "legal": Role.WRITE, "ops": Role.ADMIN}
    plain = LocalTokenVerifier(SECRET).verify(LocalTokenIssuer(SECRET).issue(ALICE))
    assert WRITE_CLAIM not in plain and ADMIN_CLAIM not in plain
    assert not principal_from_claims(plain).writable and not principal_from_claims(plain).administered


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
