"""The CDK app: `python -m infra.app` (what cdk.json runs). `-c env=dev|prod` picks the environment.

Synthesis stages the Lambda code asset and, when it is missing or stale, builds the dependency layer
(pip, arm64 wheels from the package index; no Docker, no AWS account).
"""

import os
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.constructs.console import CONSOLE_DIR
from infra.environments import EnvironmentSettings, settings_for
from infra.packaging import layer_directory, stage_code
from infra.stack import QuireStack


def build_app(
    env_name: str | None = None,
    *,
    outdir: str | None = None,
    code_dir: Path | None = None,
    layer_dir: Path | None = None,
    console_dir: Path | None = None,
    settings: EnvironmentSettings | None = None,
    bootstrap_rule: bool = True,
) -> tuple[cdk.App, QuireStack]:
    """The app for `env_name`'s settings, or for `settings` themselves (a variant the tests synthesize).
    Without `bootstrap_rule`, the template does not check the account's bootstrap version (a stack deployed
    into moto's CloudFormation, which has no bootstrap stack)."""
    app = cdk.App(outdir=outdir) if outdir else cdk.App()
    name = env_name or app.node.try_get_context("env") or "dev"
    settings = settings or settings_for(name)
    stack = QuireStack(
        app,
        f"Quire-{settings.name}",
        settings=settings,
        code_dir=code_dir or stage_code(),
        layer_dir=layer_dir or layer_directory(),
        console_dir=console_dir or CONSOLE_DIR,
        env=cdk.Environment(account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION")),
        synthesizer=cdk.DefaultStackSynthesizer(generate_bootstrap_version_rule=bootstrap_rule),
    )
    # Synthesis fails on any finding that has no written acknowledgement next to the resource concerned.
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app, stack


if __name__ == "__main__":
    build_app()[0].synth()
