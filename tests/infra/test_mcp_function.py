"""The MCP server on the synthesized template, per environment: the function behind the Lambda Web Adapter, its
routes without the gateway's authorizer, the settings it verifies tokens with, and grants no wider than the API
function's.

Every template here passed cdk-nag's AwsSolutions pack (tests/infra/conftest.py: a finding without a written
acknowledgement fails synthesis); the acknowledgements this server adds are checked below to name only its
routes and the provider framework's invoke grant.
"""

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from infra.app import build_app
from infra.constructs.api import PUBLIC_ROUTES
from infra.constructs.mcp import (
    APP_PORT,
    EXEC_WRAPPER,
    MCP_ROUTES,
    READINESS_PATH,
    SIGNING_KEYS_HANDLER,
    WEB_ADAPTER_VERSION,
)
from infra.environments import settings_for
from shared.adapters.aws.cognito_tokens import MAX_SNAPSHOT_BYTES
from shared.config import Settings
from tests.infra.policy_evaluation import Request, allowed, role_arn
from tests.infra.policy_evaluation import Template as Policies
from tests.infra.synthesis import stand_in_console
from tests.infra.template import (
    API_HANDLER,
    MCP_HANDLER,
    as_list,
    function_with_handler,
    only,
    role_statements,
    statements_of_role,
    tenant_data_role_id,
)

ACKNOWLEDGED = cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY


def variables(function: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = function["Properties"]["Environment"]["Variables"]
    return found


def jwt_authorizer(template: Template) -> Mapping[str, Any]:
    _, authorizer = only(template.find_resources("AWS::ApiGatewayV2::Authorizer"))
    configuration: Mapping[str, Any] = authorizer["Properties"]["JwtConfiguration"]
    return configuration


def routes(template: Template) -> dict[str, dict[str, Any]]:
    return {
        route["Properties"]["RouteKey"]: route["Properties"]
        for route in template.find_resources("AWS::ApiGatewayV2::Route").values()
    }


def flat(value: Any) -> str:
    """An intrinsic as text, references named: {"Ref": "AWS::Region"} reads <AWS::Region>."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "<{}.{}>".format(*value["Fn::GetAtt"])
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(flat(part) for part in parts)
    raise ValueError(f"cannot flatten {value!r}")


def grants(template: Template, statements: list[dict[str, Any]], own: Mapping[str, str]) -> set[tuple[str, ...]]:
    """Each (effect, action, resource, condition) a role's statements allow, with the resources that are the
    function's own (its log group, its tenant data role) named by their part rather than their logical id."""
    found: set[tuple[str, ...]] = set()
    for statement in statements:
        condition = json.dumps(statement.get("Condition"), sort_keys=True)
        for action in as_list(statement["Action"]):
            for resource in as_list(statement["Resource"]):
                text = json.dumps(resource, sort_keys=True)
                for logical_id, part in own.items():
                    text = text.replace(f'"{logical_id}"', f'"<{part}>"')
                found.add((statement["Effect"], action, text, condition))
    return found


def own_resources(function: Mapping[str, Any]) -> dict[str, str]:
    log_group = function["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    return {log_group: "own log group", tenant_data_role_id(function): "own tenant data role"}


@pytest.fixture(scope="module")
def acknowledgements(
    package_dirs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, str]]:
    """Every acknowledged cdk-nag rule in the dev stack's construct tree, by construct path."""
    code_dir, layer_dir = package_dirs
    root = tmp_path_factory.mktemp("cdk-mcp")
    _, stack = build_app(
        "dev", outdir=str(root), code_dir=code_dir, layer_dir=layer_dir, console_dir=stand_in_console(root)
    )
    return {
        construct.node.path: entry.data
        for construct in stack.node.find_all()
        for entry in construct.node.metadata
        if entry.type == ACKNOWLEDGED
    }


def test_the_function_runs_the_web_adapter_on_arm64_python_3_12_with_the_dependency_layer(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    _, api = function_with_handler(template, API_HANDLER)
    _, mcp = function_with_handler(template, MCP_HANDLER)
    properties = mcp["Properties"]
    assert (properties["Runtime"], properties["Architectures"]) == ("python3.12", ["arm64"])
    dependencies, adapter = properties["Layers"]
    assert dependencies == api["Properties"]["Layers"][0]
    assert flat(adapter) == (
        f"arn:aws:lambda:<AWS::Region>:753240598075:layer:LambdaAdapterLayerArm64:{WEB_ADAPTER_VERSION}"
    )
    found = variables(mcp)
    assert found["AWS_LAMBDA_EXEC_WRAPPER"] == EXEC_WRAPPER == "/opt/bootstrap"
    assert found["AWS_LWA_PORT"] == str(APP_PORT) == "8080"
    assert found["AWS_LWA_READINESS_CHECK_PATH"] == READINESS_PATH
    # Inside HTTP API's 30-second integration limit, with the API's room for bounded children.
    assert properties["Timeout"] == api["Properties"]["Timeout"] < 30
    assert properties["MemorySize"] == api["Properties"]["MemorySize"]
    assert properties["TracingConfig"] == {"Mode": "Active"}
    # Its own log group, kept as long as the environment keeps logs.
    log_group = template.find_resources("AWS::Logs::LogGroup")[properties["LoggingConfig"]["LogGroup"]["Ref"]]
    assert log_group["Properties"]["RetentionInDays"] == settings_for(env).log_retention_days
    assert properties["LoggingConfig"] != api["Properties"]["LoggingConfig"]


def test_the_function_reaches_the_database_as_the_api_function_does(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, api = function_with_handler(template, API_HANDLER)
    _, mcp = function_with_handler(template, MCP_HANDLER)
    assert mcp["Properties"]["VpcConfig"] == api["Properties"]["VpcConfig"]
    database = {name: value for name, value in variables(api).items() if name.startswith("QUIRE_DATABASE_")}
    assert database and database.items() <= variables(mcp).items()
    # Every setting the API function's services read, the tools (the same services) get too; but the webhook queue:
    # MCP has no webhook tool (issue 34: an agent does not register endpoints, or replay or test their deliveries).
    shared = set(variables(api)) - {"QUIRE_TENANT_DATA_ROLE_ARN", "QUIRE_WEBHOOK_QUEUE_URL"}
    assert shared <= set(variables(mcp)), shared - set(variables(mcp))


def test_the_settings_name_the_apis_host_and_the_authorizers_issuer_client_and_scope(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    _, mcp = function_with_handler(template, MCP_HANDLER)
    found = variables(mcp)
    (api_id,) = template.find_resources("AWS::ApiGatewayV2::Api")
    host = f"<{api_id}>.execute-api.<AWS::Region>.<AWS::URLSuffix>"
    assert flat(found["QUIRE_MCP_ALLOWED_HOSTS"]) == host
    assert flat(found["QUIRE_MCP_RESOURCE_URL"]) == f"https://{host}/mcp"
    authorizer = jwt_authorizer(template)
    # Exactly what the gateway's JWT authorizer checks on every other route.
    assert found["QUIRE_MCP_ISSUER_URL"] == found["QUIRE_COGNITO_ISSUER_URL"] == authorizer["Issuer"]
    assert [found["QUIRE_COGNITO_CLIENT_IDS"]] == authorizer["Audience"]
    scopes = {
        tuple(route["AuthorizationScopes"]) for route in routes(template).values() if "AuthorizationScopes" in route
    }
    assert scopes == {(found["QUIRE_COGNITO_REQUIRED_SCOPE"],)}
    # The verifier's default is that scope too (infra never imports shared/config.py: this test holds them).
    assert Settings.model_fields["cognito_required_scope"].default == found["QUIRE_COGNITO_REQUIRED_SCOPE"]


def test_the_environment_fits_lambdas_4_kb_with_the_largest_snapshot_of_signing_keys(
    synthesized: tuple[str, Template],
) -> None:
    """Lambda allows 4 KB for all of a function's variables; the signing keys are the largest of them."""
    _, template = synthesized
    _, mcp = function_with_handler(template, MCP_HANDLER)
    pseudo = {"AWS::Region": len("ap-southeast-4"), "AWS::URLSuffix": len("amazonaws.com"), "AWS::Partition": 3}

    def longest(value: Any) -> int:
        if isinstance(value, str):
            return len(value)
        if "Fn::Join" in value:
            return sum(longest(part) for part in value["Fn::Join"][1])
        if value.get("Fn::GetAtt", [None, None])[1] == "Jwks":
            return MAX_SNAPSHOT_BYTES
        # A resource's name, ARN or endpoint: generously long.
        return pseudo.get(value.get("Ref"), 128)

    assert sum(len(name) + longest(value) for name, value in variables(mcp).items()) <= 4096


def test_the_pools_signing_keys_are_read_at_deploy_time_outside_the_vpc_by_a_function_that_only_logs(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    _, mcp = function_with_handler(template, MCP_HANDLER)
    snapshot_id, attribute = variables(mcp)["QUIRE_COGNITO_JWKS"]["Fn::GetAtt"]
    assert attribute == "Jwks"
    snapshot = template.to_json()["Resources"][snapshot_id]
    assert snapshot["Type"] == "Custom::QuireCognitoSigningKeys"
    assert snapshot["Properties"]["Issuer"] == jwt_authorizer(template)["Issuer"]
    _, reader = function_with_handler(template, SIGNING_KEYS_HANDLER)
    # Outside the VPC: Cognito's JWKS is on its public endpoint, which the isolated subnets cannot reach.
    assert "VpcConfig" not in reader["Properties"]
    assert not any(name.startswith("QUIRE_DATABASE_") for name in variables(reader))
    actions = {action for statement in role_statements(template, reader) for action in as_list(statement["Action"])}
    assert actions <= {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}


def test_only_the_mcp_routes_and_the_public_rest_routes_go_without_the_jwt_authorizer(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    mcp_id, _ = function_with_handler(template, MCP_HANDLER)
    integrations = template.find_resources("AWS::ApiGatewayV2::Integration")
    (mcp_integration,) = [
        integration_id
        for integration_id, integration in integrations.items()
        if mcp_id in json.dumps(integration["Properties"]["IntegrationUri"])
    ]
    mcp = {f"{method} {path}" for method, path in MCP_ROUTES}
    assert mcp == {"POST /mcp", "GET /.well-known/oauth-protected-resource/mcp"}
    public = mcp | {f"{method} {path}" for method, path in PUBLIC_ROUTES}
    found = routes(template)
    assert mcp <= set(found)
    # No GET (the event stream a stateless server never writes to, which would hold a sandbox for 29 s) and no
    # DELETE (no session to end): API Gateway answers both without invoking anything.
    assert not {key for key in found if key.endswith(" /mcp")} - {"POST /mcp"}
    for key, route in found.items():
        if key in public:
            assert route.get("AuthorizationType", "NONE") == "NONE" and "AuthorizerId" not in route, key
        else:
            assert route["AuthorizationType"] == "JWT" and route["AuthorizationScopes"] == ["quire/api"], key
        # The MCP routes, and only they, reach the MCP function.
        assert (mcp_integration in json.dumps(route["Target"])) == (key in mcp), key
    # Named methods, not ANY: the browser's CORS preflight stays API Gateway's to answer.
    assert not any(key.startswith("ANY ") for key in found)


def test_its_roles_may_do_for_tenants_what_the_api_functions_may_and_no_more(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, api = function_with_handler(template, API_HANDLER)
    _, mcp = function_with_handler(template, MCP_HANDLER)
    # Its own role: the same named actions on the same resources (the embedding model, the state machine, the
    # render function, the database as quire_app, its own tenant data role), its own log group.
    # But waking the webhook deliverer (a replay's, a test's): no webhook tool.
    api_grants = grants(template, role_statements(template, api), own_resources(api))
    (wake,) = [grant for grant in api_grants if grant[1] == "sqs:SendMessage"]
    assert "WebhookWakeUps" in wake[2]
    assert grants(template, role_statements(template, mcp), own_resources(mcp)) == api_grants - {wake}
    # A session of one tenant's: the same objects under the same prefixes.
    mcp_data, api_data = tenant_data_role_id(mcp), tenant_data_role_id(api)
    assert mcp_data != api_data, "its own tenant data role, as every function has"
    assert grants(template, statements_of_role(template, mcp_data), {}) == grants(
        template, statements_of_role(template, api_data), {}
    )


def test_only_its_own_role_may_start_its_tenant_sessions(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, api = function_with_handler(template, API_HANDLER)
    _, mcp = function_with_handler(template, MCP_HANDLER)
    policies = Policies(template.to_json()["Resources"])
    target = role_arn(tenant_data_role_id(mcp))
    trust = policies.trust_statements(tenant_data_role_id(mcp))
    context: dict[str, Any] = {"aws:RequestTag/tenant": "acme", "aws:TagKeys": ["tenant"]}

    def may_assume(function: Mapping[str, Any]) -> bool:
        caller = role_arn(function["Properties"]["Role"]["Fn::GetAtt"][0])
        return all(
            allowed(Request(action, target, caller, context), [], trust)
            for action in ("sts:AssumeRole", "sts:TagSession")
        )

    assert may_assume(mcp)
    assert not may_assume(api)


def test_its_errors_and_throttles_alarm_and_prod_reserves_its_own_concurrency(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    mcp_id, mcp = function_with_handler(template, MCP_HANDLER)
    watched = {
        alarm["Properties"]["MetricName"]
        for alarm in template.find_resources("AWS::CloudWatch::Alarm").values()
        if {"Name": "FunctionName", "Value": {"Ref": mcp_id}} in alarm["Properties"].get("Dimensions", [])
    }
    assert watched == {"Errors", "Throttles"}
    reserved = settings_for(env).reserved_concurrency
    assert mcp["Properties"].get("ReservedConcurrentExecutions") == (reserved.mcp if reserved else None)


def test_the_acknowledged_findings_are_the_unauthenticated_routes_and_the_providers_invoke_grant(
    acknowledgements: dict[str, dict[str, str]],
) -> None:
    ours = {path: rules for path, rules in acknowledgements.items() if path.startswith("Quire-dev/Mcp/")}
    routes_ = {path: rules for path, rules in acknowledgements.items() if re.search(r"/HttpApi/\w+--", path)}
    # APIG4 on each route without the gateway's authorizer, and on those only, each with its reason.
    assert sorted(routes_) == sorted(
        [
            *(
                f"Quire-dev/Api/HttpApi/{method}--{path.strip('/').replace('/', '--')}"
                for method, path in PUBLIC_ROUTES
            ),
            "Quire-dev/Api/HttpApi/POST--mcp",
            "Quire-dev/Api/HttpApi/GET--.well-known--oauth-protected-resource--mcp",
        ]
    )
    for path, rules in routes_.items():
        assert set(rules) == {"AwsSolutions::AwsSolutions-APIG4"}, path
        if path.endswith("mcp"):
            assert "WWW-Authenticate" in rules["AwsSolutions::AwsSolutions-APIG4"], path
            assert "request rate" in rules["AwsSolutions::AwsSolutions-APIG4"], path
    # The MCP construct's own: those every function has (Python 3.12, X-Ray and ENI actions), the VPC's ENI
    # policy, and the provider framework's grant to invoke the signing keys function.
    acknowledged = {rule.removeprefix("AwsSolutions::AwsSolutions-") for found in ours.values() for rule in found}
    assert {re.sub(r"\[.*", "", rule) for rule in acknowledged} == {"L1", "IAM5", "IAM4"}
    framework = [rule for rule in acknowledged if rule.startswith("IAM5[Resource::<McpSigningKeys")]
    assert len(framework) == 1 and framework[0].endswith(".Arn>:*]")


def test_the_staged_code_carries_the_adapters_startup_script_executable(package_dirs: tuple[Path, Path]) -> None:
    """The wrapper executes the handler as a file under the code root (`exec -- $LAMBDA_TASK_ROOT/$_HANDLER`)."""
    code_dir, _ = package_dirs
    script = code_dir / MCP_HANDLER
    if not (Path(__file__).parents[2] / MCP_HANDLER).exists():
        pytest.skip(f"{MCP_HANDLER} arrives with the MCP server itself")
    assert script.is_file() and os.access(script, os.X_OK)
    assert script.read_text(encoding="utf-8").startswith("#!")
