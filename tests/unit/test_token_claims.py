"""The Cognito pre-token-generation trigger: the access token carries the claims the API reads, or there is no token."""

import copy
import subprocess
import sys
from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.token_claims.handler import AccountNotProvisioned, handler
from shared.domain.auth import (
    ADMIN_CLAIM,
    COLLECTIONS_CLAIM,
    TENANT_CLAIM,
    WRITE_CLAIM,
    parse_collections,
    principal_from_claims,
)
from shared.local.http_api import LocalLambdaContext
from tests.conftest import load_event


def local_context() -> LambdaContext:
    # The attributes of Lambda's context the handler reads; its type names powertools' class.
    return cast(LambdaContext, LocalLambdaContext())


def sample_event(**attributes: str | None) -> dict[str, Any]:
    """The sample event with some user attributes replaced (None removes one)."""
    event = copy.deepcopy(load_event("cognito_pre_token_generation.json"))
    for name, value in attributes.items():
        key = name.replace("custom_", "custom:")
        if value is None:
            event["request"]["userAttributes"].pop(key, None)
        else:
            event["request"]["userAttributes"][key] = value
    return event


def access_token_claims(event: dict[str, Any]) -> dict[str, Any]:
    response = handler(event, local_context())
    overrides: dict[str, Any] = response["response"]["claimsAndScopeOverrideDetails"]
    assert "idTokenGeneration" not in overrides or not overrides["idTokenGeneration"].get("claimsToAddOrOverride")
    claims: dict[str, Any] = overrides["accessTokenGeneration"]["claimsToAddOrOverride"]
    return claims


def test_the_sample_event_is_a_version_2_event_asking_for_the_api_scope() -> None:
    event = load_event("cognito_pre_token_generation.json")
    assert event["version"] == "2"
    assert event["triggerSource"].startswith("TokenGeneration_")
    assert "quire/api" in event["request"]["scopes"]


def test_tenant_and_collections_go_into_the_access_token_under_the_names_the_api_reads() -> None:
    # Given a provisioned user, when Cognito asks for the access token's claims
    claims = access_token_claims(sample_event())
    # Then the tenant and the sorted collections are there, as strings, under the API's claim names
    assert claims == {TENANT_CLAIM: "acme", COLLECTIONS_CLAIM: "contracts,handbooks"}


def test_what_api_gateway_hands_the_api_becomes_the_users_principal() -> None:
    # Given the claims the trigger added, plus the subject Cognito always puts in an access token
    claims = access_token_claims(sample_event())
    # When API Gateway hands them on (string claims arrive unchanged) and the API reads them
    principal = principal_from_claims({"sub": "8e3f1c2a-1111-4a4a-9b9b-0123456789ab", **claims})
    # Then the caller is the user's tenant with the user's collections
    assert principal.tenant_id == "acme"
    assert principal.collections == {"contracts", "handbooks"}


@pytest.mark.parametrize(
    ("delivered", "expected"),
    [
        # The JWT authorizer flattens an array claim ["contracts","handbooks"] to this string.
        ("[contracts handbooks]", {"contracts", "handbooks"}),
        ("[handbooks]", {"handbooks"}),
        ("[]", set()),
    ],
)
def test_an_array_claim_as_api_gateway_flattens_it_is_read_too(delivered: str, expected: set[str]) -> None:
    assert parse_collections(delivered) == expected


def test_the_role_attributes_go_into_the_access_token_closed_under_the_roles_they_imply() -> None:
    claims = access_token_claims(sample_event(custom_write_collections="drafts", custom_admin_collections="ops"))
    assert claims == {
        TENANT_CLAIM: "acme",
        COLLECTIONS_CLAIM: "contracts,drafts,handbooks,ops",
        WRITE_CLAIM: "drafts,ops",
        ADMIN_CLAIM: "ops",
    }
    principal = principal_from_claims({"sub": "u", **claims})
    assert principal.may_write("drafts") and not principal.may_administer("drafts") and principal.may_administer("ops")
    assert not principal.may_write("contracts")


def test_a_user_without_role_attributes_gets_no_role_claims_and_only_reads() -> None:
    claims = access_token_claims(sample_event())
    assert WRITE_CLAIM not in claims and ADMIN_CLAIM not in claims
    assert not principal_from_claims({"sub": "u", **claims}).writable


def test_an_invalid_role_attribute_refuses_the_sign_in() -> None:
    with pytest.raises(AccountNotProvisioned, match="not valid identifiers"):
        access_token_claims(sample_event(custom_write_collections="ok,../../etc"))


def test_loose_spacing_in_the_attribute_is_normalised() -> None:
    claims = access_token_claims(sample_event(custom_collections=" legal , hr,hr "))
    assert claims[COLLECTIONS_CLAIM] == "hr,legal"


def test_a_user_with_no_collections_gets_a_token_without_the_claim() -> None:
    claims = access_token_claims(sample_event(custom_collections=None))
    assert claims == {TENANT_CLAIM: "acme"}
    assert principal_from_claims({"sub": "u1", **claims}).collections == frozenset()


@pytest.mark.parametrize("tenant", [None, ""])
def test_a_user_without_a_tenant_gets_no_token(tenant: str | None) -> None:
    with pytest.raises(AccountNotProvisioned, match="no tenant"):
        handler(sample_event(custom_tenant_id=tenant), local_context())


@pytest.mark.parametrize(
    "attributes",
    [
        {"custom_tenant_id": "acme corp"},
        {"custom_tenant_id": "../other"},
        {"custom_collections": '["hr","legal"]'},  # JSON is not the attribute's format
        {"custom_collections": ",".join(f"c{i}" for i in range(300))},
    ],
)
def test_attributes_the_api_would_refuse_get_no_token(attributes: dict[str, str]) -> None:
    with pytest.raises(AccountNotProvisioned, match="operator must correct"):
        handler(sample_event(**attributes), local_context())


def test_the_trigger_imports_neither_the_database_nor_the_composition_root_nor_the_xray_sdk() -> None:
    # It runs on every sign-in: a cold start pays only for claims and logging.
    probe = (
        "import sys, functions.token_claims.handler; "
        "print(sorted(m for m in ('psycopg', 'boto3', 'aws_xray_sdk', 'shared.bootstrap') if m in sys.modules))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"
