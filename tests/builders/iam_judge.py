"""IAM enforcement over moto: moto authenticates each request (signature, access key, the role a session is of)
and this judge authorizes it, with the policies moto's IAM holds (those CloudFormation created), by
tests/infra/policy_evaluation.py.

Why not moto's own decision: moto 5.2 matches every service but S3, SQS, IAM and STS against resource `*` (so a
statement scoped to an ARN never allows), never resolves `${aws:PrincipalTag/...}`, treats a condition it cannot
read as an explicit Deny, names some actions by API operation (`lambda:Invoke`), drops session tags, and checks a
role's trust policy against the session's ARN rather than its role's. The judge computes the IAM action and
resource of each request and its request context (the session's tags, `s3:prefix`, TLS), and refuses what IAM
would. docs/testing.md, "Handlers under IAM enforcement".
"""

import json
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse
from xml.etree import ElementTree

from moto import settings as moto_settings
from moto.core.authorization import ActionAuthenticatorMixin
from moto.iam.access_control import IAMPolicy, IAMRequestBase
from moto.iam.models import iam_backends
from moto.sts import responses as sts_responses
from moto.sts.models import sts_backends

from tests.builders.moto_stack import ACCOUNT, REGION
from tests.infra.policy_evaluation import Request, allowed

# IAM's name for an API operation where the two differ.
_ACTIONS = {
    "lambda:Invoke": "lambda:InvokeFunction",
    "lambda:InvokeAsync": "lambda:InvokeFunction",
    "bedrock:Converse": "bedrock:InvokeModel",
    "bedrock:ConverseStream": "bedrock:InvokeModelWithResponseStream",
}


@dataclass(frozen=True)
class Decision:
    principal: str
    action: str
    resource: str
    allowed: bool


@dataclass
class IamJudge:
    """Decides every authenticated request while `enforced()`; remembers each decision."""

    # The bucket policies CloudFormation resolved (bucket name -> statements).
    bucket_policies: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    # Session tags by access key (moto's STS drops them).
    _session_tags: dict[str, dict[str, str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refused(self) -> list[Decision]:
        return [d for d in self.decisions if not d.allowed]

    def judge(self, request: IAMRequestBase, resource: str) -> None:
        key = request._access_key
        principal = key.arn
        for action, target, request_context in _requested(request, resource):
            context = {**request_context, **self._principal_context(key)}
            role_arn = _role_of(principal)
            identity = _statements(key.collect_policies())
            resource_statements = self._resource_statements(action, target)
            decided = allowed(
                Request(action=action, resource=target, principal=role_arn, context=context),
                identity,
                resource_statements,
            )
            if decided and action == "sts:AssumeRole":
                decided = self._trusted(request, target, role_arn, context)
            with self._lock:
                self.decisions.append(Decision(principal, action, target, decided))
            if not decided:
                request._raise_access_denied()

    def allows(self, role_arn: str, action: str, resource: str) -> bool:
        """Whether `role_arn`'s own policies allow `action` on `resource`, for a permission no request to moto
        carries (rds-db:connect: an IAM database token is signed locally and judged by the proxy)."""
        backend = iam_backends[ACCOUNT]["aws"]
        name = role_arn.rsplit("/", 1)[-1]
        policies: list[Any] = [backend.get_role_policy(name, p)[1] for p in backend.list_role_policies(name)]
        policies += backend.list_attached_role_policies(name)[0]
        decided = allowed(
            Request(action=action, resource=resource, principal=role_arn, context={"aws:SecureTransport": "true"}),
            _statements(policies),
        )
        with self._lock:
            self.decisions.append(Decision(role_arn, action, resource, decided))
        return decided

    def _principal_context(self, key: Any) -> dict[str, str]:
        tags = self._session_tags.get(getattr(key, "_access_key_id", ""), {})
        return {f"aws:PrincipalTag/{name}": value for name, value in tags.items()}

    def _resource_statements(self, action: str, resource: str) -> list[Mapping[str, Any]]:
        if not action.startswith("s3:"):
            return []
        bucket = resource.removeprefix("arn:aws:s3:::").split("/", 1)[0]
        return list(self.bucket_policies.get(bucket, []))

    def _trusted(self, request: IAMRequestBase, role_arn: str, principal: str, context: Mapping[str, Any]) -> bool:
        """The assumed role's trust policy must name the caller's role (IAM matches a role's sessions by it)."""
        role = iam_backends[ACCOUNT]["aws"].get_role_by_arn(role_arn)
        trust = json.loads(role.assume_role_policy_document)["Statement"]
        tags = _request_tags(request._data)
        trust_context = {**context, "aws:TagKeys": list(tags)}
        trust_context.update({f"aws:RequestTag/{name}": value for name, value in tags.items()})
        actions = ["sts:AssumeRole"] + (["sts:TagSession"] if tags else [])
        return all(
            allowed(Request(action=a, resource=role_arn, principal=principal, context=trust_context), [], trust)
            for a in actions
        )

    def remember_session_tags(self, access_key_id: str, tags: dict[str, str]) -> None:
        with self._lock:
            self._session_tags[access_key_id] = tags


@contextmanager
def grant_removed(iam: Any, role_name: str, action: str) -> Iterator[None]:
    """`action` taken out of every inline policy of `role_name` (a statement left with no action goes), and put
    back after: the stack as if that grant had been forgotten."""
    originals = {
        name: iam.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"]
        for name in iam.list_role_policies(RoleName=role_name)["PolicyNames"]
    }
    removed = False
    for name, document in originals.items():
        statements = []
        for statement in document["Statement"]:
            actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
            kept = [a for a in actions if a != action]
            removed = removed or len(kept) < len(actions)
            if kept:
                statements.append({**statement, "Action": kept})
        iam.put_role_policy(
            RoleName=role_name, PolicyName=name, PolicyDocument=json.dumps({**document, "Statement": statements})
        )
    assert removed, f"{role_name} has no grant of {action} to take away"
    try:
        yield
    finally:
        for name, document in originals.items():
            iam.put_role_policy(RoleName=role_name, PolicyName=name, PolicyDocument=json.dumps(document))


def _statements(policies: Sequence[Any]) -> list[Mapping[str, Any]]:
    statements: list[Mapping[str, Any]] = []
    for policy in policies:
        # The shapes moto's own IAMPolicy reads: a managed policy, a document, or an inline policy's record.
        listed = IAMPolicy(policy)._policy_json["Statement"]
        statements += listed if isinstance(listed, list) else [listed]
    return statements


def _role_of(principal: str) -> str:
    """arn:aws:sts::A:assumed-role/R/session -> arn:aws:iam::A:role/R (what a policy's Principal names)."""
    match = re.fullmatch(r"arn:aws:sts::(\d+):assumed-role/([^/]+)/.+", principal)
    return f"arn:aws:iam::{match[1]}:role/{match[2]}" if match else principal


def _request_tags(data: Mapping[str, Any]) -> dict[str, str]:
    tags: dict[str, str] = {}
    index = 1
    while f"Tags.member.{index}.Key" in data:
        key, value = data[f"Tags.member.{index}.Key"], data.get(f"Tags.member.{index}.Value", "")
        tags[str(key[0] if isinstance(key, list) else key)] = str(value[0] if isinstance(value, list) else value)
        index += 1
    return tags


def _requested(request: IAMRequestBase, resource: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(IAM action, resource ARN, request context) of each permission the request needs."""
    service = request._action.split(":", 1)[0]
    context: dict[str, Any] = {"aws:SecureTransport": "true"}
    if service == "s3":
        yield from _s3_requested(request, resource, context)
        return
    action = _ACTIONS.get(request._action, request._action)
    body = _json_body(request._body)
    path = unquote(urlparse(request._path).path)
    if service == "states":
        target = body.get("stateMachineArn") or body.get("executionArn") or "*"
    elif service == "lambda":
        match = re.search(r"/functions/([^/]+)/", path)
        name = match[1] if match else "*"
        target = name if name.startswith("arn:") else f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
    elif service == "bedrock":
        match = re.search(r"/model/([^/]+)/", path)
        model = match[1] if match else "*"
        target = model if model.startswith("arn:") else f"arn:aws:bedrock:{REGION}::foundation-model/{model}"
    elif service == "sts":
        target = resource
    elif service == "sqs":
        url = body.get("QueueUrl") or _first(request._data.get("QueueUrl")) or ""
        target = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{url.rsplit('/', 1)[-1]}" if url else resource
    elif service == "secretsmanager":
        target = body.get("SecretId", "*")
    else:
        target = "*"  # Textract and the rest: actions without resource-level permissions
    yield action, target, context


def _s3_requested(request: IAMRequestBase, resource: str, context: dict[str, Any]) -> Iterator[Any]:
    method = request._method.upper()
    query = parse_qs(urlparse(request._path).query, keep_blank_values=True)
    bucket_name, _, key = resource.removeprefix("arn:aws:s3:::").partition("/")
    bucket = f"arn:aws:s3:::{bucket_name}"
    form = _presigned_fields(request) or {}
    if (not key or key == "None") and method == "POST" and "key" in form:
        key = form["key"]  # a browser's form upload names its key in the form
    if not key or key == "None":
        yield from _s3_bucket_requested(request, method, query, bucket, context)
    else:
        yield from _s3_object_requested(request, method, query, f"{bucket}/{key}", context)


def _s3_bucket_requested(
    request: IAMRequestBase, method: str, query: Mapping[str, list[str]], bucket: str, context: dict[str, Any]
) -> Iterator[Any]:
    if method == "POST" and "delete" in query:
        for deleted_key, version in _deleted_keys(request._body):
            yield ("s3:DeleteObjectVersion" if version else "s3:DeleteObject"), f"{bucket}/{deleted_key}", context
    elif method in ("GET", "HEAD"):
        action = "s3:ListBucketVersions" if "versions" in query else "s3:ListBucket"
        prefix = _first(query.get("prefix"))
        yield action, bucket, {**context, **({"s3:prefix": prefix} if prefix is not None else {})}
    else:
        yield f"s3:{request._action.split(':', 1)[1]}", bucket, context


def _s3_object_requested(
    request: IAMRequestBase, method: str, query: Mapping[str, list[str]], target: str, context: dict[str, Any]
) -> Iterator[Any]:
    versioned = "versionId" in query
    if "tagging" in query:
        verb = "Get" if method == "GET" else "Put" if method == "PUT" else "Delete"
        yield f"s3:{verb}Object{'Version' if versioned else ''}Tagging", target, context
    elif method in ("GET", "HEAD"):
        yield ("s3:GetObjectVersion" if versioned else "s3:GetObject"), target, context
    elif method == "DELETE" and "uploadId" in query:
        yield "s3:AbortMultipartUpload", target, context
    elif method == "DELETE":
        yield ("s3:DeleteObjectVersion" if versioned else "s3:DeleteObject"), target, context
    elif method in ("PUT", "POST"):
        headers = {name.lower(): value for name, value in request._headers.items()}
        source = headers.get("x-amz-copy-source")
        if source:
            source_path, _, source_query = unquote(source).lstrip("/").partition("?")
            read = "s3:GetObjectVersion" if "versionId=" in source_query else "s3:GetObject"
            yield read, f"arn:aws:s3:::{source_path}", context
        yield "s3:PutObject", target, context
    else:
        yield request._action, target, context


def _presigned_fields(request: IAMRequestBase) -> dict[str, Any] | None:
    fields: dict[str, Any] | None = vars(request).get("_presigned_fields")
    return fields


def _deleted_keys(body: bytes | str | None) -> list[tuple[str, str | None]]:
    if not body:
        return []
    text = body.decode() if isinstance(body, bytes) else body
    root = ElementTree.fromstring(text)  # noqa: S314 - the request was made by the test's own SDK client
    namespace = root.tag.partition("}")[0] + "}" if root.tag.startswith("{") else ""
    found = []
    for item in root.iter(f"{namespace}Object"):
        key = item.findtext(f"{namespace}Key") or ""
        found.append((key, item.findtext(f"{namespace}VersionId")))
    return found


def _json_body(body: bytes | str | None) -> dict[str, Any]:
    if not body:
        return {}
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


def _presigned(data: Mapping[str, Any], headers: Any) -> dict[str, str] | None:
    """The credential a presigned request carries (a browser's form POST, a signed URL), as headers moto's
    authentication reads; None for a request signed in its Authorization header."""
    if "Authorization" in headers:
        return None
    fields = {name.lower(): _first(value) for name, value in data.items()}
    credential = fields.get("x-amz-credential")
    if credential is None:
        return None
    signature = fields.get("x-amz-signature", "")
    presigned = {
        "Authorization": f"AWS4-HMAC-SHA256 Credential={credential}, SignedHeaders=host, Signature={signature}"
    }
    token = fields.get("x-amz-security-token")
    if token is not None:
        presigned["X-Amz-Security-Token"] = token
    return presigned


def _policy_signature(secret: str, credential: str, policy: str) -> str:
    """SigV4 over a POST policy: the signing key of the credential's date, region and service."""
    import hashlib
    import hmac

    _, day, region, service, _ = credential.split("/")
    key = ("AWS4" + secret).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, policy.encode(), hashlib.sha256).hexdigest()


@contextmanager
def enforced(judge: IamJudge) -> Iterator[IamJudge]:
    """Within this block every request to moto is authenticated by moto and authorized by `judge`."""
    original_check = IAMRequestBase.check_action_permitted
    original_init = IAMRequestBase.__init__
    original_signature = IAMRequestBase.check_signature
    original_assume = sts_responses.TokenResponse.assume_role
    original_count = moto_settings.INITIAL_NO_AUTH_ACTION_COUNT

    def check(self: IAMRequestBase, resource: str) -> None:
        judge.judge(self, resource)

    def init(self: IAMRequestBase, **request: Any) -> None:  # moto passes the request by keyword
        data, headers = request["data"], request["headers"]
        presigned = _presigned(data, headers)
        if presigned:
            vars(self)["_presigned_fields"] = {name.lower(): _first(v) for name, v in data.items()}
            request["headers"] = {**dict(headers.items()), **presigned}
        original_init(self, **request)

    def check_signature(self: IAMRequestBase) -> None:
        fields = _presigned_fields(self)
        if fields is None:
            original_signature(self)
            return
        if "policy" in fields:  # a form POST: its signature is over the policy
            secret = self._access_key.create_credentials().secret_key
            expected = _policy_signature(secret, fields["x-amz-credential"], fields["policy"])
            if expected != fields.get("x-amz-signature"):
                self._raise_signature_does_not_match()
        # A signed URL's signature is over a canonical request moto does not rebuild: its principal is judged.

    def assume_role(self: Any) -> Any:
        answer = original_assume(self)
        tags = _request_tags(self.querystring)
        if tags:
            newest = sts_backends[ACCOUNT]["aws"].assumed_roles[-1]
            judge.remember_session_tags(newest.access_key_id, tags)
        return answer

    IAMRequestBase.check_action_permitted = check  # type: ignore[method-assign]
    IAMRequestBase.__init__ = init  # type: ignore[method-assign, assignment]
    IAMRequestBase.check_signature = check_signature  # type: ignore[method-assign]
    sts_responses.TokenResponse.assume_role = assume_role  # type: ignore[method-assign]
    moto_settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    ActionAuthenticatorMixin.request_count = 0
    try:
        yield judge
    finally:
        moto_settings.INITIAL_NO_AUTH_ACTION_COUNT = original_count
        IAMRequestBase.check_action_permitted = original_check  # type: ignore[method-assign]
        IAMRequestBase.__init__ = original_init  # type: ignore[method-assign]
        IAMRequestBase.check_signature = original_signature  # type: ignore[method-assign]
        sts_responses.TokenResponse.assume_role = original_assume  # type: ignore[method-assign]
