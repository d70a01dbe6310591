"""The stack as each environment synthesizes it, once per session (see tests/infra/synthesis.py)."""

from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from tests.infra.synthesis import stand_in_package, synthesize


@pytest.fixture(scope="session")
def package_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return stand_in_package(tmp_path_factory.mktemp("lambda-package"))


@pytest.fixture(scope="session", params=["dev", "prod"])
def synthesized(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, package_dirs: tuple[Path, Path]
) -> tuple[str, Template]:
    # Synthesis runs the cdk-nag AwsSolutions pack as a validation plugin: any unacknowledged finding raises.
    return request.param, synthesize(request.param, tmp_path_factory.mktemp("cdk"), package_dirs)
