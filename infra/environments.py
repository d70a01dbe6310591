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


ENVIRONMENTS: dict[str, EnvironmentSettings] = {
    "dev": EnvironmentSettings(
        name="dev",
        retain_data=False,
        log_retention_days=14,
        cors_allowed_origins=("http://localhost:3000", "http://127.0.0.1:3000"),
        noncurrent_version_retention_days=30,
    ),
    "prod": EnvironmentSettings(
        name="prod",
        retain_data=True,
        log_retention_days=365,
        cors_allowed_origins=("https://app.quire.example.com",),
        noncurrent_version_retention_days=3650,
    ),
}


def settings_for(name: str) -> EnvironmentSettings:
    try:
        return ENVIRONMENTS[name]
    except KeyError:
        known = ", ".join(sorted(ENVIRONMENTS))
        raise ValueError(f"unknown environment {name!r}: choose one of {known} with -c env=<name>") from None
