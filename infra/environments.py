"""Per-environment settings for the CDK app, chosen with `cdk deploy -c env=<name>`."""

from dataclasses import dataclass


@dataclass(frozen=True)
class EnvironmentSettings:
    name: str
    # prod keeps data when the stack is deleted; dev cleans up after itself.
    retain_data: bool
    log_retention_days: int
    cors_allowed_origins: tuple[str, ...]
    noncurrent_version_retention_days: int
    # Aurora Serverless v2 capacity in ACUs. 0 lets an idle dev cluster pause (the first request after a
    # pause waits while it resumes; the workflow's retries cover that).
    aurora_min_capacity: float
    aurora_max_capacity: float
    # powertools' log level for every function.
    log_level: str
    # Where alarms are sent (an SNS e-mail subscription); None: the topic exists, nobody is subscribed.
    alarm_email: str | None
    # How often reconciliation runs (EventBridge Scheduler expression).
    reconcile_schedule: str
    # HTTP API stage throttling, per account and region: steady requests per second and burst.
    api_rate_limit: int
    api_burst_limit: int
    # Database backups, in days.
    backup_retention_days: int
    # A second Aurora instance in another zone to fail over to.
    aurora_failover_reader: bool
    # The Bedrock image model that describes images (Converse); None: images are OCR'd only, and say why.
    vision_model_id: str | None


ENVIRONMENTS: dict[str, EnvironmentSettings] = {
    "dev": EnvironmentSettings(
        name="dev",
        retain_data=False,
        log_retention_days=14,
        cors_allowed_origins=("http://localhost:3000", "http://127.0.0.1:3000"),
        noncurrent_version_retention_days=30,
        aurora_min_capacity=0,
        aurora_max_capacity=2,
        log_level="DEBUG",
        alarm_email=None,
        reconcile_schedule="rate(15 minutes)",
        api_rate_limit=50,
        api_burst_limit=100,
        backup_retention_days=1,
        aurora_failover_reader=False,
        vision_model_id=None,
    ),
    "prod": EnvironmentSettings(
        name="prod",
        retain_data=True,
        log_retention_days=365,
        cors_allowed_origins=("https://app.quire.example.com",),
        noncurrent_version_retention_days=3650,
        aurora_min_capacity=0.5,
        aurora_max_capacity=16,
        log_level="INFO",
        alarm_email="oncall@quire.example.com",
        reconcile_schedule="rate(15 minutes)",
        api_rate_limit=500,
        api_burst_limit=1000,
        backup_retention_days=30,
        aurora_failover_reader=True,
        vision_model_id="amazon.nova-lite-v1:0",
    ),
}


def settings_for(name: str) -> EnvironmentSettings:
    try:
        return ENVIRONMENTS[name]
    except KeyError:
        known = ", ".join(sorted(ENVIRONMENTS))
        raise ValueError(f"unknown environment {name!r}: choose one of {known} with -c env=<name>") from None
