"""The API: an HTTP API in front of the API function, behind a Cognito user pool's JWT authorizer.

Who may call: users an operator provisioned (no self sign-up) in the environment's user pool, signed in
through its hosted UI by the browser app (authorization code + PKCE, no client secret), with TOTP MFA. Their
tenant and collections are custom attributes; the pre-token-generation trigger (functions/token_claims)
copies them into the access token under the claim names shared/domain/auth.py reads.

Which tokens: access tokens carrying this API's scope (`quire/api`). The authorizer checks the issuer, the
signature, the expiry and, for an access token, `client_id` against the app client; the required scope
turns away ID tokens (they carry no `scope`), which would otherwise pass the audience check too.

Every route needs a token except GET /v1/health and GET /v1/openapi.json (functions/api/handler.py's
UNAUTHENTICATED_ROUTES) and the MCP server's (infra/constructs/mcp.py), which verifies the same tokens itself.
The catch-all routes name their methods rather than ANY: an ANY route would also match the browser's CORS
preflight (OPTIONS, sent without a token) and refuse it, where a method-less preflight is answered by API Gateway
from the CORS configuration.
"""

import json
import re
from urllib.parse import urlsplit

import aws_cdk as cdk
import jsii
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.constructs.console import CONSOLE_PATH
from infra.constructs.functions import DatabaseAccess, LambdaPackage, acknowledge, log_retention
from infra.constructs.storage import DELETE_OBJECTS, MULTIPART_OBJECTS, READ_OBJECTS, TAG_OBJECTS, Storage
from infra.constructs.tenant_data import TenantDataAccess
from infra.environments import EnvironmentSettings

API_HANDLER = "functions.api.handler.handler"
CLAIMS_TRIGGER_HANDLER = "functions.token_claims.handler.handler"
# Cognito calls a custom attribute `custom:<name>`: with these names the ID token's attributes and the claims
# the trigger adds to the access token are exactly shared.domain.auth's TENANT_CLAIM and COLLECTIONS_CLAIM
# (a test holds the two together; infra never imports runtime code).
TENANT_ATTRIBUTE = "tenant_id"
COLLECTIONS_ATTRIBUTE = "collections"
# The collections the user may also write to / administer (shared.domain.auth's WRITE_CLAIM, ADMIN_CLAIM).
WRITE_COLLECTIONS_ATTRIBUTE = "write_collections"
ADMIN_COLLECTIONS_ATTRIBUTE = "admin_collections"
# The scope every authenticated route requires: only access tokens issued to the app client carry it.
RESOURCE_SERVER = "quire"
API_SCOPE_NAME = "api"
# Served without a token (the API function answers them without a principal).
# Where artifact content lives (shared/domain/artifacts.py's artifact_content_key), and where a file
# replacement waits for its approval (shared/services/document_writing.py).
ARTIFACT_CONTENT_PREFIX = "derived/tenants/*/artifacts/"
REPLACEMENTS_PREFIX = "derived/tenants/*/replacements/"
PUBLIC_ROUTES = (("GET", "/v1/health"), ("GET", "/v1/openapi.json"))
# Every method the API function routes; anything else never reaches it.
AUTHENTICATED_METHODS = (
    apigwv2.HttpMethod.GET,
    apigwv2.HttpMethod.POST,
    apigwv2.HttpMethod.PUT,
    apigwv2.HttpMethod.PATCH,
    apigwv2.HttpMethod.DELETE,
)
AUTHENTICATED_PATH = "/v1/{proxy+}"
# Storage key prefixes (shared/domain/uploads.py): originals under tenants/, extracted documents under derived/.
ORIGINALS_PREFIX = "tenants/"
DERIVED_PREFIX = "derived/"
# HTTP APIs give up on an integration after 30 seconds; the function stops first and says so in its log.
API_TIMEOUT = cdk.Duration.seconds(29)
API_MEMORY_MB = 2048
# How long a token carries a user's collections: a change made by an operator reaches the API within this.
ACCESS_TOKEN_VALIDITY = cdk.Duration.minutes(15)
REFRESH_TOKEN_VALIDITY = cdk.Duration.hours(12)
CALLBACK_PATH = "/auth/callback"
# Cognito accepts plain-HTTP redirects only to the loopback host.
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


def redirect_urls(origins: tuple[str, ...], path: str) -> list[str]:
    """`path` on each origin the browser app is served from; an origin Cognito would refuse fails synthesis."""
    urls = []
    for origin in origins:
        parts = urlsplit(origin)
        if parts.scheme != "https" and not (parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS):
            raise ValueError(f"{origin!r}: Cognito redirects only to https:// origins or to http:// on the loopback")
        urls.append(f"{parts.scheme}://{parts.netloc}{path}")
    return urls


# A system-defined cross-region inference profile's id: a geography, then the id of the model it routes to.
_INFERENCE_PROFILE = re.compile(r"^(?:us|eu|apac|us-gov|ca|jp|au|global)\.(?P<model>[a-z0-9-]+\..+)$")


def grant_invoke_model(function: lambda_.Function, model_id: str) -> None:
    """bedrock:InvokeModel (which Converse needs) on one model: a foundation model in this region, or a
    cross-region inference profile and the model it routes to, in whichever region it routes to, through that
    profile only (the `bedrock:InferenceProfileArn` condition)."""
    stack = cdk.Stack.of(function)
    profile = _INFERENCE_PROFILE.match(model_id)
    if profile is None:
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["bedrock:InvokeModel"],
                resources=[
                    stack.format_arn(service="bedrock", account="", resource="foundation-model", resource_name=model_id)
                ],
            )
        )
        return
    profile_arn = stack.format_arn(service="bedrock", resource="inference-profile", resource_name=model_id)
    function.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[profile_arn]))
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=["bedrock:InvokeModel"],
            resources=[
                stack.format_arn(
                    service="bedrock",
                    region="*",
                    account="",
                    resource="foundation-model",
                    resource_name=profile.group("model"),
                )
            ],
            conditions={"StringEquals": {"bedrock:InferenceProfileArn": profile_arn}},
        )
    )
    assert function.role is not None
    acknowledge(
        function.role,
        f"IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/{profile.group('model')}]",
        f"The inference profile {model_id} routes to its model in regions it chooses; the model may be invoked"
        " in them only through that profile.",
    )


def grant_rerank_model(function: lambda_.Function, model_id: str) -> None:
    """The Bedrock rerank model searches reorder their best candidates with (the agent runtime's Rerank): its id in
    QUIRE_RERANK_MODEL_ID, bedrock:InvokeModel on that foundation model in this region only, and bedrock:Rerank, an
    action without resource types (so on any resource: which model it may reach is what InvokeModel allows)."""
    stack = cdk.Stack.of(function)
    function.add_environment("QUIRE_RERANK_MODEL_ID", model_id)
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=["bedrock:InvokeModel"],
            resources=[
                stack.format_arn(service="bedrock", account="", resource="foundation-model", resource_name=model_id)
            ],
        )
    )
    function.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:Rerank"], resources=["*"]))
    assert function.role is not None
    acknowledge(
        function.role,
        "IAM5[Resource::*]",
        "X-Ray's PutTraceSegments/PutTelemetryRecords (active tracing), the ENI actions Lambda needs in a VPC, and"
        " bedrock:Rerank have no resource-level permissions; the rerank model it reaches is limited by"
        f" bedrock:InvokeModel, granted on {model_id} alone.",
    )


def serve_tenants(
    scope: Construct,
    function: lambda_.Function,
    *,
    storage: Storage,
    state_machine: sfn.IStateMachine,
    embedding_model_id: str,
    summary_model_id: str | None,
    answer_model_id: str | None,
    rerank_model_id: str | None = None,
) -> TenantDataAccess:
    """What a function serving the API's callers may do, on their behalf: the API function, and the MCP
    function, whose tools are calls of the same services (functions/tools/catalog.py). Its tenant data role
    (`TenantData` under `scope`) carries every object grant, for one tenant per session: the caller's."""
    bucket = storage.originals
    function.add_environment("QUIRE_BUCKET", bucket.bucket_name)
    # POST /v1/files/{id}/scan starts a processing attempt.
    function.add_environment("QUIRE_STATE_MACHINE_ARN", state_machine.state_machine_arn)
    data = TenantDataAccess(scope, "TenantData", storage=storage, function=function)
    # Presigned POSTs for uploads are signed with the caller's tenant session: the upload is its PutObject.
    # Presigned and proxied reads of an original, by version id; a deletion tags the version deleted and
    # removes it in the request (shared/services/files.py), so a link issued before stops working at once.
    data.grant_objects(("s3:PutObject", *READ_OBJECTS, *TAG_OBJECTS, *DELETE_OBJECTS), (ORIGINALS_PREFIX,))
    # Upload sessions: begun, each part's URL signed and completed with the caller's tenant session (s3:PutObject);
    # the parts S3 holds listed, and the upload aborted.
    data.grant_objects(MULTIPART_OBJECTS, (ORIGINALS_PREFIX,))
    # Extracted documents (GET /v1/files/{id}/document, reindex). Never deleted here: what was derived from a
    # deleted original is the reconciliation sweep's to remove.
    data.grant_objects(("s3:GetObject",), (DERIVED_PREFIX,))
    # Artifact content (POST /v1/artifacts and its versions): written before the row that refers to it,
    # under the artifacts' own prefix only; file replacements wait under theirs for their approval.
    data.grant_objects(("s3:PutObject",), (ARTIFACT_CONTENT_PREFIX, REPLACEMENTS_PREFIX))
    # "This document is gone" (which reindex acts on) must be a 404, not a 403.
    data.grant_missing_is_not_found()
    # Query embeddings for search and re-embedding on reindex, from the environment's embedding model only.
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=["bedrock:InvokeModel"],
            resources=[
                cdk.Stack.of(scope).format_arn(
                    service="bedrock",
                    account="",
                    resource="foundation-model",
                    resource_name=embedding_model_id,
                )
            ],
        )
    )
    for variable, model_id in (
        # summarize_document's cited summaries (Converse), from this model only; without it they are outlines.
        ("QUIRE_SUMMARY_MODEL_ID", summary_model_id),
        # POST /v1/answer's drafts (Converse with a forced tool), from this model only; without it answers are
        # evidence only.
        ("QUIRE_ANSWER_MODEL_ID", answer_model_id),
    ):
        if model_id:
            function.add_environment(variable, model_id)
            grant_invoke_model(function, model_id)
    # Search's reranker (docs/search.md#the-reranker), this model only; without one, the identifier booster.
    if rerank_model_id:
        grant_rerank_model(function, rerank_model_id)
    state_machine.grant_start_execution(function)
    return data


class Api(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        package: LambdaPackage,
        storage: Storage,
        database: DatabaseAccess,
        state_machine: sfn.IStateMachine,
        console_origin: str,
    ) -> None:
        """`console_origin`: where the browser console is served (infra/constructs/console.py), admitted by the
        API's CORS and, at CONSOLE_PATH, by the app client's redirect URLs, beside the environment's origins."""
        super().__init__(scope, construct_id)
        self._console_origin = console_origin
        removal = cdk.RemovalPolicy.RETAIN if settings.retain_data else cdk.RemovalPolicy.DESTROY
        self.function = self._api_function(settings, package, storage, database, state_machine)
        self.user_pool = self._user_pool(settings, package, removal)
        self._scope_definition = cognito.ResourceServerScope(
            scope_name=API_SCOPE_NAME, scope_description="Call the Quire API"
        )
        self.resource_server = self.user_pool.add_resource_server(
            "ResourceServer", identifier=RESOURCE_SERVER, scopes=[self._scope_definition]
        )
        self.api_scope = f"{RESOURCE_SERVER}/{API_SCOPE_NAME}"
        # The issuer the JWT authorizer checks (HttpUserPoolAuthorizer's own expression), for a function that
        # verifies the same tokens itself (the MCP server).
        self.issuer_url = f"https://cognito-idp.{cdk.Stack.of(self).region}.amazonaws.com/{self.user_pool.user_pool_id}"
        self.user_pool_client = self._browser_client(settings)
        self.domain = self.user_pool.add_domain(
            "Domain",
            # Prefixes are global per region: the account keeps two deployments of one environment apart.
            cognito_domain=cognito.CognitoDomainOptions(domain_prefix=f"quire-{settings.name}-{cdk.Aws.ACCOUNT_ID}"),
        )
        self.http_api, self.stage = self._http_api(settings, removal)

        cdk.CfnOutput(self, "ApiUrl", value=self.stage.url)
        cdk.CfnOutput(self, "UserPoolId", value=self.user_pool.user_pool_id)
        cdk.CfnOutput(self, "UserPoolClientId", value=self.user_pool_client.user_pool_client_id)
        cdk.CfnOutput(self, "SignInDomain", value=self.domain.base_url())

    def _api_function(
        self,
        settings: EnvironmentSettings,
        package: LambdaPackage,
        storage: Storage,
        database: DatabaseAccess,
        state_machine: sfn.IStateMachine,
    ) -> lambda_.Function:
        function = package.function(
            self,
            "Function",
            handler=API_HANDLER,
            description="HTTP API: uploads, files, signed reads, search, rescans, reindex, artifacts, exports",
            timeout=API_TIMEOUT,
            # Room for the bounded children a request may start (reading Markdown, rendering a replacement).
            memory_size=API_MEMORY_MB,
            reserved_concurrency=settings.reserved_concurrency.api if settings.reserved_concurrency else None,
            database=database,
        )
        serve_tenants(
            self,
            function,
            storage=storage,
            state_machine=state_machine,
            embedding_model_id=settings.embedding_model_id,
            summary_model_id=settings.summary_model_id,
            answer_model_id=settings.answer_model_id,
            rerank_model_id=settings.rerank_model_id,
        )
        return function

    def _user_pool(
        self, settings: EnvironmentSettings, package: LambdaPackage, removal: cdk.RemovalPolicy
    ) -> cognito.UserPool:
        pool = cognito.UserPool(
            self,
            "UserPool",
            user_pool_name=f"quire-{settings.name}",
            # Access-token customisation (the V2 trigger below) needs Essentials or Plus.
            feature_plan=cognito.FeaturePlan.ESSENTIALS,
            # Tenants and their users are provisioned by an operator (AdminCreateUser), never by themselves.
            self_sign_up_enabled=False,
            sign_in_aliases=cognito.SignInAliases(email=True),
            sign_in_case_sensitive=False,
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            password_policy=cognito.PasswordPolicy(
                min_length=14,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
                temp_password_validity=cdk.Duration.days(3),
            ),
            # TOTP for everyone: the hosted UI enrols an authenticator app at the first sign-in. No SMS.
            mfa=cognito.Mfa.REQUIRED,
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False, email=False),
            custom_attributes={
                # A user never changes tenant: set when the operator creates the user, never again.
                TENANT_ATTRIBUTE: cognito.StringAttribute(min_len=1, max_len=64, mutable=False),
                # Comma-separated collection ids the user may read; the operator changes them, the user cannot.
                COLLECTIONS_ATTRIBUTE: cognito.StringAttribute(min_len=0, max_len=2048, mutable=True),
                # The same shape: the collections among those the user may also write to, and administer.
                WRITE_COLLECTIONS_ATTRIBUTE: cognito.StringAttribute(min_len=0, max_len=2048, mutable=True),
                ADMIN_COLLECTIONS_ATTRIBUTE: cognito.StringAttribute(min_len=0, max_len=2048, mutable=True),
            },
            deletion_protection=settings.retain_data,
            removal_policy=removal,
        )
        token_claims = package.function(
            self,
            "TokenClaims",
            handler=CLAIMS_TRIGGER_HANDLER,
            description="Cognito pre-token-generation: tenant and collections into the access token",
            # Cognito waits at most 5 seconds for a trigger; a sign-in should not.
            timeout=cdk.Duration.seconds(5),
            memory_size=512,
            reserved_concurrency=settings.reserved_concurrency.sign_in if settings.reserved_concurrency else None,
        )
        pool.add_trigger(
            cognito.UserPoolOperation.PRE_TOKEN_GENERATION_CONFIG, token_claims, cognito.LambdaVersion.V2_0
        )
        self.token_claims_function = token_claims
        acknowledge(
            pool,
            "COG8",
            "Essentials, not Plus: Plus adds threat protection (compromised-credential checks, adaptive "
            "authentication) at a per-user price. Access-token customisation, which the API's claims need, is "
            "in Essentials; sign-in is already guarded by required TOTP MFA, a 14-character password policy and "
            "operator-only provisioning.",
        )
        return pool

    def _browser_client(self, settings: EnvironmentSettings) -> cognito.UserPoolClient:
        console_url = f"{self._console_origin}{CONSOLE_PATH}"
        return self.user_pool.add_client(
            "BrowserClient",
            user_pool_client_name=f"quire-{settings.name}-browser",
            # A single-page app keeps no secret: the authorization code flow with PKCE, through the hosted UI.
            generate_secret=False,
            # No password, SRP or custom flows against the API directly: sign-in happens in the hosted UI.
            auth_flows=cognito.AuthFlow(user_password=False, user_srp=False, custom=False, admin_user_password=False),
            o_auth=cognito.OAuthSettings(
                flows=cognito.OAuthFlows(authorization_code_grant=True, implicit_code_grant=False),
                scopes=[
                    cognito.OAuthScope.OPENID,
                    cognito.OAuthScope.EMAIL,
                    cognito.OAuthScope.resource_server(self.resource_server, self._scope_definition),
                ],
                # The console signs in and out at its own page (its redirectUri and logoutUri).
                callback_urls=[*redirect_urls(settings.cors_allowed_origins, CALLBACK_PATH), console_url],
                logout_urls=[*redirect_urls(settings.cors_allowed_origins, "/"), console_url],
            ),
            supported_identity_providers=[cognito.UserPoolClientIdentityProvider.COGNITO],
            prevent_user_existence_errors=True,
            enable_token_revocation=True,
            access_token_validity=ACCESS_TOKEN_VALIDITY,
            id_token_validity=ACCESS_TOKEN_VALIDITY,
            refresh_token_validity=REFRESH_TOKEN_VALIDITY,
            read_attributes=cognito.ClientAttributes()
            .with_standard_attributes(email=True, email_verified=True)
            .with_custom_attributes(
                TENANT_ATTRIBUTE, COLLECTIONS_ATTRIBUTE, WRITE_COLLECTIONS_ATTRIBUTE, ADMIN_COLLECTIONS_ATTRIBUTE
            ),
            # Users must not write their own entitlements (UpdateUserAttributes with their access token):
            # the app client may write no custom attribute.
            write_attributes=cognito.ClientAttributes().with_standard_attributes(fullname=True),
        )

    def _http_api(
        self, settings: EnvironmentSettings, removal: cdk.RemovalPolicy
    ) -> tuple[apigwv2.HttpApi, apigwv2.HttpStage]:
        http_api = apigwv2.HttpApi(
            self,
            "HttpApi",
            api_name=f"quire-{settings.name}",
            description=f"Quire {settings.name}",
            # Our own $default stage below carries the throttling and the access log.
            create_default_stage=False,
            cors_preflight=apigwv2.CorsPreflightOptions(
                allow_origins=[*settings.cors_allowed_origins, self._console_origin],
                allow_methods=[
                    apigwv2.CorsHttpMethod.GET,
                    apigwv2.CorsHttpMethod.POST,
                    apigwv2.CorsHttpMethod.PUT,
                    apigwv2.CorsHttpMethod.PATCH,
                    apigwv2.CorsHttpMethod.DELETE,
                ],
                allow_headers=["authorization", "content-type"],
                # Proxied downloads name the file there.
                expose_headers=["content-disposition"],
                # Bearer tokens, not cookies.
                allow_credentials=False,
                max_age=cdk.Duration.hours(1),
            ),
        )
        integration = integrations.HttpLambdaIntegration("ApiFunction", self.function)
        authorizer = authorizers.HttpUserPoolAuthorizer(
            "Authorizer",
            self.user_pool,
            user_pool_clients=[self.user_pool_client],
            authorizer_name="cognito-access-token",
        )
        http_api.add_routes(
            path=AUTHENTICATED_PATH,
            methods=list(AUTHENTICATED_METHODS),
            integration=integration,
            authorizer=authorizer,
            authorization_scopes=[self.api_scope],
        )
        for method, path in PUBLIC_ROUTES:
            (route,) = http_api.add_routes(
                path=path,
                methods=[apigwv2.HttpMethod(method)],
                integration=integration,
                authorizer=apigwv2.HttpNoneAuthorizer(),
            )
            acknowledge(
                route,
                "APIG4",
                f"{method} {path} is public on purpose (functions/api/handler.py UNAUTHENTICATED_ROUTES): "
                "load balancers and the browser app read it before anyone signs in; it names no tenant data.",
            )
        access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=log_retention(settings.log_retention_days),
            removal_policy=removal,
        )
        stage = apigwv2.HttpStage(
            self,
            "DefaultStage",
            http_api=http_api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(rate_limit=settings.api_rate_limit, burst_limit=settings.api_burst_limit),
            access_log_settings=_AccessLog(apigwv2.LogGroupLogDestination(access_logs)),
        )
        return http_api, stage


# One JSON object per request: who (the token's subject), what route, the outcome, and why a request was
# refused before the function saw it (the authorizer's or the integration's error).
ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "time": "$context.requestTime",
    "ip": "$context.identity.sourceIp",
    "userAgent": "$context.identity.userAgent",
    "method": "$context.httpMethod",
    "path": "$context.path",
    "routeKey": "$context.routeKey",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "latencyMs": "$context.responseLatency",
    "integrationLatencyMs": "$context.integrationLatency",
    "subject": "$context.authorizer.claims.sub",
    "clientId": "$context.authorizer.claims.client_id",
    "authorizerError": "$context.authorizer.error",
    "integrationError": "$context.integrationErrorMessage",
}


@jsii.implements(apigwv2.IAccessLogSettings)
class _AccessLog:
    """apigwv2.IAccessLogSettings: a log group destination and the JSON format above."""

    def __init__(self, destination: apigwv2.IAccessLogDestination) -> None:
        self._destination = destination

    @property
    def destination(self) -> apigwv2.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigw.AccessLogFormat:
        return apigw.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FIELDS))
