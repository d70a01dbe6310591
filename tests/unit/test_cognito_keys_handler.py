"""The deploy-time snapshot of the user pool's signing keys: Create and Update answer the public keys as the
resource's Jwks attribute; Delete reads nothing; keys that cannot be read fail the deployment. No network: the
JWKS endpoint is replaced by a client fed a document directly."""

import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt import PyJWKClient
from jwt.algorithms import RSAAlgorithm
from jwt.exceptions import PyJWKClientConnectionError

from functions.cognito_keys.handler import handler
from shared.adapters.aws import cognito_tokens
from shared.adapters.aws.cognito_tokens import MAX_SNAPSHOT_BYTES, SnapshotJwksClient
from shared.local.http_api import LocalLambdaContext
from tests.conftest import load_event

ISSUER = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Quire1234"


class Endpoint(PyJWKClient):
    """The pool's JWKS endpoint as PyJWKClient reads it, answering `document` (or failing)."""

    def __init__(self, document: dict[str, Any] | None) -> None:
        super().__init__(f"{ISSUER}/.well-known/jwks.json")
        self.document = document
        self.fetches = 0
        # The issuers the handler asked for this endpoint's client.
        self.asked: list[str] = []

    def fetch_data(self) -> Any:
        self.fetches += 1
        if self.document is None:
            raise PyJWKClientConnectionError("Fail to fetch data from the url, err: timed out")
        return self.document


def pool_keys() -> dict[str, Any]:
    keys = []
    for kid in ("id-token-key", "access-token-key"):
        public = json.loads(RSAAlgorithm.to_jwk(rsa.generate_private_key(65537, 2048).public_key()))
        keys.append({**public, "kid": kid, "alg": "RS256", "use": "sig"})
    return {"keys": keys}


def cfn_event(request_type: str) -> dict[str, Any]:
    event = load_event("cfn_cognito_keys_create.json")
    event["RequestType"] = request_type
    if request_type != "Create":
        event["PhysicalResourceId"] = ISSUER
    return event


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Endpoint:
    served = Endpoint(pool_keys())

    def client(issuer_url: str) -> PyJWKClient:
        served.asked.append(issuer_url)
        return served

    monkeypatch.setattr(cognito_tokens, "live_jwks_client", client)
    return served


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_create_and_update_answer_the_pools_public_keys_for_the_verifier(endpoint: Endpoint, request_type: str) -> None:
    response = handler(cfn_event(request_type), LocalLambdaContext())
    assert response["PhysicalResourceId"] == ISSUER
    assert endpoint.asked == [ISSUER]
    snapshot = response["Data"]["Jwks"]
    assert len(snapshot) <= MAX_SNAPSHOT_BYTES
    client = SnapshotJwksClient.from_json(snapshot)
    assert {key.key_id for key in client.get_signing_keys()} == {"id-token-key", "access-token-key"}


def test_delete_reads_nothing(endpoint: Endpoint) -> None:
    response = handler(cfn_event("Delete"), LocalLambdaContext())
    assert response == {"PhysicalResourceId": ISSUER}
    assert endpoint.fetches == 0


def test_keys_that_cannot_be_read_fail_the_deployment(endpoint: Endpoint) -> None:
    endpoint.document = None
    with pytest.raises(PyJWKClientConnectionError, match="timed out"):
        handler(cfn_event("Create"), LocalLambdaContext())
    endpoint.document = {"keys": []}
    with pytest.raises(ValueError, match="no RS256 signing key"):
        handler(cfn_event("Create"), LocalLambdaContext())
