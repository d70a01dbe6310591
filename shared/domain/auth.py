"""Who is calling: the principal derived from the JWT claims the edge has already verified.

On AWS the API Gateway JWT authorizer (Cognito) verifies the token and hands the Lambda its claims as
strings; locally the HTTP adapter verifies a locally signed token and hands over the same shape. This
module only interprets claims, it never verifies signatures.
"""

import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from shared.domain.errors import Unauthenticated

TENANT_CLAIM = "custom:tenant_id"
COLLECTIONS_CLAIM = "custom:collections"
# The collections the caller may also write to, and administer: each a list like COLLECTIONS_CLAIM.
WRITE_CLAIM = "custom:write_collections"
ADMIN_CLAIM = "custom:admin_collections"
SUBJECT_CLAIM = "sub"

# Tenant and collection ids travel in claims, SQL parameters, S3 key prefixes and logs: keep them boring.
IDENTIFIER_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_COLLECTIONS = 256


def _check_identifier(value: str, what: str) -> str:
    if not IDENTIFIER_PATTERN.fullmatch(value):
        raise ValueError(f"{what} {value!r} must be 1-64 characters of letters, digits, '_', '.', '-'")
    return value


class Role(StrEnum):
    """What a caller may do in one collection; each role includes the ones before it."""

    READ = "read"  # list, read, search, cite
    WRITE = "write"  # upload, new version, edit, rescan, export, delete a file
    ADMIN = "admin"  # delete the collection, approve a replacement, re-index


class Principal(BaseModel):
    """An authenticated caller: one tenant, its role in each collection it may read, and its subject.

    `collections` is every collection the caller may read; `writable` and `administered` are the ones it may
    also write to and administer. A role implies the ones below it, so a collection named only as
    administered is writable and readable too; a caller named with collections alone may only read.
    """

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    subject: str
    collections: frozenset[str]
    writable: frozenset[str] = frozenset()
    administered: frozenset[str] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _roles_include_the_lower_ones(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            administered = frozenset(data.get("administered") or ())
            writable = frozenset(data.get("writable") or ()) | administered
            data = {
                **data,
                "administered": administered,
                "writable": writable,
                "collections": frozenset(data.get("collections") or ()) | writable,
            }
        return data

    @field_validator("tenant_id")
    @classmethod
    def _tenant(cls, value: str) -> str:
        return _check_identifier(value, "tenant id")

    @field_validator("collections")
    @classmethod
    def _collections(cls, value: frozenset[str]) -> frozenset[str]:
        if len(value) > MAX_COLLECTIONS:
            raise ValueError(f"a caller may name at most {MAX_COLLECTIONS} collections, got {len(value)}")
        for collection in value:
            _check_identifier(collection, "collection id")
        return value

    def may_read(self, collection_id: str) -> bool:
        return collection_id in self.collections

    def may_write(self, collection_id: str) -> bool:
        return collection_id in self.writable

    def may_administer(self, collection_id: str) -> bool:
        return collection_id in self.administered

    def role_in(self, collection_id: str) -> Role | None:
        if collection_id in self.administered:
            return Role.ADMIN
        if collection_id in self.writable:
            return Role.WRITE
        return Role.READ if collection_id in self.collections else None

    def roles(self) -> dict[str, Role]:
        """Each readable collection and the caller's highest role in it."""
        return {collection: role for collection in sorted(self.collections) if (role := self.role_in(collection))}


def with_role(tenant_id: str, subject: str, collections: Iterable[str], role: Role) -> Principal:
    """A principal holding `role` in every one of `collections` (the CLI's and the tools' own callers)."""
    named = frozenset(collections)
    return Principal(
        tenant_id=tenant_id,
        subject=subject,
        collections=named,
        writable=named if role in (Role.WRITE, Role.ADMIN) else frozenset(),
        administered=named if role is Role.ADMIN else frozenset(),
    )


def parse_collections(raw: object) -> frozenset[str]:
    """Read the collections claim in every shape it arrives in.

    Cognito custom attributes are strings ("a,b"); API Gateway's JWT authorizer flattens a JSON array
    claim into "[a b]"; a locally decoded token may carry a real list.
    """
    if raw is None or raw == "":
        return frozenset()
    if isinstance(raw, list | tuple):
        items = [str(item) for item in raw]
    elif isinstance(raw, str):
        text = raw.strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        items = re.split(r"[,\s]+", text)
    else:
        raise Unauthenticated("collections claim has an unexpected type")
    return frozenset(item for item in items if item)


def principal_from_claims(claims: Mapping[str, object] | None) -> Principal:
    """Build the principal or raise Unauthenticated; never guesses a tenant or a role."""
    if not claims:
        raise Unauthenticated("no verified claims")
    tenant = claims.get(TENANT_CLAIM)
    subject = claims.get(SUBJECT_CLAIM)
    if not isinstance(tenant, str) or not tenant or not isinstance(subject, str) or not subject:
        raise Unauthenticated("token lacks a tenant or a subject")
    try:
        return Principal(
            tenant_id=tenant,
            subject=subject,
            collections=parse_collections(claims.get(COLLECTIONS_CLAIM)),
            # No role claims, no roles: a token that names collections only may read them and nothing more.
            writable=parse_collections(claims.get(WRITE_CLAIM)),
            administered=parse_collections(claims.get(ADMIN_CLAIM)),
        )
    except ValueError as error:
        raise Unauthenticated(f"token claims are invalid: {error}") from error
