"""The browser console: the static files of `console/` in a private bucket, served under `/console/` by a
CloudFront distribution that alone may read them (origin access control), with a strict Content-Security-Policy.

Built in two steps because of what refers to what. The distribution's domain is wanted by the API's CORS, the
originals bucket's CORS and the app client's redirect URLs, so the distribution comes first (`Console(...)`)
and its origin is passed to them. The CSP and config.json name the API, the originals bucket and the sign-in
domain, so they come last (`publish(...)`), with the files. The CSP cannot sit in the distribution's response
headers policy: the distribution needs that policy, the policy would need the API and the bucket, and those
need the distribution's domain (a cycle CloudFormation refuses). So the deployment writes it on every object
as metadata (`x-amz-meta-content-security-policy`, DEPLOYED_CSP_METADATA), and a viewer-response function
turns that into the `Content-Security-Policy` header (a response without it, such as S3's 403 for a key that
is not there, gets FALLBACK_CSP). The static headers (HSTS, nosniff, referrer, frame options) are the policy's.
"""

from collections.abc import Sequence
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from infra.constructs.functions import acknowledge, log_retention
from infra.environments import EnvironmentSettings

# The repo's console/ (index.html, app.css, app.js and its modules; no build step).
CONSOLE_DIR = Path(__file__).resolve().parents[2] / "console"
# Where the console lives on the distribution, and the key prefix its files are deployed under.
CONSOLE_PATH = "/console/"
CONSOLE_PREFIX = "console/"
CONFIG_FILE = "config.json"
# The object metadata the deployment writes the CSP into (S3 returns it as x-amz-meta-<key>).
DEPLOYED_CSP_METADATA = "content-security-policy"
# For a response that carries no deployed CSP (an error from S3): nothing may load, nothing may frame it.
FALLBACK_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
HSTS_MAX_AGE = cdk.Duration.days(730)

# Viewer request: `/` and `/console` go to `/console/` (a redirect, so the page's relative URLs resolve under
# /console/), and a directory is its index.html (S3 behind OAC has no index documents).
_DIRECTORY_INDEX = """\
function handler(event) {
  var request = event.request;
  var uri = request.uri;
  if (uri === "/" || uri === "/console") {
    return { statusCode: 302, statusDescription: "Found", headers: { location: { value: "/console/" } } };
  }
  if (uri.charAt(uri.length - 1) === "/") {
    request.uri = uri + "index.html";
  }
  return request;
}
"""

# Viewer response: the CSP the deployment wrote on the object becomes the header. A 304 without it is left
# alone: the browser keeps the CSP it stored with the response it revalidated.
_CSP_FROM_METADATA = f"""\
var DEPLOYED = "x-amz-meta-{DEPLOYED_CSP_METADATA}";
var FALLBACK = "{FALLBACK_CSP}";
function handler(event) {{
  var response = event.response;
  var headers = response.headers;
  var deployed = headers[DEPLOYED];
  delete headers[DEPLOYED];
  if (deployed && deployed.value) {{
    headers["content-security-policy"] = {{ value: deployed.value }};
  }} else if (response.statusCode !== 304) {{
    headers["content-security-policy"] = {{ value: FALLBACK }};
  }}
  return response;
}}
"""


def content_security_policy(*, api_origin: str, uploads_origin: str, sign_in_origin: str) -> str:
    """No inline script or style, no plugins, no framing; scripts and styles from the console itself; images and
    a cited recording also from the originals bucket (signed reads) and blob: (what the API itself answers);
    requests to the console, the API, the bucket (the presigned POST upload) and the sign-in domain (the token
    endpoint)."""
    return "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            f"img-src 'self' blob: {uploads_origin}",
            f"media-src 'self' blob: {uploads_origin}",
            f"connect-src 'self' {api_origin} {uploads_origin} {sign_in_origin}",
            f"form-action 'self' {sign_in_origin}",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        )
    )


class Console(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        access_logs: s3.IBucket,
        source_dir: Path = CONSOLE_DIR,
    ) -> None:
        super().__init__(scope, construct_id)
        if not (source_dir / "index.html").is_file():
            raise FileNotFoundError(f"{source_dir}/index.html: the console to deploy is not there")
        self._source_dir = source_dir
        self._settings = settings
        removal = cdk.RemovalPolicy.RETAIN if settings.retain_data else cdk.RemovalPolicy.DESTROY
        self._removal = removal
        self.bucket = s3.Bucket(
            self,
            "Site",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="console/",
            removal_policy=removal,
            auto_delete_objects=not settings.retain_data,
        )
        self.distribution = self._distribution(settings, access_logs)
        domain = settings.console_domain.name if settings.console_domain else self.distribution.distribution_domain_name
        # What the API's and the bucket's CORS admit, and (with CONSOLE_PATH) the app client's redirect URL.
        self.origin = f"https://{domain}"
        self.url = f"{self.origin}{CONSOLE_PATH}"
        cdk.CfnOutput(self, "ConsoleUrl", value=self.url)

    def _distribution(self, settings: EnvironmentSettings, access_logs: s3.IBucket) -> cloudfront.Distribution:
        headers = cloudfront.ResponseHeadersPolicy(
            self,
            "Headers",
            comment=f"Quire {settings.name} console: HSTS, nosniff, no referrer, no framing (the CSP: see console.py)",
            security_headers_behavior=cloudfront.ResponseSecurityHeadersBehavior(
                strict_transport_security=cloudfront.ResponseHeadersStrictTransportSecurity(
                    access_control_max_age=HSTS_MAX_AGE, include_subdomains=True, preload=False, override=True
                ),
                content_type_options=cloudfront.ResponseHeadersContentTypeOptions(override=True),
                referrer_policy=cloudfront.ResponseHeadersReferrerPolicy(
                    referrer_policy=cloudfront.HeadersReferrerPolicy.NO_REFERRER, override=True
                ),
                frame_options=cloudfront.ResponseHeadersFrameOptions(
                    frame_option=cloudfront.HeadersFrameOption.DENY, override=True
                ),
            ),
        )
        functions = [
            cloudfront.FunctionAssociation(
                event_type=event_type,
                function=cloudfront.Function(
                    self,
                    name,
                    code=cloudfront.FunctionCode.from_inline(code),
                    runtime=cloudfront.FunctionRuntime.JS_2_0,
                    comment=comment,
                ),
            )
            for name, event_type, code, comment in (
                (
                    "DirectoryIndex",
                    cloudfront.FunctionEventType.VIEWER_REQUEST,
                    _DIRECTORY_INDEX,
                    "Quire console: / to /console/, a directory to its index.html",
                ),
                (
                    "ContentSecurityPolicy",
                    cloudfront.FunctionEventType.VIEWER_RESPONSE,
                    _CSP_FROM_METADATA,
                    "Quire console: the deployed Content-Security-Policy as a header",
                ),
            )
        ]
        custom = settings.console_domain
        distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment=f"Quire {settings.name} console",
            default_behavior=cloudfront.BehaviorOptions(
                # Origin access control (SigV4 from CloudFront), read only: the bucket policy admits this
                # distribution alone.
                origin=origins.S3BucketOrigin.with_origin_access_control(self.bucket),
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_GET_HEAD,
                cache_policy=cloudfront.CachePolicy.CACHING_OPTIMIZED,
                response_headers_policy=headers,
                function_associations=functions,
                compress=True,
            ),
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            domain_names=[custom.name] if custom else None,
            certificate=(
                acm.Certificate.from_certificate_arn(self, "Certificate", custom.certificate_arn) if custom else None
            ),
            # Only a certificate of one's own can carry it: *.cloudfront.net's policy is CloudFront's (below).
            minimum_protocol_version=cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021 if custom else None,
            # Standard logs beside the buckets' access logs (that bucket keeps ACLs on for CloudFront's delivery).
            enable_logging=True,
            log_bucket=access_logs,
            log_file_prefix="console-cdn/",
        )
        if not custom:
            acknowledge(
                distribution,
                "CFR4",
                "Served on the distribution's own *.cloudfront.net name, whose certificate's security policy "
                "CloudFront sets itself and no distribution can raise; browsers negotiate TLS 1.2 or 1.3 with it "
                "anyway. An environment's console_domain (a name and an ACM certificate of its own) sets "
                "TLSv1.2_2021 as the minimum.",
            )
        acknowledge(
            distribution,
            "CFR1",
            "The console is for an operator-provisioned user pool's users wherever they are; the data behind it is "
            "guarded by sign-in, not by country.",
        )
        acknowledge(
            distribution,
            "CFR2",
            "Static files only (GET and HEAD, cached): nothing for a WAF to inspect here. The API it calls has its "
            "own throttling and authorizer.",
        )
        return distribution

    def publish(
        self,
        *,
        api_base: str,
        uploads_bucket: s3.IBucket,
        sign_in_domain: str,
        client_id: str,
        scopes: Sequence[str],
    ) -> s3deploy.BucketDeployment:
        """Deploy the console's files and its config.json under CONSOLE_PREFIX, each carrying the CSP, and
        invalidate the distribution's copies. `api_base` is the API's URL without a trailing slash (an origin),
        `sign_in_domain` the hosted UI's `https://` base URL."""
        stack = cdk.Stack.of(self)
        # The host presigned uploads and reads are signed for (shared/bootstrap/clients.py names the regional endpoint).
        uploads_origin = f"https://{uploads_bucket.bucket_name}.s3.{stack.region}.{stack.url_suffix}"
        self.csp = content_security_policy(
            api_origin=api_base, uploads_origin=uploads_origin, sign_in_origin=sign_in_domain
        )
        self.config = {
            "apiBase": api_base,
            "auth": {
                "kind": "cognito",
                "domain": sign_in_domain,
                "clientId": client_id,
                "redirectUri": self.url,
                "logoutUri": self.url,
                "scopes": list(scopes),
            },
        }
        deployment = s3deploy.BucketDeployment(
            self,
            "Deployment",
            sources=[
                # A config.json of the local stack's next to the files is not this one.
                s3deploy.Source.asset(str(self._source_dir), exclude=[CONFIG_FILE, ".*"]),
                s3deploy.Source.json_data(CONFIG_FILE, self.config),
            ],
            destination_bucket=self.bucket,
            destination_key_prefix=CONSOLE_PREFIX,
            # Files dropped from console/ are removed; nothing else lives in this bucket.
            prune=True,
            metadata={DEPLOYED_CSP_METADATA: self.csp},
            # Browsers revalidate every file on every load (a 304 from the edge when unchanged), so a deployment
            # never mixes old and new modules; the edge keeps them until this deployment's invalidation.
            cache_control=[
                s3deploy.CacheControl.max_age(cdk.Duration.seconds(0)),
                s3deploy.CacheControl.s_max_age(cdk.Duration.days(365)),
            ],
            distribution=self.distribution,
            distribution_paths=[f"{CONSOLE_PATH}*"],
            log_group=logs.LogGroup(
                self,
                "DeploymentLogs",
                retention=log_retention(self._settings.log_retention_days),
                removal_policy=self._removal,
            ),
        )
        self._acknowledge_deployment_handler(deployment)
        return deployment

    def _acknowledge_deployment_handler(self, deployment: s3deploy.BucketDeployment) -> None:
        """Findings on the CDK's own deploy-time copier (one per stack, shared by every BucketDeployment),
        acknowledged there and only there."""
        handler = deployment.handler_role.node.scope
        assert handler is not None
        stack = cdk.Stack.of(self)
        site = stack.get_logical_id(self.bucket.node.default_child)  # type: ignore[arg-type]
        assets = "arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*"
        for rule, reason in (
            (
                "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
                "The CDK's deploy-time handler that copies the console into its bucket; the managed policy only "
                "lets it write its logs.",
            ),
            (
                "L1",
                "The CDK's deploy-time handler: its runtime is the one this CDK version ships it for, and moves "
                "with it.",
            ),
            *(
                (
                    f"IAM5[Action::{action}]",
                    "Granted by the CDK's BucketDeployment: read the staged asset from the CDK assets bucket, "
                    "write and prune the console's files in the console's bucket, and only those two buckets.",
                )
                for action in ("s3:GetObject*", "s3:GetBucket*", "s3:List*", "s3:DeleteObject*", "s3:Abort*")
            ),
            (
                f"IAM5[Resource::{assets}]",
                "The CDK's staged assets (the console's files, config.json) are named by content hash in the "
                "bootstrap assets bucket; the handler only reads them.",
            ),
            (
                f"IAM5[Resource::<{site}.Arn>/*]",
                "Every key of the console's own bucket, which holds the console's files and nothing else.",
            ),
            (
                "IAM5[Resource::*]",
                "cloudfront:CreateInvalidation and GetInvalidation, which the CDK grants on every distribution; "
                "the handler invalidates the console's paths of the console's distribution only.",
            ),
        ):
            acknowledge(handler, rule, reason)
