"""The console capability on the synthesized template, per environment: a private bucket that only the
distribution reads, served over HTTPS under /console/ with a Content-Security-Policy that forbids inline
script, and a config.json that points the console at this environment's API and hosted UI.

The CloudFront Functions are run as deployed (their code from the template) under node, which the CDK itself
runs on.
"""

import json
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.constructs.console import CONFIG_FILE, DEPLOYED_CSP_METADATA, FALLBACK_CSP
from infra.environments import ConsoleDomain, settings_for
from tests.infra.synthesis import Synthesis, synthesized_dev
from tests.infra.template import as_text, only

OWN_DOMAIN = ConsoleDomain(
    name="console.quire.example.com",
    certificate_arn="arn:aws:acm:us-east-1:123456789012:certificate/00000000-0000-0000-0000-000000000000",
)
BLOCK_ALL = {
    "BlockPublicAcls": True,
    "BlockPublicPolicy": True,
    "IgnorePublicAcls": True,
    "RestrictPublicBuckets": True,
}


def distribution(template: Template) -> tuple[str, Mapping[str, Any]]:
    return only(template.find_resources("AWS::CloudFront::Distribution"))


def distribution_config(template: Template) -> Mapping[str, Any]:
    config: Mapping[str, Any] = distribution(template)[1]["Properties"]["DistributionConfig"]
    return config


def console_bucket_id(template: Template) -> str:
    (origin,) = distribution_config(template)["Origins"]
    bucket_id, attribute = origin["DomainName"]["Fn::GetAtt"]
    assert attribute == "RegionalDomainName"
    return str(bucket_id)


def originals_bucket_id(template: Template) -> str:
    versioned = {"Properties": {"VersioningConfiguration": {"Status": "Enabled"}}}
    return only(template.find_resources("AWS::S3::Bucket", versioned))[0]


def access_logs_bucket_id(template: Template) -> str:
    originals = template.find_resources("AWS::S3::Bucket")[originals_bucket_id(template)]
    return str(originals["Properties"]["LoggingConfiguration"]["DestinationBucketName"]["Ref"])


def deployment(template: Template) -> Mapping[str, Any]:
    properties: Mapping[str, Any] = only(template.find_resources("Custom::CDKBucketDeployment"))[1]["Properties"]
    return properties


def deployed_csp(template: Template) -> str:
    return as_text(deployment(template)["UserMetadata"][DEPLOYED_CSP_METADATA])


def directives(csp: str) -> dict[str, list[str]]:
    parsed: dict[str, list[str]] = {}
    for directive in csp.split(";"):
        name, *values = directive.split()
        assert name not in parsed, name
        parsed[name] = values
    return parsed


def deployed_sources(synthesis: Synthesis) -> list[tuple[Path, dict[str, str]]]:
    """Each source of the deployment as staged in the cloud assembly, with its markers' CloudFormation values."""
    properties = deployment(synthesis.template)
    return [
        (
            synthesis.outdir / f"asset.{key.removesuffix('.zip')}",
            {marker: as_text(value) for marker, value in markers.items()},
        )
        for key, markers in zip(properties["SourceObjectKeys"], properties["SourceMarkers"], strict=True)
    ]


def deployed_config(synthesis: Synthesis) -> Any:
    """console/config.json as deployed, each CloudFormation value named as as_text names it."""
    (found,) = [(path / CONFIG_FILE, markers) for path, markers in deployed_sources(synthesis) if markers]
    text = found[0].read_text()
    for marker, value in found[1].items():
        text = text.replace(marker, value)
    return json.loads(text)


def function_code(template: Template, event_type: str) -> str:
    (association,) = [
        association
        for association in distribution_config(template)["DefaultCacheBehavior"]["FunctionAssociations"]
        if association["EventType"] == event_type
    ]
    function_id, attribute = association["FunctionARN"]["Fn::GetAtt"]
    assert attribute == "FunctionARN"
    function = template.find_resources("AWS::CloudFront::Function")[function_id]["Properties"]
    assert function["FunctionConfig"]["Runtime"] == "cloudfront-js-2.0"
    assert function["AutoPublish"] is True
    return str(function["FunctionCode"])


def run_function(code: str, event: Mapping[str, Any]) -> Any:
    node = shutil.which("node")
    assert node, "the CDK runs on node, so it is here"
    script = f"{code}\nprocess.stdout.write(JSON.stringify(handler({json.dumps(event)})));\n"
    result = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True, timeout=60)
    return json.loads(result.stdout)


def test_the_console_bucket_blocks_public_access_is_encrypted_and_logs_its_access(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    bucket_id = console_bucket_id(template)
    bucket = template.find_resources("AWS::S3::Bucket")[bucket_id]
    properties = bucket["Properties"]
    assert properties["PublicAccessBlockConfiguration"] == BLOCK_ALL
    encryption = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert properties["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    assert properties["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": access_logs_bucket_id(template)}
    emptied = [
        resource
        for resource in template.find_resources("Custom::S3AutoDeleteObjects").values()
        if resource["Properties"]["BucketName"] == {"Ref": bucket_id}
    ]
    if settings_for(env).retain_data:
        assert bucket["DeletionPolicy"] == "Retain"
        assert not emptied
    else:
        assert bucket["DeletionPolicy"] == "Delete"
        assert len(emptied) == 1


def test_only_the_distribution_reads_the_console_bucket_through_origin_access_control(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    distribution_id, _ = distribution(template)
    (origin,) = distribution_config(template)["Origins"]
    control_id, attribute = origin["OriginAccessControlId"]["Fn::GetAtt"]
    assert attribute == "Id"
    control = template.find_resources("AWS::CloudFront::OriginAccessControl")[control_id]["Properties"]
    assert control["OriginAccessControlConfig"] == {
        "Name": control["OriginAccessControlConfig"]["Name"],
        "OriginAccessControlOriginType": "s3",
        "SigningBehavior": "always",
        "SigningProtocol": "sigv4",
    }
    # Origin access control, not an origin access identity.
    assert origin["S3OriginConfig"].get("OriginAccessIdentity", "") == ""
    assert template.find_resources("AWS::CloudFront::CloudFrontOriginAccessIdentity") == {}

    bucket_id = console_bucket_id(template)
    (policy,) = [
        policy
        for policy in template.find_resources("AWS::S3::BucketPolicy").values()
        if policy["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    allowed = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    (reader,) = [s for s in allowed if s["Principal"] == {"Service": "cloudfront.amazonaws.com"}]
    assert reader["Action"] == "s3:GetObject"
    assert as_text(reader["Resource"]) == f"<{bucket_id}.Arn>/*"
    assert as_text(reader["Condition"]["StringEquals"]["AWS:SourceArn"]) == (
        f"arn:<AWS::Partition>:cloudfront::<AWS::AccountId>:distribution/<{distribution_id}>"
    )
    # Anyone else allowed is the CDK's handler that empties a dev bucket when the stack is deleted.
    others = [s for s in allowed if s is not reader]
    assert all("AutoDeleteObjects" in as_text(s["Principal"]["AWS"]) for s in others)
    assert bool(others) == (not settings_for(env).retain_data)


def test_the_distribution_redirects_to_https_over_http2_and_3_and_logs_beside_the_buckets(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    config = distribution_config(template)
    behavior = config["DefaultCacheBehavior"]
    assert behavior["ViewerProtocolPolicy"] == "redirect-to-https"
    assert behavior["AllowedMethods"] == ["GET", "HEAD"]
    assert config["HttpVersion"] == "http2and3"
    assert config["Logging"]["Bucket"] == {"Fn::GetAtt": [access_logs_bucket_id(template), "RegionalDomainName"]}
    # On *.cloudfront.net (no console_domain): CloudFront's own certificate and security policy.
    assert "ViewerCertificate" not in config
    assert "Aliases" not in config


def test_every_console_response_carries_hsts_nosniff_no_referrer_and_no_framing(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    policy_id = distribution_config(template)["DefaultCacheBehavior"]["ResponseHeadersPolicyId"]["Ref"]
    policy = template.find_resources("AWS::CloudFront::ResponseHeadersPolicy")[policy_id]
    security = policy["Properties"]["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    hsts = security["StrictTransportSecurity"]
    assert hsts["AccessControlMaxAgeSec"] >= 365 * 24 * 3600
    assert hsts["Override"] is True
    assert security["ContentTypeOptions"] == {"Override": True}
    assert security["ReferrerPolicy"] == {"ReferrerPolicy": "no-referrer", "Override": True}
    assert security["FrameOptions"] == {"FrameOption": "DENY", "Override": True}
    # The CSP names the API and the bucket, which this policy cannot (console.py): the function sets it.
    assert "ContentSecurityPolicy" not in security


def test_the_csp_forbids_inline_script_and_admits_only_the_console_the_api_the_bucket_and_the_sign_in(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    csp = deployed_csp(template)
    assert "unsafe-inline" not in csp
    assert "unsafe-eval" not in csp
    assert "*" not in csp
    api_id, _ = only(template.find_resources("AWS::ApiGatewayV2::Api"))
    domain_id, _ = only(template.find_resources("AWS::Cognito::UserPoolDomain"))
    uploads = f"https://<{originals_bucket_id(template)}>.s3.<AWS::Region>.<AWS::URLSuffix>"
    sign_in = f"https://<{domain_id}>.auth.<AWS::Region>.amazoncognito.com"
    assert directives(csp) == {
        "default-src": ["'none'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "blob:", uploads],
        "media-src": ["'self'", "blob:", uploads],
        "connect-src": ["'self'", f"<{api_id}.ApiEndpoint>", uploads, sign_in],
        "form-action": ["'self'", sign_in],
        "frame-ancestors": ["'none'"],
        "base-uri": ["'none'"],
    }


def test_the_viewer_response_function_makes_the_deployed_csp_the_header_and_a_strict_one_otherwise(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    code = function_code(template, "viewer-response")
    csp = deployed_csp(template)
    (metadata,) = deployment(template)["UserMetadata"]
    served = run_function(
        code, {"response": {"statusCode": 200, "headers": {f"x-amz-meta-{metadata}": {"value": csp}}}}
    )
    assert served["headers"] == {"content-security-policy": {"value": csp}}
    # S3's 403 for a key that is not there carries no metadata: nothing may load in it.
    refused = run_function(code, {"response": {"statusCode": 403, "headers": {}}})
    assert refused["headers"] == {"content-security-policy": {"value": FALLBACK_CSP}}
    assert directives(FALLBACK_CSP)["default-src"] == ["'none'"]
    # A revalidation without it keeps the CSP the browser stored with the page.
    revalidated = run_function(code, {"response": {"statusCode": 304, "headers": {}}})
    assert revalidated["headers"] == {}


def test_the_root_redirects_to_the_console_and_a_directory_serves_its_index(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    code = function_code(template, "viewer-request")
    for uri in ("/", "/console"):
        response = run_function(code, {"request": {"uri": uri, "headers": {}}})
        assert response["statusCode"] == 302, uri
        assert response["headers"]["location"] == {"value": "/console/"}, uri
    assert run_function(code, {"request": {"uri": "/console/", "headers": {}}})["uri"] == "/console/index.html"
    assert run_function(code, {"request": {"uri": "/console/app.js", "headers": {}}})["uri"] == "/console/app.js"


def test_config_json_points_the_console_at_this_environments_api_and_hosted_ui(synthesis: Synthesis) -> None:
    template = synthesis.template
    distribution_id, _ = distribution(template)
    api_id, _ = only(template.find_resources("AWS::ApiGatewayV2::Api"))
    domain_id, _ = only(template.find_resources("AWS::Cognito::UserPoolDomain"))
    client_id, _ = only(template.find_resources("AWS::Cognito::UserPoolClient"))
    console_url = f"https://<{distribution_id}.DomainName>/console/"
    assert deployed_config(synthesis) == {
        # The HTTP API's endpoint: an origin, no trailing slash (the console adds /v1/...).
        "apiBase": f"<{api_id}.ApiEndpoint>",
        "auth": {
            "kind": "cognito",
            "domain": f"https://<{domain_id}>.auth.<AWS::Region>.amazoncognito.com",
            "clientId": f"<{client_id}>",
            "redirectUri": console_url,
            "logoutUri": console_url,
            "scopes": ["openid", "email", "quire/api"],
        },
    }


def test_the_console_is_deployed_under_console_with_its_config_and_invalidated_there(synthesis: Synthesis) -> None:
    template = synthesis.template
    properties = deployment(template)
    assert properties["DestinationBucketName"] == {"Ref": console_bucket_id(template)}
    assert properties["DestinationBucketKeyPrefix"] == "console/"
    assert properties["Prune"] is True
    assert properties["DistributionId"] == {"Ref": distribution(template)[0]}
    assert properties["DistributionPaths"] == ["/console/*"]
    # Every load revalidates (no mix of old and new modules after a deployment).
    assert "max-age=0" in properties["SystemMetadata"]["cache-control"].split(", ")
    # The stand-in console's own config.json (the local stack's) is left out: the generated one is deployed.
    deployed = sorted(path.name for source, _ in deployed_sources(synthesis) for path in source.iterdir())
    assert deployed == ["app.js", "config.json", "index.html"]


@pytest.fixture(scope="module")
def own_domain(tmp_path_factory: pytest.TempPathFactory, package_dirs: tuple[Path, Path]) -> Template:
    """dev with a console_domain, synthesized with the cdk-nag checks: CFR4 (TLS policy) is not acknowledged
    there, so the distribution must comply."""
    return synthesized_dev(tmp_path_factory.mktemp("cdk-console-domain"), package_dirs, console_domain=OWN_DOMAIN)


def test_a_console_domain_of_its_own_gets_tls_1_2_at_least_and_is_the_origin_everything_admits(
    own_domain: Template,
) -> None:
    config = distribution_config(own_domain)
    assert config["Aliases"] == [OWN_DOMAIN.name]
    assert config["ViewerCertificate"] == {
        "AcmCertificateArn": OWN_DOMAIN.certificate_arn,
        "MinimumProtocolVersion": "TLSv1.2_2021",
        "SslSupportMethod": "sni-only",
    }
    origin = f"https://{OWN_DOMAIN.name}"
    client = only(own_domain.find_resources("AWS::Cognito::UserPoolClient"))[1]["Properties"]
    assert f"{origin}/console/" in client["CallbackURLs"]
    assert f"{origin}/console/" in client["LogoutURLs"]
    api = only(own_domain.find_resources("AWS::ApiGatewayV2::Api"))[1]["Properties"]
    assert origin in api["CorsConfiguration"]["AllowOrigins"]
    originals = own_domain.find_resources("AWS::S3::Bucket")[originals_bucket_id(own_domain)]["Properties"]
    assert origin in originals["CorsConfiguration"]["CorsRules"][0]["AllowedOrigins"]
