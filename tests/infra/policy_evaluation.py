"""A small evaluator of the synthesized template's IAM and bucket policies, for what moto cannot show.

moto 5.2's IAM enforcement (`moto.iam.access_control.IAMPolicyStatement._match`) matches a resource against
the statement's text with `*` widened and nothing else: it never resolves a policy variable, so under it
`tenants/${aws:PrincipalTag/tenant}/*` matches no key at all, the session's own tenant's included (measured: a
session tagged tenant=a is refused tenants/a/x and tenants/b/x alike; with the literal tenants/a/* it is let
through to a/x only).

This evaluator resolves `${aws:PrincipalTag/...}` (and the CloudFormation intrinsics the template uses) and the
condition operators Quire's policies use, and raises on anything else, so it cannot quietly allow what it does
not understand. It is not IAM: explicit Deny over Allow, an Allow needed from the identity policy (or from a
resource policy naming the principal), and nothing of SCPs, permission boundaries or session policies.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-east-1"
BUCKET = "quire-originals-test"
_VARIABLE = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    principal: str
    # Request context: aws:PrincipalTag/tenant, s3:ExistingObjectTag/..., aws:RequestTag/..., aws:TagKeys (a list)
    context: Mapping[str, str | Sequence[str]] = field(default_factory=dict)


def object_arn(key: str) -> str:
    return f"arn:aws:s3:::{BUCKET}/{key}"


def role_arn(logical_id: str) -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/{logical_id}"


class Template:
    """The template's resources, with their policy documents resolved to plain strings."""

    def __init__(self, resources: Mapping[str, Any]) -> None:
        self._resources = resources

    def resolve(self, value: Any) -> Any:
        if isinstance(value, str | int | bool):
            return value
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if isinstance(value, dict) and len(value) == 1:
            ((function, argument),) = value.items()
            if function == "Fn::Join":
                separator, parts = argument
                return separator.join(str(self.resolve(part)) for part in parts)
            if function == "Fn::GetAtt":
                return self._attribute(*argument)
            if function == "Ref":
                return self._reference(argument)
        if isinstance(value, dict):
            return {name: self.resolve(item) for name, item in value.items()}
        raise ValueError(f"cannot resolve {value!r}")

    def _attribute(self, logical_id: str, attribute: str) -> str:
        kind = self._resources[logical_id]["Type"]
        if (kind, attribute) == ("AWS::S3::Bucket", "Arn"):
            return f"arn:aws:s3:::{self._bucket_name(logical_id)}"
        if (kind, attribute) == ("AWS::IAM::Role", "Arn"):
            return role_arn(logical_id)
        return f"<{logical_id}.{attribute}>"

    def _reference(self, name: str) -> str:
        pseudo = {
            "AWS::Partition": "aws",
            "AWS::AccountId": ACCOUNT,
            "AWS::Region": REGION,
            "AWS::URLSuffix": "amazonaws.com",
        }
        if name in pseudo:
            return pseudo[name]
        if self._resources[name]["Type"] == "AWS::S3::Bucket":
            return self._bucket_name(name)
        return f"<{name}>"

    def _bucket_name(self, logical_id: str) -> str:
        # The originals bucket (the versioned one) is the one these tests name; any other keeps its id.
        versioned = self._resources[logical_id]["Properties"].get("VersioningConfiguration")
        return BUCKET if versioned else logical_id.lower()

    def identity_statements(self, role_id: str) -> list[dict[str, Any]]:
        statements: list[dict[str, Any]] = []
        for policy in self._resources.values():
            if policy["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in policy["Properties"]["Roles"]:
                statements += self.resolve(policy["Properties"]["PolicyDocument"]["Statement"])
        return statements

    def trust_statements(self, role_id: str) -> list[dict[str, Any]]:
        statements: list[dict[str, Any]] = self.resolve(
            self._resources[role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        )
        return statements

    def bucket_statements(self) -> list[dict[str, Any]]:
        statements: list[dict[str, Any]] = []
        for policy in self._resources.values():
            if policy["Type"] == "AWS::S3::BucketPolicy" and self.resolve(policy["Properties"]["Bucket"]) == BUCKET:
                statements += self.resolve(policy["Properties"]["PolicyDocument"]["Statement"])
        return statements


def allowed(
    request: Request, identity: Sequence[Mapping[str, Any]], resource: Sequence[Mapping[str, Any]] = ()
) -> bool:
    """IAM's order within one account: an explicit Deny anywhere refuses; else an Allow is needed."""
    matching = [s for s in identity if _applies(s, request, resource_policy=False)]
    matching += [s for s in resource if _applies(s, request, resource_policy=True)]
    if any(statement["Effect"] == "Deny" for statement in matching):
        return False
    return any(statement["Effect"] == "Allow" for statement in matching)


def _applies(statement: Mapping[str, Any], request: Request, *, resource_policy: bool) -> bool:
    unsupported = {"NotAction", "NotResource", "NotPrincipal"} & set(statement)
    if unsupported:
        raise NotImplementedError(f"this evaluator does not read {sorted(unsupported)}")
    if not any(_like(pattern, request.action, ignore_case=True) for pattern in _listed(statement["Action"])):
        return False
    if resource_policy and not _names_principal(statement.get("Principal"), request.principal):
        return False
    if "Resource" in statement:
        resources = [_substitute(pattern, request.context) for pattern in _listed(statement["Resource"])]
        if not any(pattern is not None and _like(pattern, request.resource) for pattern in resources):
            return False
    return all(
        _condition(operator, key, _listed(expected), request.context)
        for operator, tests in statement.get("Condition", {}).items()
        for key, expected in tests.items()
    )


def _names_principal(principal: Any, arn: str) -> bool:
    if principal == "*":
        return True
    if not isinstance(principal, dict):
        raise NotImplementedError(f"principal {principal!r}")
    named = _listed(principal.get("AWS", []))
    return "*" in named or arn in named


def _condition(operator: str, key: str, expected: list[str], context: Mapping[str, str | Sequence[str]]) -> bool:
    present = key in context
    values = [str(value) for value in _listed(context[key])] if present else []
    wanted = [value for value in (_substitute(v, context) for v in expected) if value is not None]
    equal = any(value in wanted for value in values)
    like = any(_like(pattern, value) for value in values for pattern in wanted)
    outcomes = {
        "StringEquals": present and equal,
        "StringNotEquals": not equal,
        "StringLike": present and like,
        "StringNotLike": not like,
        "Bool": present and any(value.lower() == wanted[0].lower() for value in values),
        "Null": (not present) == (wanted[0] == "true"),
        "ForAllValues:StringEquals": all(value in wanted for value in values),
    }
    if operator not in outcomes:
        raise NotImplementedError(f"condition operator {operator}")
    return outcomes[operator]


def _substitute(pattern: str, context: Mapping[str, str | Sequence[str]]) -> str | None:
    """`${key}` replaced by the request's value; None when the request has no such key (the element then
    matches nothing, as in IAM)."""
    missing = False

    def value(match: re.Match[str]) -> str:
        nonlocal missing
        found = context.get(match[1])
        if not isinstance(found, str):
            missing = True
            return ""
        return found

    resolved = _VARIABLE.sub(value, pattern)
    return None if missing else resolved


def _like(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    """IAM's wildcards: `*` any run of characters (slashes included), `?` one character."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.IGNORECASE if ignore_case else 0) is not None


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
