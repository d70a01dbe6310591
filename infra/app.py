"""The CDK app: `python -m infra.app` (what cdk.json runs). `-c env=dev|prod` picks the environment."""

import os

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.environments import settings_for
from infra.stack import QuireStack


def build_app(env_name: str | None = None, *, outdir: str | None = None) -> tuple[cdk.App, QuireStack]:
    app = cdk.App(outdir=outdir) if outdir else cdk.App()
    name = env_name or app.node.try_get_context("env") or "dev"
    settings = settings_for(name)
    stack = QuireStack(
        app,
        f"Quire-{settings.name}",
        settings=settings,
        env=cdk.Environment(account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION")),
    )
    # Synthesis fails on any finding that has no written acknowledgement next to the resource concerned.
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app, stack


if __name__ == "__main__":
    build_app()[0].synth()
