"""The MCP function's bearer check on AWS (shared/adapters/aws/cognito_tokens.py): a user pool's access tokens as
API Gateway's JWT authorizer checks them, and their claims in the shape it hands on. Keys are made here; no JWKS
is fetched."""

import time
from dataclasses import dataclass
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from shared.adapters.aws.cognito_tokens import CognitoTokenVerifier
from shared.bootstrap import ConfigurationError, Container
from shared.config import Settings
from shared.domain.auth import principal_from_claims
from shared.domain.errors import Unauthenticated

ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Example"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass(frozen=True)
class _SigningKey:
    key: Any


def verifier(scope: str | None = "quire/api") -> CognitoTokenVerifier:
    return CognitoTokenVerifier(
        ISSUER,
        frozenset({"app-client"}),
        required_scope=scope,
        signing_key=lambda _token: _SigningKey(KEY.public_key()),
    )


def access_token(key: rsa.RSAPrivateKey = KEY, **overrides: object) -> str:
    now = int(time.time())
    claims: dict[str, object] = {
        "iss": ISSUER,
        "sub": "0b4c-ann",
        "token_use": "access",
        "client_id": "app-client",
        "scope": "openid quire/api",
        "iat": now,
        "exp": now + 600,
        "auth_time": now,
        "custom:tenant_id": "acme",
        "custom:collections": "hr,legal",
        "cognito:groups": ["staff", "hr"],
    }
    claims.update(overrides)
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, key, algorithm="RS256")


def test_an_access_token_of_the_pool_gives_its_claims_as_strings_as_the_authorizer_hands_them() -> None:
    claims = verifier().verify(access_token())
    assert all(isinstance(value, str) for value in claims.values())
    assert claims["cognito:groups"] == "[staff hr]"
    assert claims["iat"] == str(claims["auth_time"])
    principal = principal_from_claims(claims)
    assert (principal.tenant_id, principal.subject, principal.collections) == (
        "acme",
        "0b4c-ann",
        frozenset({"hr", "legal"}),
    )


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (access_token(OTHER_KEY), "Signature verification failed"),
        (access_token(iss="https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Other"), "issuer"),
        (access_token(exp=int(time.time()) - 60), "expired"),
        (access_token(token_use="id"), "not an access token"),
        (access_token(client_id="another-client"), "another app client"),
        (access_token(client_id=None), "client_id"),
        (access_token(scope="openid"), "quire/api scope"),
        (access_token(scope=None), "quire/api scope"),
        (jwt.encode({"iss": ISSUER, "sub": "x"}, "a-shared-secret-of-at-least-32-bytes", algorithm="HS256"), "alg"),
    ],
    ids=[
        "other key",
        "other pool",
        "expired",
        "id token",
        "other client",
        "no client",
        "no scope",
        "scopeless",
        "hs256",
    ],
)
def test_a_token_the_authorizer_would_refuse_is_refused(token: str, reason: str) -> None:
    with pytest.raises(Unauthenticated, match=reason):
        verifier().verify(token)


def test_without_a_required_scope_any_access_token_of_the_app_clients_is_accepted() -> None:
    assert verifier(scope=None).verify(access_token(scope="openid"))["scope"] == "openid"


def test_the_composition_root_builds_it_on_aws_from_the_mcp_settings_and_refuses_without_them() -> None:
    aws = Settings(
        runtime="aws",
        mcp_issuer_url=ISSUER,
        mcp_token_client_ids="app-client, cli-client",
        mcp_token_scope="quire/api",
    )
    assert isinstance(Container(aws).mcp_token_verifier, CognitoTokenVerifier)
    with pytest.raises(ConfigurationError, match="QUIRE_MCP_TOKEN_CLIENT_IDS"):
        _ = Container(aws.model_copy(update={"mcp_token_client_ids": ""})).mcp_token_verifier
    with pytest.raises(ConfigurationError, match="quire up"):
        _ = Container(Settings(runtime="local")).mcp_token_verifier
