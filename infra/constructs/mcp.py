"""The MCP server: the agent tools over the Model Context Protocol, on the HTTP API beside the REST routes.

functions/mcp/app.py is an ASGI app (the MCP SDK's streamable HTTP transport, stateless, JSON responses) that
uvicorn serves inside the function, behind the AWS Lambda Web Adapter: the adapter's layer holds an extension
that turns each API Gateway event into an HTTP request to the app on AWS_LWA_PORT, and its exec wrapper
(/opt/bootstrap) runs the handler, a path under the code root (functions/mcp/run.sh), instead of Lambda's
Python runtime. The app's packages (mcp, uvicorn) come from the same dependency layer as every function's.

Routes: POST /mcp, the one method of the stateless streamable HTTP transport (a GET would open an event stream
the server never writes to, holding a sandbox for the function's 29 s: API Gateway has no route for it and
answers 404 itself, and the app answers any method but POST 405), named rather than ANY so the browser's CORS
preflight is answered by API Gateway, as for the REST routes; and GET /.well-known/oauth-protected-resource/mcp
(RFC 9728 metadata). Both go without the gateway's JWT authorizer: the server is an OAuth resource server that
must answer a missing or bad token with 401 and `WWW-Authenticate: Bearer resource_metadata=...`, which is how an
MCP client finds the authorization server (the user pool); the authorizer's own 401 carries no such header. The
function verifies the same Cognito access tokens itself, with the authorizer's checks
(shared/adapters/aws/cognito_tokens.py), against the same issuer, app client and scope (QUIRE_COGNITO_*).

The pool's signing keys: the function runs in the database's isolated subnets (it queries as the application
role), which reach AWS only through VPC endpoints, and Cognito's JWKS is on its public endpoint (a user pool
with a domain cannot be reached through a Cognito VPC endpoint at all). So a deploy-time custom resource,
outside the VPC, reads the keys (functions/cognito_keys) and hands them to the function's environment
(QUIRE_COGNITO_JWKS). Should Cognito rotate them, bump SIGNING_KEYS_GENERATION and deploy.

Grants: exactly the API function's for tenant data (infra/constructs/api.py's serve_tenants: the tools are
calls of the same services for the same verified callers), with its own tenant data role, timeout, memory,
reservation, log group, alarms and VPC access.
"""

import aws_cdk as cdk
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.constructs.api import API_MEMORY_MB, API_TIMEOUT, Api, serve_tenants
from infra.constructs.functions import DatabaseAccess, LambdaPackage, acknowledge, log_retention
from infra.constructs.storage import Storage
from infra.environments import EnvironmentSettings

# The handler is a path under the code root, which the adapter's wrapper executes (it must be executable).
MCP_HANDLER = "functions/mcp/run.sh"
SIGNING_KEYS_HANDLER = "functions.cognito_keys.handler.handler"
# AWS Lambda Web Adapter's public layer (github.com/aws/aws-lambda-web-adapter, "Zip Packages"), published in
# every commercial region by this account; version 30 is the newest its README and user guide name.
WEB_ADAPTER_ACCOUNT = "753240598075"
WEB_ADAPTER_LAYER = "LambdaAdapterLayerArm64"
WEB_ADAPTER_VERSION = 30
EXEC_WRAPPER = "/opt/bootstrap"
# Where uvicorn listens (functions/mcp/run.sh reads AWS_LWA_PORT), and what the adapter polls until it answers.
APP_PORT = 8080
READINESS_PATH = "/mcp/healthz"
MCP_PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"
# Served without the gateway's authorizer; every other route keeps it. No GET or DELETE /mcp: the server offers no
# stream and no session to end (it answers both 405), and API Gateway answers a method without a route itself.
MCP_ROUTES = (
    ("POST", MCP_PATH),
    ("GET", METADATA_PATH),
)
# Bump to read the pool's signing keys again on the next deployment (after Cognito rotated them).
SIGNING_KEYS_GENERATION = 1


def web_adapter_layer_arn(region: str) -> str:
    return f"arn:aws:lambda:{region}:{WEB_ADAPTER_ACCOUNT}:layer:{WEB_ADAPTER_LAYER}:{WEB_ADAPTER_VERSION}"


class McpServer(Construct):
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
        api: Api,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = cdk.Stack.of(self)
        signing_keys = self._signing_keys(settings, package, api.issuer_url)
        # The Host header API Gateway passes on, and so the one public name of /mcp (no custom domain yet).
        host = f"{api.http_api.api_id}.execute-api.{stack.region}.{stack.url_suffix}"
        self.function = package.function(
            self,
            "Function",
            handler=MCP_HANDLER,
            description="MCP server: the agent tools over streamable HTTP (Lambda Web Adapter, uvicorn)",
            # The API's bounds: the same services, behind the same 30-second integration limit.
            timeout=API_TIMEOUT,
            memory_size=API_MEMORY_MB,
            reserved_concurrency=settings.reserved_concurrency.mcp if settings.reserved_concurrency else None,
            environment={
                "AWS_LAMBDA_EXEC_WRAPPER": EXEC_WRAPPER,
                "AWS_LWA_PORT": str(APP_PORT),
                "AWS_LWA_READINESS_CHECK_PATH": READINESS_PATH,
                # The SDK answers 421 to a request whose Host it was not told to accept (DNS rebinding).
                "QUIRE_MCP_ALLOWED_HOSTS": host,
                "QUIRE_MCP_ISSUER_URL": api.issuer_url,
                "QUIRE_MCP_RESOURCE_URL": f"https://{host}{MCP_PATH}",
                # The JWT authorizer's checks, made in the function (shared/config.py's cognito_*).
                "QUIRE_COGNITO_ISSUER_URL": api.issuer_url,
                "QUIRE_COGNITO_CLIENT_IDS": api.user_pool_client.user_pool_client_id,
                "QUIRE_COGNITO_REQUIRED_SCOPE": api.api_scope,
                "QUIRE_COGNITO_JWKS": signing_keys.get_att_string("Jwks"),
            },
            database=database,
        )
        self.function.add_layers(
            lambda_.LayerVersion.from_layer_version_arn(self, "WebAdapter", web_adapter_layer_arn(stack.region))
        )
        self.tenant_data = serve_tenants(
            self,
            self.function,
            storage=storage,
            state_machine=state_machine,
            embedding_model_id=settings.embedding_model_id,
            summary_model_id=settings.summary_model_id,
            answer_model_id=settings.answer_model_id,
            rerank_model_id=settings.rerank_model_id,
        )
        self._routes(api)

    def _routes(self, api: Api) -> None:
        integration = integrations.HttpLambdaIntegration("McpFunction", self.function)
        for method, path in MCP_ROUTES:
            (route,) = api.http_api.add_routes(
                path=path,
                methods=[apigwv2.HttpMethod(method)],
                integration=integration,
                authorizer=apigwv2.HttpNoneAuthorizer(),
            )
            acknowledge(
                route,
                "APIG4",
                f"{method} {path} has no gateway authorizer on purpose: the MCP server is an OAuth resource server "
                "that verifies the same Cognito access tokens itself (issuer, app client, scope, signature, expiry: "
                "shared/adapters/aws/cognito_tokens.py) and must answer a missing or bad one with 401 and "
                "WWW-Authenticate: Bearer resource_metadata=..., which the gateway's 401 cannot carry; each "
                "request it serves counts against its tenant's request rate (429) under the stage's throttle; the "
                "metadata route names no tenant data.",
            )

    def _signing_keys(self, settings: EnvironmentSettings, package: LambdaPackage, issuer: str) -> cdk.CustomResource:
        """The pool's public signing keys, read at deploy time by a function outside the VPC."""
        removal = cdk.RemovalPolicy.RETAIN if settings.retain_data else cdk.RemovalPolicy.DESTROY
        self.signing_keys_function = package.function(
            self,
            "SigningKeys",
            handler=SIGNING_KEYS_HANDLER,
            description="Reads the user pool's public signing keys at deploy time, for the MCP server",
            timeout=cdk.Duration.seconds(30),
            memory_size=256,
        )
        # The framework only invokes the function above and answers CloudFormation, as for the migrations.
        framework_role = iam.Role(
            self,
            "SigningKeysProviderRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Quire {settings.name}: CDK provider framework for the signing keys custom resource",
        )
        framework_logs = logs.LogGroup(
            self,
            "SigningKeysProviderLogs",
            retention=log_retention(settings.log_retention_days),
            removal_policy=removal,
        )
        framework_logs.grant_write(framework_role)
        provider = cr.Provider(
            self,
            "SigningKeysProvider",
            on_event_handler=self.signing_keys_function,
            framework_on_event_role=framework_role,
            log_group=framework_logs,
        )
        stack = cdk.Stack.of(self)
        function_logical_id = stack.resolve(stack.get_logical_id(self.signing_keys_function.node.default_child))  # type: ignore[arg-type]
        acknowledge(
            framework_role,
            f"IAM5[Resource::<{function_logical_id}.Arn>:*]",
            "Added by the CDK provider framework: invoke any version or alias of the signing keys function, "
            "and only that function.",
        )
        return cdk.CustomResource(
            self,
            "SigningKeysSnapshot",
            service_token=provider.service_token,
            resource_type="Custom::QuireCognitoSigningKeys",
            properties={"Issuer": issuer, "Generation": str(SIGNING_KEYS_GENERATION)},
        )
