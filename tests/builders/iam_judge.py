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
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from moto import settings as moto_settings
from moto.core.authorization import ActionAuthenticatorMixin
from moto.iam.access_control import IAMPolicy, IAMRequestBase
from moto.iam.models import iam_backends
from moto.sts import responses as sts_responses
from moto.sts.models import sts_backends

from tests.builders.iam_s3 import (
    first,
    policy_signature,
    post_policy_violations,
    presigned_fields,
    presigned_headers,
    s3_requested,
)
from tests.builders.moto_stack import ACCOUNT, REGION
from tests.infra.policy_evaluation import Request, allowed

_S3_REQUEST: ContextVar[Any] = ContextVar("s3_request_being_authorized")
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

    def note_policy_refusal(self, request: IAMRequestBase, broken: list[str]) -> None:
        """A form POST S3 refuses for what it breaks of its signed policy (recorded as a refused PutObject)."""
        with self._lock:
            self.decisions.append(Decision(request._access_key.arn, "s3:PutObject", "; ".join(broken), False))

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
        yield from s3_requested(request, resource, context)
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
        if action == "sts:AssumeRole" and _request_tags(request._data):
            yield "sts:TagSession", target, context  # passing session tags is a permission of its own
    elif service == "sqs":
        url = body.get("QueueUrl") or first(request._data.get("QueueUrl")) or ""
        target = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{url.rsplit('/', 1)[-1]}" if url else resource
    elif service == "secretsmanager":
        target = body.get("SecretId", "*")
    elif service == "transcribe":
        target = _transcribe_target(action, body, context)
    else:
        target = "*"  # Textract and the rest: actions without resource-level permissions
    yield action, target, context


def _transcribe_target(action: str, body: Mapping[str, Any], context: dict[str, Any]) -> str:
    """A job's ARN for the actions that name one; StartTranscriptionJob has no resource type, and its output's
    bucket and key are its condition keys."""
    if action != "transcribe:StartTranscriptionJob" and isinstance(body.get("TranscriptionJobName"), str):
        return f"arn:aws:transcribe:{REGION}:{ACCOUNT}:transcription-job/{body['TranscriptionJobName']}"
    for key in ("OutputBucketName", "OutputKey"):
        if isinstance(body.get(key), str):
            context[f"transcribe:{key}"] = body[key]
    return "*"


def _json_body(body: bytes | str | None) -> dict[str, Any]:
    if not body:
        return {}
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


@contextmanager
def enforced(judge: IamJudge) -> Iterator[IamJudge]:
    """Within this block every request to moto is authenticated by moto and authorized by `judge`."""
    original_init = IAMRequestBase.__init__
    original_signature = IAMRequestBase.check_signature
    original_s3_authorization = ActionAuthenticatorMixin._authenticate_and_authorize_s3_action
    original_assume = sts_responses.TokenResponse.assume_role

    def check(self: IAMRequestBase, resource: str) -> None:
        judge.judge(self, resource)

    def init(self: IAMRequestBase, **request: Any) -> None:  # moto passes the request by keyword
        data, headers = request["data"], request["headers"]
        presigned = presigned_headers(data, headers)
        if presigned:
            vars(self)["_presigned_fields"] = {name.lower(): first(v) for name, v in data.items()}
            request["headers"] = {**dict(headers.items()), **presigned}
        original_init(self, **request)

    def check_signature(self: IAMRequestBase) -> None:
        fields = presigned_fields(self)
        if fields is None:
            original_signature(self)
        elif "policy" in fields:  # a form POST: its signature is over the policy, which S3 then enforces
            _check_form_post(judge, self, fields)
        # A signed URL's signature is over a canonical request moto does not rebuild: its principal is judged.

    def s3_authorization(self: Any, bucket_name: str | None = None, key_name: str | None = None) -> None:
        token = _S3_REQUEST.set(self)  # the S3 request being authorized, for what IAMRequestBase is not given
        try:
            original_s3_authorization(self, bucket_name=bucket_name, key_name=key_name)
        finally:
            _S3_REQUEST.reset(token)

    def assume_role(self: Any) -> Any:
        answer = original_assume(self)
        tags = _request_tags(self.querystring)
        if tags:
            newest = sts_backends[ACCOUNT]["aws"].assumed_roles[-1]
            judge.remember_session_tags(newest.access_key_id, tags)
        return answer

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(IAMRequestBase, "check_action_permitted", check)
        patch.setattr(IAMRequestBase, "__init__", init)
        patch.setattr(IAMRequestBase, "check_signature", check_signature)
        patch.setattr(ActionAuthenticatorMixin, "_authenticate_and_authorize_s3_action", s3_authorization)
        patch.setattr(sts_responses.TokenResponse, "assume_role", assume_role)
        patch.setattr(moto_settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
        ActionAuthenticatorMixin.request_count = 0
        yield judge


def _check_form_post(judge: IamJudge, request: IAMRequestBase, fields: Mapping[str, Any]) -> None:
    """A browser's form POST: the signature over its policy, then what S3 enforces of the policy."""
    secret = request._access_key.create_credentials().secret_key
    if policy_signature(secret, fields["x-amz-credential"], fields["policy"]) != fields.get("x-amz-signature"):
        request._raise_signature_does_not_match()
    posted = getattr(_S3_REQUEST.get(None), "body", None)  # moto's S3 holds the form's file as its body
    broken = post_policy_violations(fields, len(posted) if isinstance(posted, bytes | str) else None)
    if broken:
        judge.note_policy_refusal(request, broken)
        request._raise_access_denied()
