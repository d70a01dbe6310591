"""Credentials scoped to one tenant, and deletion ending access at once, on the synthesized template.

The grants themselves (the roles, their `${aws:PrincipalTag/tenant}` resources, the bucket policy) are read
from the template; what a request would get is decided by tests/infra/policy_evaluation.py, because moto does
not resolve policy variables (that module says how that was measured).
"""

from collections.abc import Mapping
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.constructs.tenant_data import SESSION_HOURS, TENANT_TAG
from shared.adapters.aws.transcribe import job_name, transcript_key
from tests.infra.policy_evaluation import ACCOUNT, BUCKET, REGION, Request, allowed, object_arn, role_arn
from tests.infra.policy_evaluation import Template as Policies
from tests.infra.template import MCP_HANDLER, as_list, is_quire_handler, tenant_data_role_id

TENANT = "${aws:PrincipalTag/tenant}"
RECONCILE = "functions.reconcile.handler.handler"
# Every function that touches a tenant's bytes, and so has a tenant data role.
TENANT_DATA_HANDLERS = {
    "functions.api.handler.handler",
    MCP_HANDLER,
    "functions.render.handler.handler",
    "functions.on_object_created.handler.handler",
    *(
        f"functions.{step}.handler.handler"
        for step in ("inspect", "extract", "recognize", "chunk", "embed", "index", "publish", "record_failure")
    ),
}
FILE = "6f1c2f9e-6a4b-4c0e-9b44-2f8f3c1e0a11"
VERSION = "0b8e1c52-7d3f-4f5e-8f0a-1a2b3c4d5e6f"
OBJECT_ACTIONS = (
    "s3:GetObject",
    "s3:GetObjectVersion",
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:DeleteObjectVersion",
    "s3:PutObjectTagging",
    "s3:PutObjectVersionTagging",
)
# The maximum lifetime of a presigned URL (shared/ports/'s MAX_SIGNED_READ_LIFETIME): a URL signed with a
# session dies with it, so the session must be allowed to outlive it.
MAX_SIGNED_URL_SECONDS = 15 * 60


def original(tenant: str) -> str:
    return f"tenants/{tenant}/files/{FILE}/versions/{VERSION}"


def document(tenant: str) -> str:
    return f"derived/{original(tenant)}/document-1.json"


def functions(template: Template) -> dict[str, Mapping[str, Any]]:
    return {
        function["Properties"]["Handler"]: function
        for function in template.find_resources("AWS::Lambda::Function").values()
        if is_quire_handler(function["Properties"].get("Handler"))
    }


def session(tenant: str, **context: str) -> dict[str, str]:
    return {f"aws:PrincipalTag/{TENANT_TAG}": tenant, "aws:SecureTransport": "true", **context}


def test_every_function_that_touches_tenant_bytes_has_a_tenant_data_role_and_reconcile_alone_has_none(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    with_role = {
        handler
        for handler, function in functions(template).items()
        if "QUIRE_TENANT_DATA_ROLE_ARN" in function["Properties"]["Environment"]["Variables"]
    }
    assert with_role == TENANT_DATA_HANDLERS
    roles = {tenant_data_role_id(functions(template)[handler]) for handler in with_role}
    assert len(roles) == len(with_role), "one role per function: each keeps its own least privilege"


def test_every_object_a_tenant_data_role_names_is_under_the_sessions_tenant(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    policies = Policies(template.to_json()["Resources"])
    for handler in TENANT_DATA_HANDLERS:
        for statement in policies.identity_statements(tenant_data_role_id(functions(template)[handler])):
            for resource in as_list(statement["Resource"]):
                if resource.startswith("arn:aws:s3:::") and "/" in resource:
                    key = resource.split("/", 1)[1]
                    assert key.startswith(
                        (f"tenants/{TENANT}/", f"derived/tenants/{TENANT}/", f"ocr-staging/tenants/{TENANT}/")
                    )
            for prefix in as_list(statement.get("Condition", {}).get("StringLike", {}).get("s3:prefix", [])):
                assert TENANT in prefix, (handler, prefix)


def test_a_session_for_one_tenant_reaches_its_own_objects_and_is_refused_another_tenants(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    policies = Policies(template.to_json()["Resources"])
    bucket = policies.bucket_statements()
    checked = 0
    for handler in TENANT_DATA_HANDLERS:
        role_id = tenant_data_role_id(functions(template)[handler])
        identity = policies.identity_statements(role_id)
        for statement in identity:
            for resource in as_list(statement["Resource"]):
                if TENANT not in resource:
                    continue
                for action in as_list(statement["Action"]):
                    own = resource.replace(TENANT, "acme").replace("*", f"files/{FILE}/versions/{VERSION}")
                    foreign = own.replace("/acme/", "/globex/")
                    principal = role_arn(role_id)
                    assert allowed(Request(action, own, principal, session("acme")), identity, bucket), (handler, own)
                    assert not allowed(Request(action, foreign, principal, session("acme")), identity, bucket), (
                        handler,
                        foreign,
                    )
                    checked += 1
    assert checked > 30
    # The upload a presigned POST makes, and the read a presigned GET makes, for the API's caller's tenant only.
    api_role = tenant_data_role_id(functions(template)["functions.api.handler.handler"])
    api = policies.identity_statements(api_role)
    # Upload sessions too: the parts (s3:PutObject), what S3 holds and aborting.
    for action in ("s3:PutObject", "s3:GetObjectVersion", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"):
        assert allowed(Request(action, object_arn(original("acme")), role_arn(api_role), session("acme")), api, bucket)
        refused = Request(action, object_arn(original("globex")), role_arn(api_role), session("acme"))
        assert not allowed(refused, api, bucket)
    # A session without the tag (not one this role's trust policy would hand out) reaches nothing.
    untagged = Request(
        "s3:GetObject", object_arn(original("acme")), role_arn(api_role), {"aws:SecureTransport": "true"}
    )
    assert not allowed(untagged, api, bucket)


def test_no_function_role_but_reconciles_reaches_any_tenants_object(synthesized: tuple[str, Template]) -> None:
    """Code that forgets the tenant, or that runs with the function's own credentials, reaches nothing;
    reconciliation's sweep walks every tenant's objects to remove deleted files, so its role does."""
    _, template = synthesized
    policies = Policies(template.to_json()["Resources"])
    reached: dict[str, set[str]] = {}
    for handler, function in functions(template).items():
        role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
        identity = policies.identity_statements(role_id)
        for key in (original("acme"), document("acme"), f"ocr-staging/{original('acme')}/{VERSION}.pdf"):
            for action in OBJECT_ACTIONS:
                if allowed(Request(action, object_arn(key), role_arn(role_id), session("acme")), identity):
                    reached.setdefault(handler, set()).add(action)
    assert set(reached) == {RECONCILE}
    assert reached[RECONCILE] == {
        "s3:GetObject",
        "s3:GetObjectVersion",
        "s3:DeleteObject",
        "s3:DeleteObjectVersion",
        "s3:PutObjectTagging",
        "s3:PutObjectVersionTagging",
    }


def test_only_its_functions_role_may_start_a_session_and_only_tagged_with_one_tenant(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    resources = template.to_json()["Resources"]
    policies = Policies(resources)
    api = functions(template)["functions.api.handler.handler"]
    data_role = tenant_data_role_id(api)
    trust = policies.trust_statements(data_role)
    caller = role_arn(api["Properties"]["Role"]["Fn::GetAtt"][0])
    other = role_arn(functions(template)["functions.extract.handler.handler"]["Properties"]["Role"]["Fn::GetAtt"][0])
    target = role_arn(data_role)

    def may_assume(principal: str, tags: dict[str, str]) -> bool:
        context: dict[str, Any] = {f"aws:RequestTag/{key}": value for key, value in tags.items()}
        context["aws:TagKeys"] = list(tags)
        return all(
            allowed(Request(action, target, principal, context), [], trust)
            for action in ("sts:AssumeRole", *(["sts:TagSession"] if tags else []))
        )

    assert may_assume(caller, {TENANT_TAG: "acme"})
    assert not may_assume(caller, {})
    assert not may_assume(caller, {TENANT_TAG: ""})
    assert not may_assume(caller, {TENANT_TAG: "acme", "role": "admin"})
    # A slash would stretch tenants/${tag}/ into another tenant's folder.
    assert not may_assume(caller, {TENANT_TAG: "acme/files"})
    assert not may_assume(other, {TENANT_TAG: "acme"})
    # Role chaining caps the session at an hour; a presigned URL signed with it must be able to live 15 minutes.
    assert resources[data_role]["Properties"]["MaxSessionDuration"] == SESSION_HOURS * 3600 >= MAX_SIGNED_URL_SECONDS
    # And the function's own role may ask for it.
    own = policies.identity_statements(api["Properties"]["Role"]["Fn::GetAtt"][0])
    assert allowed(Request("sts:TagSession", target, caller), own) and allowed(
        Request("sts:AssumeRole", target, caller), own
    )


@pytest.mark.parametrize("action", ["s3:GetObject", "s3:GetObjectVersion"])
def test_a_version_tagged_deleted_is_refused_to_every_principal_presigned_urls_included(
    synthesized: tuple[str, Template], action: str
) -> None:
    """A presigned GET is the signer's request: refusing the signer the version refuses the URL."""
    _, template = synthesized
    policies = Policies(template.to_json()["Resources"])
    bucket = policies.bucket_statements()
    deleted = {"s3:ExistingObjectTag/quire:deleted": "true"}
    key = object_arn(original("acme"))
    # The bucket policy refuses it whatever an identity policy allows.
    everyone = [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]
    assert allowed(Request(action, key, "arn:aws:iam::123456789012:root", {}), everyone, bucket)
    assert not allowed(Request(action, key, "arn:aws:iam::123456789012:root", deleted), everyone, bucket)
    api_role = tenant_data_role_id(functions(template)["functions.api.handler.handler"])
    api = policies.identity_statements(api_role)
    assert allowed(Request(action, key, role_arn(api_role), session("acme")), api, bucket)
    assert not allowed(Request(action, key, role_arn(api_role), session("acme", **deleted)), api, bucket)
    # Even the one role that reaches every tenant.
    reconcile_role = functions(template)[RECONCILE]["Properties"]["Role"]["Fn::GetAtt"][0]
    reconcile = policies.identity_statements(reconcile_role)
    assert allowed(Request(action, key, role_arn(reconcile_role), session("acme")), reconcile, bucket)
    assert not allowed(Request(action, key, role_arn(reconcile_role), session("acme", **deleted)), reconcile, bucket)


def test_the_deleted_tag_cannot_be_taken_off_again(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    policies = Policies(template.to_json()["Resources"])
    bucket = policies.bucket_statements()
    anyone = [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]
    key = object_arn(original("acme"))
    deleted = {"s3:ExistingObjectTag/quire:deleted": "true", "aws:SecureTransport": "true"}
    # Tagging it deleted in the first place, and retagging that keeps it (GuardDuty adds its verdict so).
    assert allowed(
        Request("s3:PutObjectVersionTagging", key, "someone", {"aws:SecureTransport": "true"}), anyone, bucket
    )
    kept = {**deleted, "s3:RequestObjectTag/quire:deleted": "true"}
    assert allowed(Request("s3:PutObjectVersionTagging", key, "someone", kept), anyone, bucket)
    for action in (
        "s3:PutObjectTagging",
        "s3:PutObjectVersionTagging",
        "s3:DeleteObjectTagging",
        "s3:DeleteObjectVersionTagging",
    ):
        assert not allowed(Request(action, key, "someone", deleted), anyone, bucket), action


def test_a_recognize_session_may_start_transcription_only_into_its_own_tenants_derived_objects(
    synthesized: tuple[str, Template],
) -> None:
    """Transcribe reads the recording and writes its output as its caller: the session's S3 grants bound both, and
    the start itself may name no output but the session's tenant's derived objects in the originals bucket."""
    _, template = synthesized
    policies = Policies(template.to_json()["Resources"])
    bucket = policies.bucket_statements()
    role_id = tenant_data_role_id(functions(template)["functions.recognize.handler.handler"])
    identity = policies.identity_statements(role_id)
    principal = role_arn(role_id)
    name = job_name(f"{VERSION}-1")
    output = transcript_key(original("acme"), name)

    def may_start(**output_keys: str) -> bool:
        context = session("acme", **{f"transcribe:{key}": value for key, value in output_keys.items()})
        return allowed(Request("transcribe:StartTranscriptionJob", "*", principal, context), identity, bucket)

    assert may_start(OutputBucketName=BUCKET, OutputKey=output)
    assert not may_start(OutputBucketName=BUCKET, OutputKey=transcript_key(original("globex"), name))
    assert not may_start(OutputBucketName=BUCKET, OutputKey=f"{original('acme')}.json")  # over the originals
    assert not may_start(OutputBucketName="a-bucket-elsewhere", OutputKey=output)
    assert not may_start()  # no output named: Transcribe's own bucket, which nobody here controls
    # What Transcribe then does with the session's permissions, and the adapter after it: read the recording, write
    # the output, read it back, list and remove its versions. For the session's tenant only.
    for action, key in (
        ("s3:GetObject", original("acme")),
        ("s3:PutObject", output),
        ("s3:GetObject", output),
        ("s3:DeleteObjectVersion", output),
    ):
        assert allowed(Request(action, object_arn(key), principal, session("acme")), identity, bucket), action
        foreign = object_arn(key.replace("/acme/", "/globex/"))
        assert not allowed(Request(action, foreign, principal, session("acme")), identity, bucket), action
    listing = Request(
        "s3:ListBucketVersions", f"arn:aws:s3:::{BUCKET}", principal, session("acme", **{"s3:prefix": output})
    )
    assert allowed(listing, identity, bucket)
    # A job's Get and Delete name Quire's jobs only.
    job = f"arn:aws:transcribe:{REGION}:{ACCOUNT}:transcription-job/{name}"
    for action in ("transcribe:GetTranscriptionJob", "transcribe:DeleteTranscriptionJob"):
        assert allowed(Request(action, job, principal, session("acme")), identity, bucket), action
        other = job.replace("/quire-", "/someone-elses-")
        assert not allowed(Request(action, other, principal, session("acme")), identity, bucket), action
