import pytest

from shared.domain.auth import (
    ADMIN_CLAIM,
    COLLECTIONS_CLAIM,
    TENANT_CLAIM,
    WRITE_CLAIM,
    Role,
    parse_collections,
    principal_from_claims,
    with_role,
)
from shared.domain.errors import Forbidden, NotFound, Unauthenticated
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


def test_a_role_includes_the_ones_below_it_and_collections_alone_only_read() -> None:
    principal = principal_from_claims(
        {"sub": "u1", TENANT_CLAIM: "acme", COLLECTIONS_CLAIM: "hr", WRITE_CLAIM: "legal", ADMIN_CLAIM: "ops"}
    )
    assert principal.collections == {"hr", "legal", "ops"}
    assert principal.writable == {"legal", "ops"} and principal.administered == {"ops"}
    assert [principal.role_in(c) for c in ("hr", "legal", "ops", "none")] == [Role.READ, Role.WRITE, Role.ADMIN, None]
    reader = principal_from_claims({"sub": "u1", TENANT_CLAIM: "acme", COLLECTIONS_CLAIM: "hr"})
    assert not reader.may_write("hr") and not reader.may_administer("hr") and reader.may_read("hr")


@pytest.mark.parametrize("claim", [WRITE_CLAIM, ADMIN_CLAIM])
def test_a_role_claim_is_checked_like_the_collections_claim(claim: str) -> None:
    with pytest.raises(Unauthenticated):
        principal_from_claims({"sub": "u1", TENANT_CLAIM: "acme", claim: "ok,../../etc"})
    with pytest.raises(Unauthenticated):
        # The limit counts every collection the caller may read, whatever its role there.
        principal_from_claims(
            {
                "sub": "u1",
                TENANT_CLAIM: "acme",
                COLLECTIONS_CLAIM: ",".join(f"c{i}" for i in range(200)),
                claim: ",".join(f"d{i}" for i in range(100)),
            }
        )


def test_the_policy_refuses_with_not_found_where_the_caller_cannot_see_and_forbidden_where_it_only_reads() -> None:
    policy = ClaimsAuthorizationPolicy()
    writer = with_role("acme", "w", {"docs"}, Role.WRITE)
    policy.ensure_can_write(writer, "docs")
    with pytest.raises(NotFound):
        policy.ensure_can_write(writer, "secret")
    with pytest.raises(NotFound):
        policy.ensure_can_administer(writer, "secret")
    with pytest.raises(Forbidden, match="needs the admin role in collection 'docs'; the token grants write"):
        policy.ensure_can_administer(writer, "docs")
    with pytest.raises(Forbidden, match="needs the write role in collection 'docs'; the token grants read"):
        policy.ensure_can_write(with_role("acme", "r", {"docs"}, Role.READ), "docs")
    assert policy.administered_collections(writer) == frozenset()
