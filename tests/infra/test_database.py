"""The database and migrations capabilities, asserted on the synthesized template (dev and prod).

Synthesis runs the cdk-nag AwsSolutions pack as a validation plugin, so every template here also passed
it: a finding without a written acknowledgement fails the fixture.
"""

import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Template

from infra.constructs.database import APP_ROLE
from infra.constructs.migrations import MIGRATIONS_DIR, migrations_digest
from infra.environments import settings_for
from migrations import runner


def only(template: Template, resource_type: str) -> tuple[str, Mapping[str, Any]]:
    resources = template.find_resources(resource_type)
    assert len(resources) == 1, f"{len(resources)} {resource_type}"
    return next(iter(resources.items()))


def get_att(logical_id: str, attribute: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, attribute]}


def statements(template: Template, role_logical_id: str | None = None) -> list[dict[str, Any]]:
    found = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        roles = policy["Properties"].get("Roles", [])
        if role_logical_id is None or {"Ref": role_logical_id} in roles:
            found.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return found


def actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def functions_with_env(template: Template, name: str, value: Any = None) -> dict[str, Mapping[str, Any]]:
    return {
        logical_id: function
        for logical_id, function in template.find_resources("AWS::Lambda::Function").items()
        if name in (variables := function["Properties"].get("Environment", {}).get("Variables", {}))
        and (value is None or variables[name] == value)
    }


def migrate_function(template: Template) -> tuple[str, Mapping[str, Any]]:
    [(logical_id, function)] = [
        (logical_id, function)
        for logical_id, function in template.find_resources("AWS::Lambda::Function").items()
        if function["Properties"]["Handler"] == "functions.migrate.handler.handler"
    ]
    return logical_id, function


def role_of(function: Mapping[str, Any]) -> str:
    logical_id: str = function["Properties"]["Role"]["Fn::GetAtt"][0]
    return logical_id


def security_group(template: Template, description_start: str) -> str:
    [logical_id] = [
        logical_id
        for logical_id, group in template.find_resources("AWS::EC2::SecurityGroup").items()
        if group["Properties"]["GroupDescription"].startswith(description_start)
    ]
    return logical_id


def ingress_to(template: Template, group: str) -> list[dict[str, Any]]:
    inline = template.find_resources("AWS::EC2::SecurityGroup")[group]["Properties"].get("SecurityGroupIngress", [])
    separate = [
        rule["Properties"]
        for rule in template.find_resources("AWS::EC2::SecurityGroupIngress").values()
        if rule["Properties"]["GroupId"] == get_att(group, "GroupId")
    ]
    return [*inline, *separate]


def sources(rules: list[dict[str, Any]]) -> set[str]:
    """The security groups the rules admit (a CIDR source shows as itself)."""
    return {
        rule["SourceSecurityGroupId"]["Fn::GetAtt"][0] if "SourceSecurityGroupId" in rule else rule["CidrIp"]
        for rule in rules
    }


# The cluster and its engine


def test_aurora_postgresql_serverless_v2_with_pgvector_0_8_sized_per_environment(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    settings = settings_for(env)
    _, cluster = only(template, "AWS::RDS::DBCluster")
    properties = cluster["Properties"]
    assert properties["Engine"] == "aurora-postgresql"
    # pgvector 0.8 (iterative index scans) ships with Aurora PostgreSQL 17.4+ and 16.8+.
    major, minor = (int(part) for part in properties["EngineVersion"].split("."))
    assert (major, minor) >= (17, 4) or (major == 16 and minor >= 8)
    assert properties["ServerlessV2ScalingConfiguration"] == {
        "MinCapacity": settings.aurora_min_capacity,
        "MaxCapacity": settings.aurora_max_capacity,
    }
    instances = template.find_resources("AWS::RDS::DBInstance")
    # prod keeps a reader in the other zone to fail over to; dev has the writer alone.
    assert len(instances) == (2 if settings.aurora_failover_reader else 1)
    for instance in instances.values():
        assert instance["Properties"]["DBInstanceClass"] == "db.serverless"
        assert instance["Properties"]["PubliclyAccessible"] is False


def test_dev_pauses_when_idle_and_prod_never_does(synthesized: tuple[str, Template]) -> None:
    env, template = synthesized
    _, cluster = only(template, "AWS::RDS::DBCluster")
    minimum = cluster["Properties"]["ServerlessV2ScalingConfiguration"]["MinCapacity"]
    assert minimum == (0 if env == "dev" else 0.5)


def test_storage_is_encrypted_iam_auth_is_on_and_every_connection_uses_tls(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, cluster = only(template, "AWS::RDS::DBCluster")
    assert cluster["Properties"]["StorageEncrypted"] is True
    assert cluster["Properties"]["EnableIAMDatabaseAuthentication"] is True
    _, parameters = only(template, "AWS::RDS::DBClusterParameterGroup")
    assert parameters["Properties"]["Parameters"]["rds.force_ssl"] == "1"


def test_the_owner_password_is_generated_and_rotated_by_rds(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, cluster = only(template, "AWS::RDS::DBCluster")
    assert cluster["Properties"]["ManageMasterUserPassword"] is True
    assert "MasterUserPassword" not in cluster["Properties"]
    assert cluster["Properties"]["MasterUsername"] != APP_ROLE


def test_backups_logs_and_deletion_follow_the_environment(synthesized: tuple[str, Template]) -> None:
    env, template = synthesized
    settings = settings_for(env)
    _, cluster = only(template, "AWS::RDS::DBCluster")
    properties = cluster["Properties"]
    assert properties["BackupRetentionPeriod"] == settings.backup_retention_days
    assert properties["EnableCloudwatchLogsExports"] == ["postgresql"]
    [(_, log_group)] = [
        item
        for item in template.find_resources("AWS::Logs::LogGroup").items()
        if item[1]["Properties"].get("LogGroupName")
        == f"/aws/rds/cluster/{properties['DBClusterIdentifier']}/postgresql"
    ]
    assert log_group["Properties"]["RetentionInDays"] == settings.log_retention_days
    if env == "prod":
        assert properties["DeletionProtection"] is True
        assert cluster["DeletionPolicy"] == "Snapshot"
        assert log_group["DeletionPolicy"] == "Retain"
    else:
        assert properties["DeletionProtection"] is False
        assert cluster["DeletionPolicy"] == "Delete"
        assert log_group["DeletionPolicy"] == "Delete"


# The proxy and who may connect through it


def test_the_proxy_requires_iam_end_to_end_and_tls(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, proxy = only(template, "AWS::RDS::DBProxy")
    properties = proxy["Properties"]
    assert properties["EngineFamily"] == "POSTGRESQL"
    # IAM_AUTH with no secret: a client can only present an IAM token; the proxy uses one of its own.
    assert properties["DefaultAuthScheme"] == "IAM_AUTH"
    assert "Auth" not in properties
    assert properties["RequireTLS"] is True
    assert properties["DebugLogging"] is False


def test_the_proxy_signs_in_to_the_cluster_only_as_quire_app(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, proxy = only(template, "AWS::RDS::DBProxy")
    cluster_id, _ = only(template, "AWS::RDS::DBCluster")
    proxy_role = proxy["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    [connect] = [s for s in statements(template, proxy_role) if "rds-db:connect" in actions(s)]
    parts = connect["Resource"]["Fn::Join"][1]
    assert parts[-3:] == [":dbuser:", get_att(cluster_id, "DBClusterResourceId"), f"/{APP_ROLE}"]


def test_functions_connect_as_quire_app_through_the_proxy_only(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    proxy_id, _ = only(template, "AWS::RDS::DBProxy")
    functions = functions_with_env(template, "QUIRE_DATABASE_IAM_AUTH", "true")
    assert functions
    proxy_resource_id = {"Fn::Select": [6, {"Fn::Split": [":", get_att(proxy_id, "DBProxyArn")]}]}
    for logical_id, function in functions.items():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables["QUIRE_DATABASE_HOST"] == get_att(proxy_id, "Endpoint"), logical_id
        assert variables["QUIRE_DATABASE_USER"] == APP_ROLE == runner.APP_ROLE
        assert (variables["QUIRE_DATABASE_PORT"], variables["QUIRE_DATABASE_NAME"]) == ("5432", "quire")
        [connect] = [s for s in statements(template, role_of(function)) if "rds-db:connect" in actions(s)]
        # arn:aws:rds-db:<region>:<account>:dbuser:<the proxy's resource id>/quire_app: no wildcard anywhere
        assert connect["Resource"]["Fn::Join"][1][-3:] == [":dbuser:", proxy_resource_id, f"/{APP_ROLE}"], logical_id
        assert "*" not in str(connect["Resource"])


def test_no_principal_may_connect_to_the_database_with_a_wildcard(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    for statement in statements(template):
        if any(action.startswith("rds-db:") for action in actions(statement)):
            assert actions(statement) == ["rds-db:connect"]
            assert "*" not in str(statement["Resource"])


# The network


def subnets_named(template: Template, name: str) -> dict[str, Mapping[str, Any]]:
    """The subnets of one of the VPC's subnet configurations (the CDK tags each with its name)."""
    return {
        logical_id: subnet
        for logical_id, subnet in template.find_resources("AWS::EC2::Subnet").items()
        if {"Key": "aws-cdk:subnet-name", "Value": name} in subnet["Properties"]["Tags"]
    }


def default_routes(template: Template, subnet_ids: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The routes of the route tables associated with these subnets."""
    tables = [
        association["Properties"]["RouteTableId"]
        for association in template.find_resources("AWS::EC2::SubnetRouteTableAssociation").values()
        if association["Properties"]["SubnetId"]["Ref"] in subnet_ids
    ]
    return [
        route["Properties"]
        for route in template.find_resources("AWS::EC2::Route").values()
        if route["Properties"]["RouteTableId"] in tables
    ]


def test_isolated_subnets_in_two_zones_route_nowhere_and_only_the_webhook_egress_subnets_reach_a_nat(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    isolated = subnets_named(template, "isolated")
    egress = subnets_named(template, "webhook-egress")
    public = subnets_named(template, "nat")
    assert len(isolated) == len(egress) == len(public) == 2
    assert len(template.find_resources("AWS::EC2::Subnet")) == 6
    for group in (isolated, egress, public):
        assert {s["Properties"]["AvailabilityZone"]["Fn::Select"][0] for s in group.values()} == {0, 1}
    # The isolated subnets' ranges are what they were before the others were added (a change would replace them).
    assert sorted(s["Properties"]["CidrBlock"] for s in isolated.values()) == ["10.0.0.0/22", "10.0.4.0/22"]
    # Nothing is given a public address: the NAT gateways have their Elastic IPs.
    for subnet in template.find_resources("AWS::EC2::Subnet").values():
        assert subnet["Properties"]["MapPublicIpOnLaunch"] is False
    assert default_routes(template, isolated) == []
    nat_gateways = template.find_resources("AWS::EC2::NatGateway")
    assert len(nat_gateways) == settings_for(env).webhook_nat_gateways == (2 if env == "prod" else 1)
    egress_routes = default_routes(template, egress)
    assert len(egress_routes) == 2
    for route in egress_routes:
        assert route["DestinationCidrBlock"] == "0.0.0.0/0" and route["NatGatewayId"]["Ref"] in nat_gateways
    for route in default_routes(template, public):
        assert route["DestinationCidrBlock"] == "0.0.0.0/0" and "GatewayId" in route
    assert {g["Properties"]["SubnetId"]["Ref"] for g in nat_gateways.values()} <= set(public)


def test_only_the_webhook_deliverer_runs_in_the_egress_subnets(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    egress = [{"Ref": logical_id} for logical_id in subnets_named(template, "webhook-egress")]
    in_egress = [
        function["Properties"]["Handler"]
        for function in template.find_resources("AWS::Lambda::Function").values()
        if any(subnet in egress for subnet in function["Properties"].get("VpcConfig", {}).get("SubnetIds", []))
    ]
    assert in_egress == ["functions.deliver_webhooks.handler.handler"]


def test_vpc_flow_logs_record_all_traffic(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    vpc_id, _ = only(template, "AWS::EC2::VPC")
    template.has_resource_properties(
        "AWS::EC2::FlowLog", {"ResourceId": {"Ref": vpc_id}, "ResourceType": "VPC", "TrafficType": "ALL"}
    )


def test_aws_apis_are_reached_through_vpc_endpoints(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    endpoints = {
        endpoint["Properties"]["ServiceName"]["Fn::Join"][1][-1].lstrip("."): endpoint["Properties"]
        for endpoint in template.find_resources("AWS::EC2::VPCEndpoint").values()
    }
    assert endpoints["s3"]["VpcEndpointType"] == "Gateway"
    # Exactly the APIs the functions call (Transcribe's: the recognize step's jobs; EventBridge's and SQS's: the relay
    # publishes events and wakes the webhook deliverer, and the API wakes it too).
    interfaces = {"secretsmanager", "states", "textract", "transcribe", "bedrock-runtime", "sts", "events", "sqs"}
    assert set(endpoints) == {"s3", *interfaces}
    # Through the gateway, only this account's buckets: no copying tenants' data to a bucket elsewhere.
    (statement,) = endpoints["s3"]["PolicyDocument"]["Statement"]
    assert statement["Condition"] == {"StringEquals": {"aws:ResourceAccount": {"Ref": "AWS::AccountId"}}}
    assert not [action for action in statement["Action"] if "*" in action]
    endpoints_group = security_group(template, "Quire interface VPC endpoints")
    for name in interfaces:
        assert endpoints[name]["VpcEndpointType"] == "Interface"
        assert endpoints[name]["PrivateDnsEnabled"] is True
        assert endpoints[name]["SecurityGroupIds"] == [get_att(endpoints_group, "GroupId")]


def egress_of(template: Template, group: str) -> list[dict[str, Any]]:
    inline = template.find_resources("AWS::EC2::SecurityGroup")[group]["Properties"].get("SecurityGroupEgress", [])
    separate = [
        rule["Properties"]
        for rule in template.find_resources("AWS::EC2::SecurityGroupEgress").values()
        if rule["Properties"]["GroupId"] == get_att(group, "GroupId")
    ]
    return [*inline, *separate]


def test_security_groups_open_only_the_chain_functions_proxy_cluster(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    functions = security_group(template, "Quire functions")
    webhooks = security_group(template, "Quire webhook deliverer")
    owner = security_group(template, "Quire migrations")
    proxy = security_group(template, "Quire RDS Proxy")
    cluster = security_group(template, "Quire Aurora cluster")
    endpoints = security_group(template, "Quire interface VPC endpoints")
    assert sources(ingress_to(template, proxy)) == {functions, webhooks}
    assert sources(ingress_to(template, cluster)) == {proxy, owner}
    assert sources(ingress_to(template, endpoints)) == {functions, owner, webhooks}
    assert ingress_to(template, functions) == [] and ingress_to(template, owner) == []
    assert ingress_to(template, webhooks) == []
    for rule in [*ingress_to(template, proxy), *ingress_to(template, cluster)]:
        assert rule["IpProtocol"] == "tcp"
        assert rule["FromPort"] in (5432, get_att(only(template, "AWS::RDS::DBCluster")[0], "Endpoint.Port"))
    assert {(rule["FromPort"], rule["ToPort"]) for rule in ingress_to(template, endpoints)} == {(443, 443)}
    # The webhook deliverer's way out: https to any address (its sender refuses every address that is not public),
    # the proxy and the endpoints (SQS); no other port.
    assert sorted(
        (rule.get("CidrIp") or rule["DestinationSecurityGroupId"]["Fn::GetAtt"][0], rule["FromPort"], rule["ToPort"])
        for rule in egress_of(template, webhooks)
    ) == sorted([("0.0.0.0/0", 443, 443), (proxy, 5432, 5432), (endpoints, 443, 443)])
    # No group allows all outbound traffic.
    for group in template.find_resources("AWS::EC2::SecurityGroup").values():
        for rule in group["Properties"].get("SecurityGroupEgress", []):
            assert rule["IpProtocol"] != "-1"


def test_app_functions_run_in_the_isolated_subnets_with_the_functions_group(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    functions_group = security_group(template, "Quire functions")
    webhooks_group = security_group(template, "Quire webhook deliverer")
    isolated = [{"Ref": logical_id} for logical_id in subnets_named(template, "isolated")]
    egress = [{"Ref": logical_id} for logical_id in subnets_named(template, "webhook-egress")]
    for logical_id, function in functions_with_env(template, "QUIRE_DATABASE_IAM_AUTH", "true").items():
        vpc_config = function["Properties"]["VpcConfig"]
        # The webhook deliverer alone has a way out (test_only_the_webhook_deliverer_runs_in_the_egress_subnets).
        deliverer = function["Properties"]["Handler"] == "functions.deliver_webhooks.handler.handler"
        group, subnets = (webhooks_group, egress) if deliverer else (functions_group, isolated)
        assert vpc_config["SecurityGroupIds"] == [get_att(group, "GroupId")], logical_id
        assert sorted(map(str, vpc_config["SubnetIds"])) == sorted(map(str, subnets)), logical_id


# Migrations


def test_the_migrate_function_connects_to_the_writer_as_the_owner(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    cluster_id, _ = only(template, "AWS::RDS::DBCluster")
    _, function = migrate_function(template)
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables["QUIRE_DATABASE_HOST"] == get_att(cluster_id, "Endpoint.Address")
    assert variables["QUIRE_DATABASE_OWNER_SECRET_ARN"] == get_att(cluster_id, "MasterUserSecret.SecretArn")
    assert variables["QUIRE_EMBEDDING_DIMENSION"] == "1024"
    assert "QUIRE_DATABASE_IAM_AUTH" not in variables
    owner_group = security_group(template, "Quire migrations")
    assert function["Properties"]["VpcConfig"]["SecurityGroupIds"] == [get_att(owner_group, "GroupId")]


def test_only_the_migrate_function_reads_a_secret_and_only_the_owners(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    cluster_id, _ = only(template, "AWS::RDS::DBCluster")
    _, function = migrate_function(template)
    readers = [
        (role, statement)
        for role in template.find_resources("AWS::IAM::Role")
        for statement in statements(template, role)
        if any(action.startswith("secretsmanager:") for action in actions(statement))
    ]
    assert [role for role, _ in readers] == [role_of(function)]
    [(_, statement)] = readers
    assert statement["Resource"] == get_att(cluster_id, "MasterUserSecret.SecretArn")
    assert set(actions(statement)) == {"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}


def test_the_custom_resource_carries_the_migrations_digest(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, resource = only(template, "Custom::QuireMigrations")
    assert resource["Properties"]["MigrationsDigest"] == migrations_digest()
    assert re.fullmatch(r"[0-9a-f]{64}", resource["Properties"]["MigrationsDigest"])
    assert resource["Properties"]["EmbeddingDimension"] == "1024"


def test_the_custom_resource_runs_after_the_writer_and_the_network_exist(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    _, resource = only(template, "Custom::QuireMigrations")
    (writer_id,) = [i for i in template.find_resources("AWS::RDS::DBInstance") if "Writer" in i]
    secrets_endpoint = [
        logical_id
        for logical_id, endpoint in template.find_resources("AWS::EC2::VPCEndpoint").items()
        if endpoint["Properties"]["ServiceName"]["Fn::Join"][1][-1] == ".secretsmanager"
    ]
    assert {writer_id, *secrets_endpoint} <= set(resource["DependsOn"])


def test_a_changed_or_added_migration_changes_the_digest(tmp_path: Path) -> None:
    copy = tmp_path / "migrations"
    # The migrations and their Python steps, not the runner nor the package's own modules.
    shutil.copytree(
        MIGRATIONS_DIR, copy, ignore=shutil.ignore_patterns("runner.py", "__init__.py", "__pycache__", "certificates")
    )
    assert migrations_digest(copy) == migrations_digest()
    # The files the digest covers are exactly the ones the runner applies: each SQL file and any step beside it.
    assert sorted(p.name for p in copy.glob("*.sql")) == [
        f"{m.version}_{m.name}.sql" for m in runner.discover(MIGRATIONS_DIR)
    ]
    assert sorted(p.name for p in copy.glob("*.py")) == [
        m.step.name for m in runner.discover(MIGRATIONS_DIR) if m.step is not None
    ]
    step = next(copy.glob("*.py"))
    step.write_text(step.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert migrations_digest(copy) != migrations_digest()  # a step is part of its migration
    step.write_text(step.read_text(encoding="utf-8").removesuffix("\n# edited\n"), encoding="utf-8")
    first = sorted(copy.glob("*.sql"))[0]
    first.write_text(first.read_text(encoding="utf-8") + "\n-- edited\n", encoding="utf-8")
    edited = migrations_digest(copy)
    assert edited != migrations_digest()
    (copy / "9999_later.sql").write_text("SELECT 1;\n", encoding="utf-8")
    assert migrations_digest(copy) not in {edited, migrations_digest()}
