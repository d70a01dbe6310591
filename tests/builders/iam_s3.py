"""S3 requests as IAM judges them, for tests/builders/iam_judge.py: each request's actions, resources and request
context, and what S3 itself enforces of a browser's form POST (its policy's conditions and expiry).

Beyond the operation's own action: a read of a key that is not there also needs `s3:ListBucket` (S3 answers 404
only to a caller that may list the bucket, 403 to anyone else); a copy reads its source; a PUT with tags also
needs `s3:PutObjectTagging`; an existing object's tags are `s3:ExistingObjectTag/<key>` and a PUT's are
`s3:RequestObjectTag/<key>`.
"""

import base64
import hashlib
import hmac
import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, parse_qsl, unquote, urlparse
from xml.etree import ElementTree

from moto.iam.access_control import IAMRequestBase
from moto.s3.models import s3_backends

from tests.builders.moto_stack import ACCOUNT

# Permission: (IAM action, resource ARN, request context).
Permission = tuple[str, str, dict[str, Any]]
# The actions S3 gives s3:ExistingObjectTag/<key> for (AWS's list of the condition key's actions).
_EXISTING_TAG_ACTIONS = frozenset(
    {
        "s3:GetObject",
        "s3:GetObjectVersion",
        "s3:GetObjectAcl",
        "s3:GetObjectVersionAcl",
        "s3:GetObjectTagging",
        "s3:GetObjectVersionTagging",
        "s3:PutObjectTagging",
        "s3:PutObjectVersionTagging",
        "s3:DeleteObjectTagging",
        "s3:DeleteObjectVersionTagging",
    }
)
# Bucket-level operations whose IAM action is not their operation's name.
_BUCKET_ACTIONS = {
    "s3:HeadBucket": "s3:ListBucket",
    "s3:ListObjects": "s3:ListBucket",
    "s3:ListObjectsV2": "s3:ListBucket",
    "s3:ListObjectVersions": "s3:ListBucketVersions",
    "s3:ListMultipartUploads": "s3:ListBucketMultipartUploads",
}


def s3_requested(request: IAMRequestBase, resource: str, context: dict[str, Any]) -> Iterator[Permission]:
    method = request._method.upper()
    query = parse_qs(urlparse(request._path).query, keep_blank_values=True)
    bucket_name, _, key = resource.removeprefix("arn:aws:s3:::").partition("/")
    form = presigned_fields(request) or {}
    if (not key or key == "None") and method == "POST" and "key" in form:
        key = form["key"]  # a browser's form upload names its key in the form
    if not key or key == "None":
        yield from _bucket_requested(request, method, query, bucket_name, context)
    else:
        yield from _object_requested(request, method, query, bucket_name, key, context=context)


def _bucket_requested(
    request: IAMRequestBase, method: str, query: Mapping[str, list[str]], bucket_name: str, context: dict[str, Any]
) -> Iterator[Permission]:
    bucket = f"arn:aws:s3:::{bucket_name}"
    operation = f"s3:{request._action.split(':', 1)[1]}"
    action = _BUCKET_ACTIONS.get(operation, operation)
    if method == "POST" and "delete" in query:
        for deleted_key, version in _deleted_keys(request._body):
            yield ("s3:DeleteObjectVersion" if version else "s3:DeleteObject"), f"{bucket}/{deleted_key}", context
    elif action in ("s3:ListBucket", "s3:ListBucketVersions") and operation != "s3:HeadBucket":
        prefix = first(query.get("prefix"))
        yield action, bucket, {**context, **({"s3:prefix": prefix} if prefix is not None else {})}
    else:  # GetBucketVersioning, GetBucketLocation, HeadBucket (s3:ListBucket, no prefix), ...
        yield action, bucket, context


def _object_requested(
    request: IAMRequestBase,
    method: str,
    query: Mapping[str, list[str]],
    bucket_name: str,
    key: str,
    *,
    context: dict[str, Any],
) -> Iterator[Permission]:
    target = f"arn:aws:s3:::{bucket_name}/{key}"
    version_id = first(query.get("versionId"))
    versioned = "Version" if version_id is not None else ""
    headers = {name.lower(): value for name, value in request._headers.items()}
    present, tags = stored_object(bucket_name, key, version_id)
    if "tagging" in query and method == "PUT":
        action = f"s3:PutObject{versioned}Tagging"
        context = {**context, **_request_tags(_tagging_body(request._body))}
    elif "tagging" in query:
        action = f"s3:{'Get' if method == 'GET' else 'Delete'}Object{versioned}Tagging"
    elif method in ("GET", "HEAD") and "acl" in query:
        action = f"s3:GetObject{versioned}Acl"
    elif method in ("GET", "HEAD") and "attributes" in query:
        action = f"s3:GetObject{versioned}Attributes"
    elif method in ("GET", "HEAD"):
        action = f"s3:GetObject{versioned}"
        if not present:
            # Missing: a 404 only for a caller that may list the bucket (a HEAD carries no prefix), else 403.
            yield "s3:ListBucket", f"arn:aws:s3:::{bucket_name}", context
    elif method == "DELETE" and "uploadId" in query:
        action = "s3:AbortMultipartUpload"
    elif method == "DELETE":
        action = f"s3:DeleteObject{versioned}"
    elif method in ("PUT", "POST"):
        yield from _written(headers, target, context)
        return
    else:
        action = request._action
    existing = {f"s3:ExistingObjectTag/{name}": value for name, value in tags.items()}
    yield action, target, {**context, **(existing if action in _EXISTING_TAG_ACTIONS else {})}


def _written(headers: Mapping[str, str], target: str, context: dict[str, Any]) -> Iterator[Permission]:
    """A PUT (or a part of one, or a copy): the write, what a copy reads, and the tags it sets."""
    source = headers.get("x-amz-copy-source")
    if source:
        source_path, _, source_query = unquote(source).lstrip("/").partition("?")
        source_bucket, _, source_key = source_path.partition("/")
        source_version = dict(parse_qsl(source_query)).get("versionId")
        read = "s3:GetObjectVersion" if source_version else "s3:GetObject"
        _, source_tags = stored_object(source_bucket, source_key, source_version)
        existing = {f"s3:ExistingObjectTag/{name}": value for name, value in source_tags.items()}
        yield read, f"arn:aws:s3:::{source_path}", {**context, **existing}
    tags = dict(parse_qsl(headers.get("x-amz-tagging", "")))
    requested = _request_tags(tags)
    yield "s3:PutObject", target, {**context, **requested}
    if tags:
        yield "s3:PutObjectTagging", target, {**context, **requested}


def _request_tags(tags: Mapping[str, str]) -> dict[str, Any]:
    requested: dict[str, Any] = {f"s3:RequestObjectTag/{name}": value for name, value in tags.items()}
    if tags:
        requested["s3:RequestObjectTagKeys"] = list(tags)
    return requested


def _tagging_body(body: bytes | str | None) -> dict[str, str]:
    """The tags of a PutObjectTagging request's <Tagging> document."""
    if not body:
        return {}
    root = ElementTree.fromstring(body)  # noqa: S314 - the request was made by the test's own SDK client
    namespace = root.tag.partition("}")[0] + "}" if root.tag.startswith("{") else ""
    return {
        tag.findtext(f"{namespace}Key") or "": tag.findtext(f"{namespace}Value") or ""
        for tag in root.iter(f"{namespace}Tag")
    }


def stored_object(bucket: str, key: str, version_id: str | None) -> tuple[bool, dict[str, str]]:
    """Whether moto's S3 holds the object (that version), and its tags."""
    backend = s3_backends[ACCOUNT]["aws"]
    try:
        found = backend.get_object(bucket, key, version_id)
    except Exception:  # a bucket that is not there, a version id that names nothing
        return False, {}
    if found is None:
        return False, {}
    listed = backend.get_object_tagging(found).get("Tags", [])
    return True, {tag["Key"]: tag["Value"] for tag in listed}


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


def first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


def presigned_fields(request: IAMRequestBase) -> dict[str, Any] | None:
    fields: dict[str, Any] | None = vars(request).get("_presigned_fields")
    return fields


def presigned_headers(data: Mapping[str, Any], headers: Any) -> dict[str, str] | None:
    """The credential a presigned request carries (a browser's form POST, a signed URL), as headers moto's
    authentication reads; None for a request signed in its Authorization header."""
    if "Authorization" in headers:
        return None
    fields = {name.lower(): first(value) for name, value in data.items()}
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


def policy_signature(secret: str, credential: str, policy: str) -> str:
    """SigV4 over a POST policy: the signing key of the credential's date, region and service."""
    _, day, region, service, _ = credential.split("/")
    key = ("AWS4" + secret).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, policy.encode(), hashlib.sha256).hexdigest()


def post_policy_violations(fields: Mapping[str, Any], size: int | None) -> list[str]:
    """What a form POST breaks of its signed policy, as S3 checks it: the expiry, each exact match (`{"f": v}`,
    `["eq", "$f", v]`), each `starts-with`, and `content-length-range` against the file's `size`."""
    policy = json.loads(base64.b64decode(fields["policy"]))
    broken = []
    expires = datetime.fromisoformat(policy["expiration"].replace("Z", "+00:00"))
    if expires <= datetime.now(UTC):
        broken.append(f"the policy expired at {policy['expiration']}")
    for written in policy.get("conditions", []):
        condition = (
            ["eq", *next(iter((f"${n}", v) for n, v in written.items()))] if isinstance(written, dict) else written
        )
        operator, subject, *rest = condition
        if operator == "content-length-range":
            low, high = int(subject), int(rest[0])
            if size is None or not low <= size <= high:
                broken.append(f"the file's {size} bytes are outside {low}..{high}")
            continue
        name = subject.removeprefix("$").lower()
        if name == "bucket":
            continue  # the request went to the bucket the URL names, which the policy signed
        value = str(fields.get(name, ""))
        if operator == "eq" and value != str(rest[0]):
            broken.append(f"{name} is {value!r}, the policy says {rest[0]!r}")
        elif operator == "starts-with" and not value.startswith(str(rest[0])):
            broken.append(f"{name} {value!r} does not start with {rest[0]!r}")
    return broken
