"""Assertions on the synthesized CloudFormation template, per environment."""

import graphlib
from collections.abc import Mapping
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.app import build_app
from infra.environments import settings_for
from shared.domain.upload_sessions import SESSION_LIFETIME
from tests.infra.template import as_text, dependencies, only


def originals_bucket(template: Template) -> Mapping[str, Any]:
    buckets = template.find_resources(
        "AWS::S3::Bucket", {"Properties": {"VersioningConfiguration": {"Status": "Enabled"}}}
    )
    assert len(buckets) == 1
    return next(iter(buckets.values()))


def test_originals_are_versioned_private_encrypted_and_announced_to_eventbridge(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    properties = originals_bucket(template)["Properties"]
    assert properties["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    encryption = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    template.has_resource_properties(
        "Custom::S3BucketNotifications", {"NotificationConfiguration": {"EventBridgeConfiguration": {}}}
    )


def test_every_bucket_refuses_plain_http(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    buckets = template.find_resources("AWS::S3::Bucket")
    policies = template.find_resources("AWS::S3::BucketPolicy")
    denied = set()
    for policy in policies.values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Effect"] == "Deny" and statement.get("Condition") == {
                "Bool": {"aws:SecureTransport": "false"}
            }:
                denied.add(policy["Properties"]["Bucket"]["Ref"])
    assert denied == set(buckets)


def test_browser_uploads_are_allowed_only_from_the_environments_origins_and_the_consoles(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    cors = originals_bucket(template)["Properties"]["CorsConfiguration"]["CorsRules"]
    assert len(cors) == 1
    # POST: the single presigned POST; PUT: an upload session's parts, whose ETag the browser reads to complete.
    assert cors[0]["AllowedMethods"] == ["POST", "PUT"]
    assert cors[0]["ExposedHeaders"] == ["ETag"]
    distribution_id, _ = only(template.find_resources("AWS::CloudFront::Distribution"))
    console = f"https://<{distribution_id}.DomainName>"
    assert [as_text(origin) for origin in cors[0]["AllowedOrigins"]] == [
        *settings_for(env).cors_allowed_origins,
        console,
    ]
    assert "*" not in cors[0]["AllowedOrigins"]


def test_an_upload_session_left_incomplete_is_aborted_by_storage_a_day_after_it_began(
    synthesized: tuple[str, Template],
) -> None:
    """As a session lasts a day (shared/domain/upload_sessions.SESSION_LIFETIME), and for every key: the parts of
    a crash between beginning an upload and recording its session are freed too."""
    _, template = synthesized
    rules = originals_bucket(template)["Properties"]["LifecycleConfiguration"]["Rules"]
    aborting = [rule for rule in rules if "AbortIncompleteMultipartUpload" in rule]
    assert len(aborting) == 1 and "Prefix" not in aborting[0] and aborting[0]["Status"] == "Enabled"
    assert aborting[0]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": SESSION_LIFETIME.days}


def test_no_resource_refers_to_itself_through_others(synthesized: tuple[str, Template]) -> None:
    """CloudFormation refuses a template whose references go round: the console's CSP, in the distribution's
    response headers policy, would (infra/constructs/console.py)."""
    _, template = synthesized
    graphlib.TopologicalSorter(dependencies(template)).prepare()


def test_retention_follows_the_environment(synthesized: tuple[str, Template]) -> None:
    env, template = synthesized
    bucket = originals_bucket(template)
    if env == "prod":
        assert bucket["DeletionPolicy"] == "Retain"
        assert template.find_resources("Custom::S3AutoDeleteObjects") == {}
    else:
        assert bucket["DeletionPolicy"] == "Delete"
        assert template.find_resources("Custom::S3AutoDeleteObjects")


def test_an_unknown_environment_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="choose one of dev, prod"):
        build_app("staging")


def test_pages_staged_for_textract_expire_under_the_prefix_the_adapter_writes(
    synthesized: tuple[str, Template],
) -> None:
    import inspect

    from shared.adapters.aws.textract_ocr import TextractOcr

    _, template = synthesized
    rules = originals_bucket(template)["Properties"]["LifecycleConfiguration"]["Rules"]
    staging = inspect.signature(TextractOcr).parameters["staging_prefix"].default
    expiring = [rule for rule in rules if rule.get("Prefix") == staging]
    assert len(expiring) == 1 and expiring[0]["ExpirationInDays"] == 1 and expiring[0]["Status"] == "Enabled"
