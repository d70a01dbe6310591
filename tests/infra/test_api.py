"""The api capability on the synthesized template, per environment: who may call, how often, from where, and
what the API function may touch.

They assert on the whole stack as each environment synthesizes it (tests/infra/conftest.py), cdk-nag included.
"""

import json
import re
from collections.abc import Mapping
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.constructs.api import (
    ADMIN_COLLECTIONS_ATTRIBUTE,
    COLLECTIONS_ATTRIBUTE,
    PUBLIC_ROUTES,
    TENANT_ATTRIBUTE,
    WRITE_COLLECTIONS_ATTRIBUTE,
    redirect_urls,
)
from infra.constructs.mcp import MCP_ROUTES
from infra.environments import settings_for
from shared.domain.auth import ADMIN_CLAIM, COLLECTIONS_CLAIM, TENANT_CLAIM, WRITE_CLAIM
from tests.infra.template import (
    API_HANDLER,
    MCP_HANDLER,
    as_list,
    as_text,
    function_with_handler,
    only,
    role_statements,
    tenant_data_role_id,
    tenant_data_statements,
)

TRIGGER_HANDLER = "functions.token_claims.handler.handler"


def flat_arn(arn: Any) -> str:
    """An ARN as text, pseudo-parameters named: {"Ref": "AWS::Region"} (or a fixed region) reads <Region>."""
    if isinstance(arn, str):
        return arn
    parts = [part if isinstance(part, str) else f"<{part['Ref'].removeprefix('AWS::')}>" for part in arn["Fn::Join"][1]]
    return re.sub(r":bedrock:[a-z0-9-]+::", ":bedrock:<Region>::", "".join(parts))


def user_pool(template: Template) -> tuple[str, Mapping[str, Any]]:
    return only(template.find_resources("AWS::Cognito::UserPool"))


def browser_client(template: Template) -> Mapping[str, Any]:
    return only(template.find_resources("AWS::Cognito::UserPoolClient"))[1]


def allowed_scopes(template: Template, client: Mapping[str, Any]) -> set[str]:
    """The client's OAuth scopes, a resource server's scope resolved to `<identifier>/<name>`."""
    servers = template.find_resources("AWS::Cognito::UserPoolResourceServer")
    scopes = set()
    for scope in client["Properties"]["AllowedOAuthScopes"]:
        if isinstance(scope, dict):
            server, name = scope["Fn::Join"][1]
            scopes.add(servers[server["Ref"]]["Properties"]["Identifier"] + name)
        else:
            scopes.add(scope)
    return scopes


def routes(template: Template) -> dict[str, dict[str, Any]]:
    return {
        route["Properties"]["RouteKey"]: route["Properties"]
        for route in template.find_resources("AWS::ApiGatewayV2::Route").values()
    }


def test_the_custom_attributes_become_the_claims_the_api_reads() -> None:
    assert f"custom:{TENANT_ATTRIBUTE}" == TENANT_CLAIM
    assert f"custom:{COLLECTIONS_ATTRIBUTE}" == COLLECTIONS_CLAIM
    assert f"custom:{WRITE_COLLECTIONS_ATTRIBUTE}" == WRITE_CLAIM
    assert f"custom:{ADMIN_COLLECTIONS_ATTRIBUTE}" == ADMIN_CLAIM


def test_the_authorizer_checks_cognito_access_tokens_for_the_browser_client(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    pool_id, _ = user_pool(template)
    client_id = only(template.find_resources("AWS::Cognito::UserPoolClient"))[0]
    _, authorizer = only(template.find_resources("AWS::ApiGatewayV2::Authorizer"))
    properties = authorizer["Properties"]
    assert properties["AuthorizerType"] == "JWT"
    assert properties["IdentitySource"] == ["$request.header.Authorization"]
    configuration = properties["JwtConfiguration"]
    # The audience is the app client: API Gateway compares it with an access token's client_id.
    assert configuration["Audience"] == [{"Ref": client_id}]
    issuer = json.dumps(configuration["Issuer"])
    assert "https://cognito-idp." in issuer
    assert pool_id in issuer


def test_every_route_but_health_openapi_and_the_mcp_servers_needs_an_access_token_with_the_api_scope(
    synthesized: tuple[str, Template],
) -> None:
    """The MCP server verifies the same tokens itself (tests/infra/test_mcp_function.py)."""
    _, template = synthesized
    public = {f"{method} {path}" for method, path in (*PUBLIC_ROUTES, *MCP_ROUTES)}
    assert public == {
        "GET /v1/health",
        "GET /v1/openapi.json",
        "POST /mcp",
        "GET /.well-known/oauth-protected-resource/mcp",
    }
    found = routes(template)
    assert public <= set(found)
    for key, route in found.items():
        if key in public:
            assert route.get("AuthorizationType", "NONE") == "NONE", key
            assert "AuthorizerId" not in route, key
        else:
            assert route["AuthorizationType"] == "JWT", key
            assert "Ref" in route["AuthorizerId"], key
            # ID tokens carry no scope: requiring one admits access tokens only.
            assert route["AuthorizationScopes"] == ["quire/api"], key


def test_the_catch_all_routes_name_their_methods_so_cors_preflights_are_answered(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    keys = set(routes(template))
    assert {"GET /v1/{proxy+}", "POST /v1/{proxy+}", "DELETE /v1/{proxy+}"} <= keys
    # An ANY (or $default) route would catch the token-less OPTIONS preflight and refuse it.
    assert not any(key.startswith(("ANY ", "OPTIONS ")) or key == "$default" for key in keys)


def test_every_route_goes_to_the_api_function_but_the_mcp_servers_to_the_mcp_function(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    function_for = {
        function_id: handler
        for handler in (API_HANDLER, MCP_HANDLER)
        for function_id in [function_with_handler(template, handler)[0]]
    }
    integrations = template.find_resources("AWS::ApiGatewayV2::Integration")
    handler_of: dict[str, str] = {}
    for integration_id, integration in integrations.items():
        assert integration["Properties"]["IntegrationType"] == "AWS_PROXY"
        assert integration["Properties"]["PayloadFormatVersion"] == "2.0"
        uri = json.dumps(integration["Properties"]["IntegrationUri"])
        (handler_of[integration_id],) = [handler for function_id, handler in function_for.items() if function_id in uri]
    mcp = {f"{method} {path}" for method, path in MCP_ROUTES}
    for key, route in routes(template).items():
        target = json.dumps(route["Target"])
        (handler,) = [handler for integration_id, handler in handler_of.items() if integration_id in target]
        assert handler == (MCP_HANDLER if key in mcp else API_HANDLER), key


def test_the_stage_throttles_to_the_environments_limits_and_logs_every_request(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    settings = settings_for(env)
    _, stage = only(template.find_resources("AWS::ApiGatewayV2::Stage"))
    properties = stage["Properties"]
    assert properties["StageName"] == "$default"
    assert properties["AutoDeploy"] is True
    assert properties["DefaultRouteSettings"] == {
        "ThrottlingBurstLimit": settings.api_burst_limit,
        "ThrottlingRateLimit": settings.api_rate_limit,
    }
    log_group_id = properties["AccessLogSettings"]["DestinationArn"]["Fn::GetAtt"][0]
    log_group = template.find_resources("AWS::Logs::LogGroup")[log_group_id]
    assert log_group["Properties"]["RetentionInDays"] == settings.log_retention_days
    fields = json.loads(properties["AccessLogSettings"]["Format"])
    assert {"requestId", "status", "routeKey", "authorizerError", "integrationError"} <= set(fields)


def console_origin(template: Template) -> str:
    """The console's origin (infra/constructs/console.py) as as_text renders it."""
    distribution_id, _ = only(template.find_resources("AWS::CloudFront::Distribution"))
    return f"https://<{distribution_id}.DomainName>"


def test_cors_allows_only_the_environments_origins_and_the_consoles(synthesized: tuple[str, Template]) -> None:
    env, template = synthesized
    _, api = only(template.find_resources("AWS::ApiGatewayV2::Api"))
    cors = api["Properties"]["CorsConfiguration"]
    origins = [as_text(origin) for origin in cors["AllowOrigins"]]
    assert origins == [*settings_for(env).cors_allowed_origins, console_origin(template)]
    assert "*" not in cors["AllowOrigins"]
    assert "*" not in cors["AllowHeaders"]
    assert sorted(cors["AllowMethods"]) == ["DELETE", "GET", "PATCH", "POST", "PUT"]
    assert cors.get("AllowCredentials", False) is False


def test_the_user_pool_is_operator_provisioned_with_strong_passwords_and_totp(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    _, pool = user_pool(template)
    properties = pool["Properties"]
    assert properties["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    assert properties["MfaConfiguration"] == "ON"
    assert properties["EnabledMfas"] == ["SOFTWARE_TOKEN_MFA"]
    password = properties["Policies"]["PasswordPolicy"]
    assert password["MinimumLength"] >= 12
    assert all(password[rule] for rule in ("RequireLowercase", "RequireUppercase", "RequireNumbers", "RequireSymbols"))
    assert properties["UserPoolTier"] in {"ESSENTIALS", "PLUS"}  # access-token customisation needs either


def test_the_tenant_attribute_is_immutable_and_collections_are_not(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, pool = user_pool(template)
    schema = {attribute["Name"]: attribute for attribute in pool["Properties"]["Schema"]}
    assert schema[TENANT_ATTRIBUTE]["Mutable"] is False
    assert schema[TENANT_ATTRIBUTE]["AttributeDataType"] == "String"
    assert schema[COLLECTIONS_ATTRIBUTE]["Mutable"] is True


def test_users_cannot_write_their_own_tenant_or_collections(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    client = browser_client(template)["Properties"]
    assert not [attribute for attribute in client["WriteAttributes"] if attribute.startswith("custom:")]
    assert {TENANT_CLAIM, COLLECTIONS_CLAIM, WRITE_CLAIM, ADMIN_CLAIM} <= set(client["ReadAttributes"])


def test_the_browser_client_uses_the_code_flow_without_a_secret_and_redirects_to_its_origins_and_the_console(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    client = browser_client(template)["Properties"]
    assert allowed_scopes(template, browser_client(template)) == {"openid", "email", "quire/api"}
    assert client.get("GenerateSecret", False) is False
    assert client["AllowedOAuthFlows"] == ["code"]
    assert client["AllowedOAuthFlowsUserPoolClient"] is True
    assert client["ExplicitAuthFlows"] == ["ALLOW_REFRESH_TOKEN_AUTH"]
    origins = settings_for(env).cors_allowed_origins
    # The console signs in and out at its own page, /console/ on its distribution.
    console = f"{console_origin(template)}/console/"
    assert [as_text(url) for url in client["CallbackURLs"]] == [f"{origin}/auth/callback" for origin in origins] + [
        console
    ]
    assert [as_text(url) for url in client["LogoutURLs"]] == [f"{origin}/" for origin in origins] + [console]
    assert client["PreventUserExistenceErrors"] == "ENABLED"


def test_the_api_scope_is_defined_on_a_resource_server(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, server = only(template.find_resources("AWS::Cognito::UserPoolResourceServer"))
    assert server["Properties"]["Identifier"] == "quire"
    assert [scope["ScopeName"] for scope in server["Properties"]["Scopes"]] == ["api"]


def test_the_token_claims_trigger_is_the_v2_pre_token_generation_trigger(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    trigger_id, trigger = function_with_handler(template, TRIGGER_HANDLER)
    _, pool = user_pool(template)
    config = pool["Properties"]["LambdaConfig"]["PreTokenGenerationConfig"]
    assert config["LambdaVersion"] == "V2_0"
    assert config["LambdaArn"] == {"Fn::GetAtt": [trigger_id, "Arn"]}
    # Thin: outside the VPC, no database settings, and a role that can only write its own logs and traces.
    assert "VpcConfig" not in trigger["Properties"]
    assert not any("DATABASE" in name for name in trigger["Properties"]["Environment"]["Variables"])
    actions = {action for statement in role_statements(template, trigger) for action in as_list(statement["Action"])}
    assert actions <= {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}
    template.has_resource_properties(
        "AWS::Lambda::Permission",
        {"FunctionName": {"Fn::GetAtt": [trigger_id, "Arn"]}, "Principal": "cognito-idp.amazonaws.com"},
    )


def test_the_api_function_runs_in_the_vpc_with_its_settings(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, function = function_with_handler(template, API_HANDLER)
    properties = function["Properties"]
    assert properties["VpcConfig"]["SecurityGroupIds"]
    variables = properties["Environment"]["Variables"]
    expected = {"QUIRE_BUCKET", "QUIRE_STATE_MACHINE_ARN", "QUIRE_BEDROCK_EMBEDDING_MODEL_ID", "QUIRE_DATABASE_HOST"}
    assert expected <= set(variables)
    assert properties["Timeout"] < 30  # inside HTTP API's integration timeout


def test_the_api_role_grants_named_actions_on_named_resources_only(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, function = function_with_handler(template, API_HANDLER)
    statements = role_statements(template, function)
    granted: dict[str, list[str]] = {}
    for statement in statements:
        assert statement["Effect"] == "Allow"
        for action in as_list(statement["Action"]):
            assert "*" not in action, action
            granted.setdefault(action, []).extend(json.dumps(resource) for resource in as_list(statement["Resource"]))
    # Only AWS's own needs (X-Ray, the VPC's network interfaces) may name every resource.
    for action, resources in granted.items():
        if any(resource == '"*"' for resource in resources):
            assert action.startswith(("xray:", "ec2:")), action
    # No object of any tenant through the function's own role: only through a session of one tenant's.
    assert not [action for action in granted if action.startswith("s3:")]
    assert (
        granted["sts:AssumeRole"]
        == granted["sts:TagSession"]
        == [json.dumps({"Fn::GetAtt": [tenant_data_role_id(function), "Arn"]})]
    )
    # What each action may name, as the path after the bucket's ARN ("bucket" for the bucket itself).
    s3: dict[str, set[str]] = {}
    for statement in tenant_data_statements(template, function):
        for action in as_list(statement["Action"]):
            s3.setdefault(action, set()).update(
                resource["Fn::Join"][1][-1] if "Fn::Join" in resource else "bucket"
                for resource in as_list(statement["Resource"])
            )
    tenant = "${aws:PrincipalTag/tenant}"
    assert s3 == {
        # The tenant's originals (presigned POSTs, approved replacements), artifact content, staged replacements.
        "s3:PutObject": {
            f"/tenants/{tenant}/*",
            f"/derived/tenants/{tenant}/artifacts/*",
            f"/derived/tenants/{tenant}/replacements/*",
        },
        # Presigned and proxied reads of originals, by version; extracted documents.
        "s3:GetObject": {f"/tenants/{tenant}/*", f"/derived/tenants/{tenant}/*"},
        "s3:GetObjectVersion": {f"/tenants/{tenant}/*"},
        # A deletion tags the exact version deleted, so a presigned GET issued before it stops working.
        "s3:PutObjectTagging": {f"/tenants/{tenant}/*"},
        "s3:PutObjectVersionTagging": {f"/tenants/{tenant}/*"},
        # ...and removes it in the request (originals only: what was derived from it is the sweep's).
        "s3:DeleteObject": {f"/tenants/{tenant}/*"},
        "s3:DeleteObjectVersion": {f"/tenants/{tenant}/*"},
        "s3:ListBucket": {"bucket"},
        # Upload sessions: the parts S3 holds (a client resumes from them), and aborting.
        "s3:ListMultipartUploadParts": {f"/tenants/{tenant}/*"},
        "s3:AbortMultipartUpload": {f"/tenants/{tenant}/*"},
    }
    # Exports are rendered by the render function, invoked by name: that function only.
    (render,) = granted["lambda:InvokeFunction"]
    assert "RenderingFunction" in render and ":*" not in render
    models = [flat_arn(json.loads(resource)) for resource in granted["bedrock:InvokeModel"]]
    assert models == ["arn:<Partition>:bedrock:<Region>::foundation-model/amazon.titan-embed-text-v2:0"]
    assert len(granted["states:StartExecution"]) == 1
    assert "rds-db:connect" in granted


def test_the_user_pool_is_kept_in_prod_and_removed_in_dev(synthesized: tuple[str, Template]) -> None:
    env, template = synthesized
    _, pool = user_pool(template)
    if env == "prod":
        assert pool["DeletionPolicy"] == "Retain"
        assert pool["Properties"]["DeletionProtection"] == "ACTIVE"
    else:
        assert pool["DeletionPolicy"] == "Delete"
        assert pool["Properties"].get("DeletionProtection", "INACTIVE") == "INACTIVE"


@pytest.mark.parametrize(
    "origin",
    ["http://app.quire.example.com", "http://192.168.1.50:3000", "ftp://localhost"],
)
def test_an_origin_cognito_would_refuse_as_a_redirect_fails_synthesis(origin: str) -> None:
    with pytest.raises(ValueError, match="loopback"):
        redirect_urls((origin,), "/auth/callback")


def test_loopback_origins_may_use_plain_http() -> None:
    assert redirect_urls(("http://localhost:3000", "http://127.0.0.1:3000"), "/cb") == [
        "http://localhost:3000/cb",
        "http://127.0.0.1:3000/cb",
    ]
