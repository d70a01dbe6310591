"""Database: Aurora PostgreSQL Serverless v2 (pgvector 0.8) behind an RDS Proxy, in a VPC whose one way out is
the webhook deliverer's.

The database, the proxy and every function but one run in private isolated subnets in two AZs, which route
nowhere: functions reach AWS APIs through VPC endpoints (an S3 gateway, interface endpoints for the rest) and the
database only through the proxy. The webhook deliverer (infra/constructs/events.py) must POST to customers' https
endpoints on the internet: it alone runs in the egress subnets, whose default route is a NAT gateway in a public
subnet (one per zone in prod, `webhook_nat_gateways`), with a security group of its own that opens 443 and the
proxy, nothing else; nothing else runs in those subnets or in the public ones.

The application role (`quire_app`, created by migrations/0001) authenticates with IAM end to end: the function signs
a token for the proxy, the proxy signs its own for the cluster, and no password for that role exists anywhere. The
owner's (master) password is generated, kept and rotated by RDS in Secrets Manager; only the migrations read it.

Traffic allowed, and nothing else:
    functions, webhook deliverer -> proxy:5432 -> cluster:5432
    migrations (the owner) -> cluster writer:5432
    functions, webhook deliverer, migrations -> endpoints:443;  functions -> S3 (gateway endpoint):443
    webhook deliverer -> any address:443, through the NAT gateway (the sender refuses every address that is not
    public unicast before it connects: shared/domain/outbound.py, docs/security.md)
"""

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.constructs.functions import acknowledge, log_retention
from infra.environments import EnvironmentSettings

# Aurora PostgreSQL 17.7: pgvector 0.8.0 (iterative index scans) ships with Aurora PostgreSQL 17.4 and
# later (16.8+ on the 16 line); Serverless v2 scales it to 0 ACUs (auto-pause); RDS Proxy fronts it with
# end-to-end IAM auth. migrations/0001 refuses a pgvector older than 0.8 whatever this says.
ENGINE_VERSION = rds.AuroraPostgresEngineVersion.VER_17_7
DATABASE_NAME = "quire"
PORT = 5432
# The role migrations/0001 creates (migrations.runner.APP_ROLE; infra never imports runtime code).
APP_ROLE = "quire_app"
# The owner: creates the schema, owns every table; the application never connects as it.
OWNER_USERNAME = "quire_owner"
_ISOLATED = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
WEBHOOK_EGRESS = ec2.SubnetType.PRIVATE_WITH_EGRESS


class Database(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: EnvironmentSettings) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        removal = cdk.RemovalPolicy.RETAIN if settings.retain_data else cdk.RemovalPolicy.DESTROY

        flow_logs = logs.LogGroup(
            self, "FlowLogs", retention=log_retention(settings.log_retention_days), removal_policy=removal
        )
        self.vpc = ec2.Vpc(
            self,
            "Network",
            max_azs=2,
            nat_gateways=settings.webhook_nat_gateways,
            # The isolated subnets first, so that their address ranges stay what they were before the others.
            subnet_configuration=[
                ec2.SubnetConfiguration(name="isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=22),
                ec2.SubnetConfiguration(name="webhook-egress", subnet_type=WEBHOOK_EGRESS, cidr_mask=24),
                # The NAT gateways only.
                ec2.SubnetConfiguration(
                    name="nat", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=28, map_public_ip_on_launch=False
                ),
            ],
            # Nothing is ever placed in the default security group; locking it down would cost a CDK
            # custom-resource Lambda for no gain.
            restrict_default_security_group=False,
            flow_logs={
                "All": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
                    traffic_type=ec2.FlowLogTrafficType.ALL,
                )
            },
        )

        self.functions_security_group = self._security_group(
            "FunctionsSecurityGroup", "Quire functions: to the RDS Proxy and to AWS APIs through VPC endpoints"
        )
        self.owner_security_group = self._security_group(
            "OwnerSecurityGroup", "Quire migrations: to the cluster writer as the owner, and to Secrets Manager"
        )
        self.webhook_egress_security_group = self._security_group(
            "WebhookEgressSecurityGroup",
            "Quire webhook deliverer: to the RDS Proxy, to AWS APIs through VPC endpoints, to https endpoints",
        )
        self.proxy_security_group = self._security_group("ProxySecurityGroup", "Quire RDS Proxy: to the cluster")
        self.cluster_security_group = self._security_group("ClusterSecurityGroup", "Quire Aurora cluster")
        self.endpoints_security_group = self._security_group(
            "EndpointsSecurityGroup", "Quire interface VPC endpoints: HTTPS from Quire functions"
        )

        self._add_endpoints()

        # A fixed identifier lets the cluster's log group exist (with its retention and removal policy) before
        # RDS first writes to it; and a change that would replace the cluster fails instead of losing data.
        identifier = f"{cdk.Stack.of(self).stack_name}-database".lower()
        postgres_logs = logs.LogGroup(
            self,
            "PostgresLogs",
            log_group_name=f"/aws/rds/cluster/{identifier}/postgresql",
            retention=log_retention(settings.log_retention_days),
            removal_policy=removal,
        )
        self.cluster = rds.DatabaseCluster(
            self,
            "Cluster",
            engine=rds.DatabaseClusterEngine.aurora_postgres(version=ENGINE_VERSION),
            cluster_identifier=identifier,
            default_database_name=DATABASE_NAME,
            port=PORT,
            # RDS generates the owner's password, stores it in Secrets Manager and rotates it (every 7 days).
            credentials=rds.Credentials.from_username(OWNER_USERNAME),
            manage_master_user_password=True,
            iam_authentication=True,
            storage_encrypted=True,
            writer=rds.ClusterInstance.serverless_v2("Writer", auto_minor_version_upgrade=True),
            # prod: a reader in the other zone to fail over to (tier 0-1 scales with the writer).
            readers=[
                rds.ClusterInstance.serverless_v2("Reader", auto_minor_version_upgrade=True, scale_with_writer=True)
            ]
            if settings.aurora_failover_reader
            else None,
            serverless_v2_min_capacity=settings.aurora_min_capacity,
            serverless_v2_max_capacity=settings.aurora_max_capacity,
            vpc=self.vpc,
            vpc_subnets=_ISOLATED,
            security_groups=[self.cluster_security_group],
            # Every connection encrypted, the owner's direct ones included (the proxy already requires TLS).
            parameters={"rds.force_ssl": "1"},
            backup=rds.BackupProps(retention=cdk.Duration.days(settings.backup_retention_days)),
            copy_tags_to_snapshot=True,
            cloudwatch_logs_exports=["postgresql"],
            deletion_protection=settings.retain_data,
            # prod: a final snapshot when the stack goes (deletion protection must be lifted first).
            removal_policy=cdk.RemovalPolicy.SNAPSHOT if settings.retain_data else cdk.RemovalPolicy.DESTROY,
        )
        self.cluster.node.add_dependency(postgres_logs)
        secret = self.cluster.secret
        if secret is None:  # pragma: no cover - manage_master_user_password always yields one
            raise AssertionError("the cluster has no managed owner secret")
        self.owner_secret: secretsmanager.ISecret = secret

        proxy_role = iam.Role(
            self,
            "ProxyRole",
            assumed_by=iam.ServicePrincipal("rds.amazonaws.com"),
            description="Quire RDS Proxy: connects to the cluster as quire_app with IAM authentication",
        )
        # End-to-end IAM: the proxy signs in to the cluster as the role its client signed in as.
        self.cluster.grant_connect(proxy_role, APP_ROLE)
        self.proxy = rds.DatabaseProxy(
            self,
            "Proxy",
            proxy_target=rds.ProxyTarget.from_cluster(self.cluster),
            # Named per stack: the construct id alone would collide between environments in one account.
            db_proxy_name=identifier,
            vpc=self.vpc,
            vpc_subnets=_ISOLATED,
            security_groups=[self.proxy_security_group],
            role=proxy_role,
            # Clients must present an IAM token (no secret, so no password path) over TLS.
            default_auth_scheme=rds.DefaultAuthScheme.IAM_AUTH,
            require_tls=True,
            debug_logging=False,
        )

        self.proxy_security_group.connections.allow_from(
            self.functions_security_group, ec2.Port.tcp(PORT), "Quire functions to the RDS Proxy"
        )
        self.proxy_security_group.connections.allow_from(
            self.webhook_egress_security_group, ec2.Port.tcp(PORT), "The webhook deliverer to the RDS Proxy"
        )
        # (proxy -> cluster on the cluster's port is added by the proxy target itself.)
        self.cluster_security_group.connections.allow_from(
            self.owner_security_group, ec2.Port.tcp(PORT), "Migrations (the owner) to the cluster writer"
        )
        self._acknowledge(settings)

    def connection_environment(self) -> dict[str, str]:
        """What a function reads (shared/config.py) to connect as quire_app through the proxy with IAM auth."""
        return {
            "QUIRE_DATABASE_IAM_AUTH": "true",
            "QUIRE_DATABASE_HOST": self.proxy.endpoint,
            "QUIRE_DATABASE_PORT": str(PORT),
            "QUIRE_DATABASE_NAME": DATABASE_NAME,
            "QUIRE_DATABASE_USER": APP_ROLE,
        }

    def owner_connection_environment(self) -> dict[str, str]:
        """What the migrations read to connect as the owner, directly to the writer (never through the proxy)."""
        return {
            "QUIRE_DATABASE_HOST": self.cluster.cluster_endpoint.hostname,
            "QUIRE_DATABASE_PORT": str(PORT),
            "QUIRE_DATABASE_NAME": DATABASE_NAME,
            "QUIRE_DATABASE_OWNER_SECRET_ARN": self.owner_secret.secret_arn,
        }

    def grant_connect(self, grantee: iam.IGrantable) -> None:
        """rds-db:connect as quire_app through this proxy only (its resource id, that user: no wildcard)."""
        self.proxy.grant_connect(grantee, APP_ROLE)

    def grant_owner_secret_read(self, grantee: iam.IGrantable) -> None:
        """Read the owner's credentials: that one secret (RDS encrypts it with the AWS managed key)."""
        self.owner_secret.grant_read(grantee)

    def _security_group(self, construct_id: str, description: str) -> ec2.SecurityGroup:
        # No default egress: each group may open only what a rule below names.
        return ec2.SecurityGroup(self, construct_id, vpc=self.vpc, description=description, allow_all_outbound=False)

    def _add_endpoints(self) -> None:
        s3_endpoint = self.vpc.add_gateway_endpoint(
            "S3Endpoint", service=ec2.GatewayVpcEndpointAwsService.S3, subnets=[_ISOLATED]
        )
        # Only this account's buckets: a compromised function cannot copy tenants' data to a bucket elsewhere.
        s3_endpoint.add_to_policy(
            iam.PolicyStatement(
                principals=[iam.AnyPrincipal()],
                actions=[
                    "s3:GetObject",
                    "s3:GetObjectVersion",
                    "s3:PutObject",
                    "s3:DeleteObject",
                    "s3:DeleteObjectVersion",
                    "s3:ListBucket",
                    "s3:ListBucketVersions",
                    # A deletion tags the version it deletes (infra/constructs/storage.py's DELETED_TAG_KEY).
                    "s3:PutObjectTagging",
                    "s3:PutObjectVersionTagging",
                ],
                resources=["*"],
                conditions={"StringEquals": {"aws:ResourceAccount": cdk.Stack.of(self).account}},
            )
        )
        interface_services = {
            "SecretsManagerEndpoint": ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER,
            "StepFunctionsEndpoint": ec2.InterfaceVpcEndpointAwsService.STEP_FUNCTIONS,
            "TextractEndpoint": ec2.InterfaceVpcEndpointAwsService.TEXTRACT,
            # The recognize step starts and polls transcription jobs.
            "TranscribeEndpoint": ec2.InterfaceVpcEndpointAwsService.TRANSCRIBE,
            "BedrockRuntimeEndpoint": ec2.InterfaceVpcEndpointAwsService.BEDROCK_RUNTIME,
            # Tenant-scoped sessions (infra/constructs/tenant_data.py) are assumed from inside the VPC.
            "StsEndpoint": ec2.InterfaceVpcEndpointAwsService.STS,
            # The relay publishes events (infra/constructs/events.py) and wakes webhook deliveries.
            "EventBridgeEndpoint": ec2.InterfaceVpcEndpointAwsService.EVENTBRIDGE,
            "SqsEndpoint": ec2.InterfaceVpcEndpointAwsService.SQS,
        }
        if self._settings.rerank_model_id is not None:
            # Searches rerank through the agent runtime's Rerank (infra/constructs/api.py grant_rerank_model).
            interface_services["BedrockAgentRuntimeEndpoint"] = ec2.InterfaceVpcEndpointAwsService.BEDROCK_AGENT_RUNTIME
        for construct_id, service in interface_services.items():
            self.vpc.add_interface_endpoint(
                construct_id,
                service=service,
                subnets=_ISOLATED,
                security_groups=[self.endpoints_security_group],
                private_dns_enabled=True,
                # Not the whole VPC CIDR: only the two groups below.
                open=False,
            )
        https = ec2.Port.tcp(443)
        self.endpoints_security_group.connections.allow_from(
            self.functions_security_group, https, "Quire functions to AWS APIs"
        )
        self.endpoints_security_group.connections.allow_from(
            self.owner_security_group, https, "Migrations to Secrets Manager"
        )
        self.endpoints_security_group.connections.allow_from(
            self.webhook_egress_security_group, https, "The webhook deliverer to SQS"
        )
        # S3 is reached through the gateway endpoint at S3's public addresses (a managed prefix list whose id
        # is only known by a lookup, which synthesis does not do offline). The isolated subnets route nowhere
        # else, so 443 to any address reaches S3 and the interface endpoints, nothing more.
        self.functions_security_group.add_egress_rule(
            ec2.Peer.any_ipv4(), https, "S3 through the gateway endpoint (the subnets have no other route)"
        )
        # Customers' endpoints, through the NAT gateway: https on its default port only (the port a security group
        # can name; docs/security.md). The interface endpoints are reached by the same rule.
        self.webhook_egress_security_group.add_egress_rule(
            ec2.Peer.any_ipv4(), https, "Webhook endpoints (https) through the NAT gateway, and AWS APIs"
        )

    def _acknowledge(self, settings: EnvironmentSettings) -> None:
        acknowledge(
            self.cluster,
            "RDS11",
            "5432 is PostgreSQL's port; a non-default port hides nothing from a scanner that is already inside "
            "an isolated VPC, and only the proxy and the migrations' security groups may reach it.",
        )
        if not settings.retain_data:
            acknowledge(
                self.cluster,
                "RDS10",
                f"{settings.name} is disposable: the stack deletes its database; prod turns deletion protection on.",
            )
