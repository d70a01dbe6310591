"""The deploy-time migrations handler: Create and Update migrate as the owner read from its secret; Delete
touches nothing; a MigrationError fails the deployment with its message. No database: the runner is
replaced by a recorder; Secrets Manager is moto's, in process."""

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import base as parameters_base
from cryptography import x509
from cryptography.x509.oid import NameOID
from moto import mock_aws
from psycopg.conninfo import conninfo_to_dict

import functions.migrate.handler as migrate
from migrations.runner import RDS_CA_BUNDLE, MigrationError, MigrationReport, owner_url
from shared.bootstrap import ConfigurationError
from shared.config import Settings
from shared.local.http_api import LocalLambdaContext
from tests.conftest import load_event

WRITER = "quire-dev-database.cluster-abcdefghijkl.us-east-1.rds.amazonaws.com"
# A generated password may hold any of the characters a URL gives a meaning to.
PASSWORD = "p@ss:/w?rd#%' x"


@dataclass
class RecordingRunner:
    """Stands in for migrations.runner.apply_migrations: records each call, or fails like it."""

    failure: Exception | None = None
    calls: list[tuple[str, int]] = field(default_factory=list)
    deadlines: list[float | None] = field(default_factory=list)

    def __call__(
        self, owner_url: str, *, embedding_dimension: int, backfill_deadline: float | None = None
    ) -> MigrationReport:
        self.calls.append((owner_url, embedding_dimension))
        self.deadlines.append(backfill_deadline)
        if self.failure is not None:
            raise self.failure
        return MigrationReport(applied=["0001_extensions_and_roles"], already_applied=[])


@pytest.fixture
def owner_secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    # powertools keeps one Secrets Manager client per process: each test gets its own, inside moto.
    monkeypatch.setattr(parameters_base, "DEFAULT_PROVIDERS", {})
    with mock_aws():
        secrets = boto3.client("secretsmanager", region_name="us-east-1")
        arn = secrets.create_secret(
            Name="rds!cluster-0123", SecretString=json.dumps({"username": "quire_owner", "password": PASSWORD})
        )["ARN"]
        yield arn


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch, owner_secret: str) -> RecordingRunner:
    recorder = RecordingRunner()
    monkeypatch.setattr(migrate, "apply_migrations", recorder)
    monkeypatch.setattr(
        migrate,
        "settings",
        Settings(
            runtime="aws",
            database_host=WRITER,
            database_name="quire",
            database_owner_secret_arn=owner_secret,
            embedding_dimension=1024,
        ),
    )
    return recorder


def cfn_event(request_type: str) -> dict[str, Any]:
    event = load_event("cfn_migrations_create.json")
    event["RequestType"] = request_type
    if request_type != "Create":
        event["PhysicalResourceId"] = migrate.PHYSICAL_RESOURCE_ID
    return event


def test_create_migrates_as_the_owner_verifying_the_writer_with_the_deployed_dimension(runner: RecordingRunner) -> None:
    # Given the owner's credentials in their secret and the writer's address in the environment
    # When CloudFormation creates the resource
    response = migrate.handler(cfn_event("Create"), LocalLambdaContext(_deadline=time.monotonic() + 900))
    # Then the runner ran once, as the owner, against the writer, with the deployed dimension, over TLS that
    # verifies the writer's certificate and name against the RDS authorities shipped with the package
    [(url, dimension)] = runner.calls
    assert conninfo_to_dict(url) == {
        "user": "quire_owner",
        "password": PASSWORD,
        "host": WRITER,
        "port": "5432",
        "dbname": "quire",
        "sslmode": "verify-full",
        "sslrootcert": str(RDS_CA_BUNDLE),
    }
    assert dimension == 1024
    assert response == {"PhysicalResourceId": "quire-schema", "Data": {"Applied": "1"}}
    # and backfills stop the margin before the function's time is up
    [deadline] = runner.deadlines
    assert deadline is not None
    left = 900 - migrate.BACKFILL_MARGIN_SECONDS
    assert left - 5 < deadline - time.monotonic() <= left


def test_an_update_migrates_again_and_keeps_the_resource(runner: RecordingRunner) -> None:
    response = migrate.handler(cfn_event("Update"), LocalLambdaContext())
    assert len(runner.calls) == 1
    # The same physical id: CloudFormation never sees a replacement, so it never sends a Delete for it.
    assert response["PhysicalResourceId"] == "quire-schema"


def test_the_owner_password_is_read_on_every_run(runner: RecordingRunner, owner_secret: str) -> None:
    # Given a first run, then RDS rotating the owner's password
    migrate.handler(cfn_event("Create"), LocalLambdaContext())
    boto3.client("secretsmanager", region_name="us-east-1").put_secret_value(
        SecretId=owner_secret, SecretString=json.dumps({"username": "quire_owner", "password": "rotated"})
    )
    # When the next deploy migrates
    migrate.handler(cfn_event("Update"), LocalLambdaContext())
    # Then it connects with the new password, not a cached one
    assert conninfo_to_dict(runner.calls[-1][0])["password"] == "rotated"


def test_a_delete_never_touches_the_database(runner: RecordingRunner) -> None:
    runner.failure = AssertionError("a delete must not migrate")
    response = migrate.handler(cfn_event("Delete"), LocalLambdaContext())
    assert runner.calls == []
    assert response == {"PhysicalResourceId": "quire-schema"}


def test_a_migration_error_fails_the_deployment_with_its_message(runner: RecordingRunner) -> None:
    # Given migrations the database disagrees with
    runner.failure = MigrationError("migration 0003_knowledge_chunks was edited after it was applied")
    # When CloudFormation updates the resource, then the error reaches the provider framework unchanged
    # (it answers CloudFormation FAILED with the message as the reason)
    with pytest.raises(MigrationError, match="0003_knowledge_chunks was edited after it was applied"):
        migrate.handler(cfn_event("Update"), LocalLambdaContext())


def test_a_missing_setting_is_named(runner: RecordingRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(migrate, "settings", Settings(runtime="aws", database_name="quire"))
    with pytest.raises(ConfigurationError, match=r"QUIRE_DATABASE_OWNER_SECRET_ARN.*QUIRE_DATABASE_HOST"):
        migrate.handler(cfn_event("Create"), LocalLambdaContext())
    assert runner.calls == []


def test_without_the_certificate_bundle_the_owner_url_is_refused_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "rds-ca-bundle.pem"
    with pytest.raises(MigrationError, match=r"rds-ca-bundle\.pem, which is missing.*RDS certificate bundle"):
        owner_url(host=WRITER, port=5432, dbname="quire", user="quire_owner", password=PASSWORD, ca_bundle=missing)


def test_the_shipped_bundle_holds_only_rds_authorities_including_every_g1_root_of_the_main_regions() -> None:
    certificates = x509.load_pem_x509_certificates(RDS_CA_BUNDLE.read_bytes())
    assert len(certificates) > 100
    organizations = {str(c.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value) for c in certificates}
    common_names = {str(c.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value) for c in certificates}
    assert organizations == {"Amazon Web Services, Inc."}
    assert all(name.startswith("Amazon RDS ") for name in common_names)
    for region in ("us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-2"):
        for algorithm in ("RSA2048", "RSA4096", "ECC384"):
            assert f"Amazon RDS {region} Root CA {algorithm} G1" in common_names
