"""The stack as each environment synthesizes it, once per session (see tests/infra/synthesis.py)."""

from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from tests.infra.synthesis import Synthesis, stand_in_console, stand_in_package, synthesize_assembly


@pytest.fixture(scope="session")
def package_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return stand_in_package(tmp_path_factory.mktemp("lambda-package"))


@pytest.fixture(scope="session")
def console_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What every synthesis here deploys as the console: the repo's console/ may not exist yet."""
    return stand_in_console(tmp_path_factory.mktemp("console"))


@pytest.fixture(scope="session", params=["dev", "prod"])
def synthesis(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    package_dirs: tuple[Path, Path],
    console_dir: Path,
) -> Synthesis:
    # Synthesis runs the cdk-nag AwsSolutions pack as a validation plugin: any unacknowledged finding raises.
    return synthesize_assembly(request.param, tmp_path_factory.mktemp("cdk"), package_dirs, console_dir)


@pytest.fixture(scope="session")
def synthesized(synthesis: Synthesis) -> tuple[str, Template]:
    return synthesis.env, synthesis.template
