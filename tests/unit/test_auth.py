import pytest

from shared.domain.auth import COLLECTIONS_CLAIM, TENANT_CLAIM, parse_collections, principal_from_claims
from shared.domain.errors import NotFound, Unauthenticated
from shared.services.authorization import ClaimsAuthorizationPolicy


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a,b", {"a", "b"}),  # a Cognito custom attribute
        ("[a b]", {"a", "b"}),  # API Gateway's flattening of a JSON array claim
        (["a", "b"], {"a", "b"}),  # a locally decoded list
        (" a , b ,", {"a", "b"}),
        ("", set()),
        (None, set()),
    ],
)
def test_collections_claim_is_read_in_every_shape_it_arrives_in(raw: object, expected: set[str]) -> None:
    assert parse_collections(raw) == expected


def test_principal_comes_from_the_authorizer_claims() -> None:
    principal = principal_from_claims({"sub": "u1", TENANT_CLAIM: "acme", COLLECTIONS_CLAIM: "hr,legal"})
    assert (principal.tenant_id, principal.subject, principal.collections) == ("acme", "u1", frozenset({"hr", "legal"}))


@pytest.mark.parametrize(
    "claims",
    [
        None,
        {},
        {"sub": "u1"},  # no tenant: never guessed
        {TENANT_CLAIM: "acme"},  # no subject
        {"sub": "u1", TENANT_CLAIM: "acme'; drop table files; --"},
        {"sub": "u1", TENANT_CLAIM: "acme", COLLECTIONS_CLAIM: "ok,../../etc"},
        {"sub": "u1", TENANT_CLAIM: "acme", COLLECTIONS_CLAIM: ",".join(f"c{i}" for i in range(300))},
    ],
)
def test_claims_that_cannot_name_a_safe_tenant_are_unauthenticated(claims: dict[str, str] | None) -> None:
    with pytest.raises(Unauthenticated):
        principal_from_claims(claims)


def test_an_unlisted_collection_is_not_found_not_forbidden() -> None:
    principal = principal_from_claims({"sub": "u1", TENANT_CLAIM: "acme", COLLECTIONS_CLAIM: "hr"})
    policy = ClaimsAuthorizationPolicy()
    policy.ensure_can_read(principal, "hr")
    with pytest.raises(NotFound):
        policy.ensure_can_read(principal, "legal")
